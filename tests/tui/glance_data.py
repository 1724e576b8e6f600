"""A sweep as a user sees it mid-run, for the overview's at-a-glance tests: 5 of its 8
trials created (Tune creates them lazily), params that vary (lr, hidden) and params every
trial shares (batch_size, epochs, optimizer, seed), a best trial, and the first trial's
4-rank Train run training, with its checkpoints and its placement group."""

from __future__ import annotations

from dataclasses import replace

from raytop.model import Bundle, CheckpointRecord, PlacementGroup, Snapshot, TrainRun, Worker
from raytop.model.snapshot import best_trial
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states

TRIAL = "7d2a1_00000"
RUN_NAME = f"torch_sweep-{TRIAL}"
NODE = "a3f9c2d1e0b4f7a8"
CONSTANTS = {"batch_size": 32, "epochs": 8, "optimizer": "adamw", "seed": 7}
TOTAL = 8


def _worker(rank: int, now: float) -> Worker:
    """A rank at report 12, reporting every ~8 s, heard a moment ago."""
    return Worker(
        rank=rank, reports_entered=12, reports_exited=12, local_rank=rank, node_id=NODE,
        node_rank=0, usual_interval_s=8.0, last_enter_at=now - 3.0, last_exit_at=now - 2.9,
        heartbeat_at=now - 0.5, pid=5100 + rank,
        report_times=tuple(now - 3.0 - 8.0 * i for i in range(11, -1, -1)),
    )  # fmt: skip


def _checkpoints(now: float) -> tuple[CheckpointRecord, ...]:
    """Oldest first: reports 8 and 10 committed, report 12's uploading."""
    return (
        CheckpointRecord("checkpoint_000008", "committed", report_index=8, ranks=(0,),
                         files=1, bytes=48 * 2**20, mode="SYNC", upload_s=1.2),
        CheckpointRecord("checkpoint_000010", "committed", report_index=10, ranks=(0,),
                         files=1, bytes=48 * 2**20, mode="SYNC", upload_s=1.1),
        CheckpointRecord("checkpoint_000012", "uploading", report_index=12, ranks=(0,),
                         files=1, bytes=48 * 2**20, mode="SYNC", upload_s=1.0,
                         uploading_since=now - 1.0),
    )  # fmt: skip


def _group() -> PlacementGroup:
    return PlacementGroup(
        pg_id="pg-train-0", strategy="PACK", state="CREATED", scheduling_state="FINISHED",
        bundles=tuple(Bundle(i, {"CPU": 1.0}, NODE) for i in range(4)),
        owner_kind="train_run", owner=RUN_NAME, experiment="torch_sweep", trial_id=TRIAL,
    )  # fmt: skip


def glance(sweep: Snapshot) -> Snapshot:
    """``sweep`` (from tests/tui/conftest.py) as described above."""
    now = sweep.taken_at
    experiment = sweep.experiments[0]
    trials = tuple(replace(t, config={**CONSTANTS, **t.config}) for t in experiment.trials)
    run = TrainRun(
        run_id="8a3c", run_name=RUN_NAME, attempt_id="a1", world_size=4, trial_id=TRIAL,
        workers=tuple(_worker(r, now) for r in range(4)), placement_group_id="pg-train-0",
        checkpoints=_checkpoints(now),
    )  # fmt: skip
    experiment = replace(
        experiment,
        trials=trials,
        trials_total=TOTAL,
        runs=(with_rank_states(run, Thresholds(), now),),
        best_trial=best_trial(trials, experiment.metric, experiment.mode),
    )
    return replace(sweep, experiments=(experiment,), placement_groups=(_group(),))
