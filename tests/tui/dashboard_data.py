"""Snapshots of one trial's run in each phase, for the overview's dashboard tests: its
worker group being placed, starting (1 of 2 ranks up), and a 64-rank run with laggards."""

from __future__ import annotations

from dataclasses import replace

from raytop.model import Bundle, PlacementGroup, Snapshot, TrainRun, Worker
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states

TRIAL = "7d2a1_00000"
RUN_NAME = f"torch_sweep-{TRIAL}"


def _group(placed: bool, why: str | None = None) -> PlacementGroup:
    node = "a3f9c2d1e0b4" if placed else None
    return PlacementGroup(
        pg_id="pg-train-0", strategy="PACK", state="CREATED" if placed else "PENDING",
        scheduling_state="FINISHED" if placed else "NO_RESOURCES",
        bundles=(Bundle(0, {"CPU": 1.0}, node), Bundle(1, {"CPU": 1.0}, node)),
        owner_kind="train_run", owner=RUN_NAME, experiment="torch_sweep", trial_id=TRIAL,
        why_pending=why,
    )  # fmt: skip


def _fresh_trial(snapshot: Snapshot) -> Snapshot:
    """The sweep with its first trial just started: no result yet."""
    experiment = snapshot.experiments[0]
    first = replace(
        experiment.trials[0], iterations=0, metrics={}, elapsed_s=None, metric_history=()
    )
    trials = (first, *experiment.trials[1:])
    return replace(snapshot, experiments=(replace(experiment, trials=trials),))


def scheduling(sweep: Snapshot) -> Snapshot:
    """The trial runs; its worker group's placement group waits for CPUs."""
    why = "bundle 1 needs {CPU: 1}; every node's CPUs are taken"
    return replace(_fresh_trial(sweep), placement_groups=(_group(False, why),))


def starting(sweep: Snapshot) -> Snapshot:
    """The worker group is placed; rank 0 is up, rank 1 not yet."""
    base = _fresh_trial(sweep)
    run = TrainRun(
        run_id="6c1d", run_name=RUN_NAME, attempt_id="a1", world_size=2, trial_id=TRIAL,
        workers=(Worker(rank=0, node_id="a3f9c2d1e0b4", pid=5101,
                        heartbeat_at=base.taken_at - 1),),
        placement_group_id="pg-train-0",
    )  # fmt: skip
    run = with_rank_states(run, Thresholds(), base.taken_at)
    experiment = replace(base.experiments[0], runs=(run,))
    return replace(base, experiments=(experiment,), placement_groups=(_group(True),))


def many_ranks(sweep: Snapshot, world: int = 64) -> Snapshot:
    """A 64-rank run at report 41, two ranks a report behind."""
    now = sweep.taken_at
    workers = []
    for rank in range(world):
        n = 40 if rank in (17, 45) else 41
        workers.append(Worker(
            rank=rank, reports_entered=n, reports_exited=n if n == 40 else 40,
            last_enter_at=now - (90 if n == 40 else 5), heartbeat_at=now - 1,
            usual_interval_s=6.0,
        ))  # fmt: skip
    run = TrainRun(
        run_id="7e2f", run_name=RUN_NAME, attempt_id="a1", world_size=world, trial_id=TRIAL,
        workers=tuple(workers), placement_group_id="pg-train-0",
    )  # fmt: skip
    run = with_rank_states(run, Thresholds(), now)
    experiment = replace(sweep.experiments[0], runs=(run,))
    return replace(sweep, experiments=(experiment,))
