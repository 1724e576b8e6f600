"""What a finding is about, typed (issue 23): every kind ``diagnose`` makes carries its
run, attempt, trial and ranks as fields, the same for every kind (never one evidence key
per kind), and ``status --json`` adds them beside the keys it always had."""

from __future__ import annotations

import json
from dataclasses import replace

from raytop.diagnose import diagnose, hang
from raytop.diagnose.checkpoints import checkpoint_findings
from raytop.diagnose.findings import trial_error_findings
from raytop.diagnose.hang import hang_findings, stall_limit
from raytop.diagnose.ledger import run_findings
from raytop.diagnose.placement import placement_findings
from raytop.diagnose.ray_hang import ray_hang_findings
from raytop.diagnose.retries import budget_exhausted_findings, progress_backwards_findings
from raytop.diagnose.teardown import teardown_findings
from raytop.model import (
    Attempt,
    Bundle,
    CheckpointRecord,
    Cluster,
    Experiment,
    ExperimentStatus,
    LedgerStatus,
    Node,
    PlacementGroup,
    RetryBudget,
    Snapshot,
    TrainRun,
    Trial,
)
from raytop.model.teardown import ExperimentFacts, RunFacts
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from tests.unit.test_diagnose_hang import NOW, T, rank
from tests.unit.test_ray_hang import hung_run


def run(*workers, checkpoints=(), **extra) -> TrainRun:
    """Run r1, attempt a1 (its second), of trial t1, its rank facts derived."""
    return with_rank_states(TrainRun(
        "r1", "exp-t1", "a1", len(workers), attempt_index=2, trial_id="t1",
        workers=workers, checkpoints=tuple(checkpoints), **extra), T, NOW)  # fmt: skip


def refs(finding) -> tuple:
    return finding.run_id, finding.attempt_id, finding.trial_id


ATTEMPT = ("r1", "a1", "t1")  # about attempt a1's live state
RUN = ("r1", None, "t1")  # about the run as a whole: every attempt shows it


def test_a_barrier_stall_names_its_missing_and_waiting_ranks_and_the_wait():
    ahead = [rank(r, 20, last=NOW - 15, inside=True, kind="report") for r in (0, 2)]
    behind = rank(1, 19, last=NOW - 17, kind="user", where="step (loop.py:9)")
    (stall,) = run_findings(run(ahead[0], behind, ahead[1]), T, NOW)
    assert stall.kind == "barrier_stall" and refs(stall) == ATTEMPT
    assert (stall.ranks, stall.waiting_ranks) == ((1,), (0, 2))
    assert stall.report_index == 20 and stall.waited_s == stall.evidence["waited_s"]
    # The evidence keeps its keys for status --json readers.
    assert stall.evidence["missing_ranks"] == [1] and stall.evidence["waiting_ranks"] == [0, 2]


def test_a_mispaired_report_names_the_ranks_that_finished_early():
    ahead = rank(0, 20, last=NOW - 15, inside=True, kind="report")
    early = replace(rank(1, 19, last=NOW - 17), done=True)
    stall, mispaired = run_findings(run(ahead, early), T, NOW)
    assert mispaired.kind == "report_mispaired" and refs(mispaired) == ATTEMPT
    assert (mispaired.ranks, mispaired.waiting_ranks) == ((1,), (0,))
    assert stall.ranks == (1,)


def test_dead_silent_and_lost_ranks_each_name_their_rank():
    dead = run(rank(0, 9, last=NOW - 1), replace(rank(1, 9, last=NOW - 1), heartbeat_at=NOW - 40))
    (finding,) = run_findings(dead, T, NOW)
    assert (finding.kind, finding.ranks, refs(finding)) == ("rank_dead", (1,), ATTEMPT)
    quiet = [replace(rank(r, 9, last=NOW - 200), usual_interval_s=2.0) for r in (0, 1)]
    assert [(f.kind, f.ranks) for f in run_findings(run(*quiet), T, NOW)] == [
        ("rank_silent", (0,)), ("rank_silent", (1,))
    ]  # fmt: skip
    on_dead_node = run(rank(0, 9, last=NOW - 1), replace(rank(1, 9, last=NOW - 1), node_id="n2"))
    (lost,) = run_findings(on_dead_node, T, NOW, frozenset({"n2"}))
    assert (lost.kind, lost.ranks, refs(lost)) == ("rank_dead", (1,), ATTEMPT)


def test_each_hang_class_names_the_ranks_holding_the_run_up():
    sleeper = rank(1, 20, last=NOW - 14, kind="user", where="time.sleep", since=NOW - 13)
    peers = [rank(r, 20, last=NOW - 14, kind="collective", since=NOW - 12) for r in (0, 2)]
    (collective,) = hang_findings(run(peers[0], sleeper, peers[1]), T, NOW)
    assert collective.kind == "collective_hang" and refs(collective) == ATTEMPT
    assert (collective.ranks, collective.waiting_ranks) == ((1,), (0, 2))
    assert collective.report_index is None and collective.waited_s is None
    loader = rank(1, 20, last=NOW - 15, kind="data_loader")
    (hung,) = hang_findings(run(rank(0, 20, last=NOW - 15, kind="collective"), loader), T, NOW)
    assert (hung.kind, hung.ranks, hung.waiting_ranks) == ("data_loader_hang", (1,), (0,))
    loop = [rank(r, 20, last=NOW - 30, kind="user") for r in (0, 1)]
    (compute,) = hang_findings(run(*loop), T, NOW)
    assert (compute.kind, compute.ranks, compute.waiting_ranks) == ("compute_hang", (0, 1), ())


def test_a_stuck_controller_names_no_rank_and_says_how_long_it_waited():
    inside = [rank(r, 12, last=NOW - 20 + r, inside=True, kind="report") for r in (0, 1, 2)]
    (stuck,) = hang_findings(run(*inside), T, NOW)
    assert stuck.kind == "controller_stuck" and refs(stuck) == ATTEMPT
    assert stuck.ranks == () and stuck.waited_s == stuck.evidence["waited_s"]


def test_a_stuck_upload_names_the_ranks_still_uploading():
    done = [CheckpointRecord(f"c{i}", "committed", bytes=1_000_000, upload_s=0.1,
                             throughput_bps=10e6) for i in range(3)]  # fmt: skip
    uploads = {0: (NOW - 25, None), 1: (NOW - 25, NOW - 24)}  # rank 1's ended
    stuck = CheckpointRecord("c3", "uploading", bytes=1_000_000, uploading_since=NOW - 25,
                             rank_uploads=uploads)  # fmt: skip
    ranks = [rank(r, 12, last=NOW - 20, inside=r == 0) for r in (0, 1)]
    (finding,) = hang_findings(run(*ranks, checkpoints=[*done, stuck]), T, NOW)
    assert finding.kind == "checkpoint_upload_stuck" and refs(finding) == ATTEMPT
    assert finding.ranks == (0,)


def test_a_straggler_names_its_rank():
    slow = rank(2, 30, last=NOW - 1, kind="user", samples=40, waiting=0.02)
    peers = [rank(r, 30, last=NOW - 1, kind="collective", samples=40, waiting=0.66)
             for r in (0, 1, 3)]  # fmt: skip
    (found,) = hang_findings(run(peers[0], peers[1], slow, peers[2]), T, NOW)
    assert (found.kind, found.ranks, refs(found)) == ("straggler", (2,), ATTEMPT)


def test_checkpoint_findings_are_about_the_run_and_name_the_ranks_that_wrote():
    collided = CheckpointRecord("c0", "committed", collisions={"model.pt": (0, 1)},
                                replicated={"cfg.json": (1, 2)})  # fmt: skip
    failed = CheckpointRecord("c1", "failed", error="boom")
    found = {f.kind: f for f in checkpoint_findings(run(checkpoints=[collided, failed]), 60.0)}
    assert {k: (f.ranks, refs(f)) for k, f in found.items()} == {
        "checkpoint_collision": ((0, 1), RUN),
        "checkpoint_replicated": ((1, 2), RUN),
        "checkpoint_failed": ((), RUN),
    }


def test_checkpoint_partial_names_the_ranks_whose_shards_are_missing():
    written = [CheckpointRecord(f"c{i}", "committed", ranks=(0, 1, 2)) for i in range(2)]
    short = CheckpointRecord("c2", "committed", ranks=(0, 1))
    (partial,) = [f for f in checkpoint_findings(run(checkpoints=[*written, short]), 60.0)
                  if f.kind == "checkpoint_partial"]  # fmt: skip
    assert (partial.ranks, refs(partial)) == ((2,), RUN)


def test_findings_about_the_attempts_history_are_about_the_run():
    went_back = Attempt(1, "errored", 0.0, attempt_id="a0", restored={"epoch": 5},
                        first_report={"epoch": 0})  # fmt: skip
    attempts = (went_back, Attempt(2, "running", 1.0, attempt_id="a1"))
    budget = {"worker": RetryBudget("max_failures", 1, 1, 0)}
    history = run(attempts=attempts, retry_budget=budget)
    (backwards,) = progress_backwards_findings(history)
    (exhausted,) = budget_exhausted_findings(history)
    assert refs(backwards) == refs(exhausted) == RUN
    assert backwards.ranks == exhausted.ranks == ()


def test_rays_verdict_is_about_the_attempt_and_names_no_world_rank():
    (found,) = ray_hang_findings(hung_run(last_report_at=1_000.0), [], T, over=False)
    assert (found.run_id, found.attempt_id, found.ranks) == ("r1", "a", ())


def test_trial_placement_and_teardown_findings_name_their_trial():
    trial = Trial("t7", "ERROR", num_failures=1, error="ValueError")
    experiment = Experiment("e", "/e", ExperimentStatus.RUNNING, trials=(trial,))
    (errored,) = trial_error_findings(experiment)
    assert (errored.trial_id, errored.run_id, errored.ranks) == ("t7", None, ())
    group = PlacementGroup("pg1", "PACK", "PENDING", "INFEASIBLE", (Bundle(0, {"GPU": 1.0}),),
                           owner_kind="trial", owner="t7", trial_id="t7",
                           why_pending="no GPU")  # fmt: skip
    node = Node("n1", "h", True, True, {"CPU": 4.0})
    (infeasible,) = placement_findings((group,), (node,), 300.0)
    assert infeasible.trial_id == "t7"
    facts = ExperimentFacts(name="e", driver_alive=False, state_read="ok",
                            state_on_storage=True, trials=1,
                            runs=(RunFacts("t7", latest="c3", latest_present=False),))  # fmt: skip
    (unsafe,) = teardown_findings(facts)
    assert unsafe.trial_id == "t7" == unsafe.evidence["trial_id"]


def test_the_references_travel_through_status_json_and_back():
    ahead = rank(0, 20, last=NOW - 15, inside=True, kind="report")
    behind = rank(1, 19, last=NOW - 17, kind="user")
    snap = Snapshot(NOW, Cluster("h:1", True), runs=(run(ahead, behind),),
                    ledger=LedgerStatus(available=True))  # fmt: skip
    snap = replace(snap, findings=diagnose(snap, T))
    data = json.loads(json.dumps(snap.to_json()))
    (stall,) = data["findings"]
    assert {k: stall[k] for k in ("run_id", "attempt_id", "trial_id", "ranks", "waiting_ranks",
                                  "report_index")} == {
        "run_id": "r1", "attempt_id": "a1", "trial_id": "t1", "ranks": [1],
        "waiting_ranks": [0], "report_index": 20,
    }  # fmt: skip
    assert stall["evidence"]["missing_ranks"] == [1]  # add-only: the old keys stay
    assert Snapshot.from_json(data).findings == snap.findings
    # An older raytop's finding (no reference fields) reads as one about nothing typed.
    old = {k: v for k, v in stall.items() if k not in ("run_id", "attempt_id", "trial_id",
                                                       "ranks", "waiting_ranks",
                                                       "report_index", "waited_s")}  # fmt: skip
    (read,) = Snapshot.from_json({**data, "findings": [old]}).findings
    assert (read.run_id, read.ranks, read.waiting_ranks) == (None, (), ())


def test_diagnose_keeps_no_state_and_each_run_has_its_own_threshold():
    """Two runs of different paces in one snapshot: each judged with its own limit,
    whatever was diagnosed before (nothing is remembered between calls)."""
    assert not [name for name in vars(hang) if name.startswith("_last")]
    fast = [rank(r, 20, last=NOW - 20, interval=2.0, kind="user") for r in (0, 1)]
    slow = [rank(r, 20, last=NOW - 20, interval=600.0, kind="user") for r in (0, 1)]
    fast_run = run(*fast)
    slow_run = replace(run(*slow), run_id="r2", attempt_id="b1", trial_id="t2")
    assert stall_limit(fast_run, T).seconds == 8.0
    assert stall_limit(slow_run, T).seconds == 1800.0
    snap = Snapshot(NOW, Cluster("h:1", True), runs=(fast_run, slow_run),
                    ledger=LedgerStatus(available=True))  # fmt: skip
    for _ in range(2):
        found = diagnose(snap, T)
        assert [(f.kind, f.run_id) for f in found] == [("compute_hang", "r1")]
    assert diagnose(replace(snap, runs=(slow_run,)), T) == ()
    fixed = Thresholds.given(10.0)
    assert {f.run_id for f in diagnose(snap, fixed)} == {"r1", "r2"}
