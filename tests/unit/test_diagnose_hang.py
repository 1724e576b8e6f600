"""Hang triage over hand-made runs (pure, no Ray): the learned threshold, each class with
the ranks it names, the straggler, and no verdict without evidence."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from raytop.diagnose import diagnose
from raytop.diagnose.check import (
    BARRIER_STALL,
    CHECKPOINT_UPLOAD_STUCK,
    COLLECTIVE_HANG,
    COMPUTE_HANG,
    CONTROLLER_STUCK,
    DATA_LOADER_HANG,
    HEALTHY,
    exit_code,
)
from raytop.diagnose.hang import hang_findings, stall_limit
from raytop.diagnose.ledger import run_findings
from raytop.model import (
    Activity,
    Attempt,
    CheckpointRecord,
    Cluster,
    LedgerStatus,
    Snapshot,
    TrainRun,
    Worker,
)
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states

NOW = 10_000.0
T = Thresholds()  # learned


def rank(r: int, reports: int, *, last: float, inside: bool = False, interval: float = 2.0,
         kind: str | None = None, where: str = "", since: float | None = None,
         samples: int = 0, waiting: float = 0.0) -> Worker:  # fmt: skip
    """Rank ``r``: ``reports`` reports every ``interval`` s, the last entered at ``last``
    (and left at once unless ``inside``), sampled in ``kind`` at ``where`` since ``since``."""
    entries = tuple(last - interval * i for i in range(min(reports, 32)))[::-1]
    exits = tuple(e + 0.01 for e in entries[:-1]) + ((None,) if inside else (last + 0.01,))
    activity = None
    if kind is not None:
        activity = Activity(kind, where or kind, since if since is not None else last, NOW,
                            samples, waiting)  # fmt: skip
    return Worker(
        rank=r, reports_entered=reports, reports_exited=reports - (1 if inside else 0),
        last_enter_at=last, last_exit_at=None if inside else last + 0.01,
        heartbeat_at=NOW - 0.5, report_times=entries,
        report_exits=exits, activity=activity,
    )  # fmt: skip


def run(*workers: Worker, checkpoints=()) -> TrainRun:
    """An attempt as the pipeline hands it on: its rank facts derived."""
    return with_rank_states(TrainRun("r1", "exp-t1", "a1", len(workers), workers=workers,
                                     checkpoints=tuple(checkpoints)), T, NOW)  # fmt: skip


def kinds(findings) -> list[str]:
    return [f.kind for f in findings]


def test_the_threshold_is_learned_from_the_run_and_fixed_when_given():
    fast = run(rank(0, 10, last=NOW, interval=2.0), rank(1, 10, last=NOW, interval=2.0))
    assert stall_limit(fast, T).seconds == 8.0  # 3 × 2 s is under the 8 s floor
    slow = run(rank(0, 10, last=NOW, interval=600.0), rank(1, 10, last=NOW, interval=600.0))
    assert stall_limit(slow, T).seconds == 1800.0  # a 10-minute epoch is never a 60 s stall
    assert stall_limit(slow, Thresholds.given(60.0)).seconds == 60.0  # --stall-after fixes it
    young = run(rank(0, 1, last=NOW), rank(1, 1, last=NOW))
    assert stall_limit(young, T).seconds == T.stall_after_s  # too early to learn


def test_a_rank_that_sleeps_before_its_all_reduce_is_named_holding_the_collective():
    sleeper = rank(
        1,
        20,
        last=NOW - 14,
        kind="user",
        where="train_loop (loop.py:30) time.sleep(600)",
        since=NOW - 13,
    )
    peers = [rank(r, 20, last=NOW - 14, kind="collective", since=NOW - 12,
                  where="torch.distributed.all_reduce from train_loop (loop.py:31)")
             for r in (0, 2, 3)]  # fmt: skip
    (hang,) = hang_findings(run(peers[0], sleeper, *peers[1:]), T, NOW)
    assert hang.kind == "collective_hang" and exit_code([hang]) == COLLECTIVE_HANG
    assert hang.evidence["holding_ranks"] == [1] and hang.evidence["waiting_ranks"] == [0, 2, 3]
    assert "rank 1 has been in train_loop (loop.py:30) time.sleep(600) for 13s" in hang.message
    assert "ranks 0, 2, 3 have been in torch.distributed.all_reduce" in hang.message
    assert hang.message.endswith("rank 1 has not joined it")
    # DDP: the waiting ranks are in backward, where DDP all-reduces the gradients
    ddp = [rank(r, 20, last=NOW - 14, kind="backward", since=NOW - 12) for r in (0, 2)]
    (hang,) = hang_findings(run(ddp[0], sleeper, ddp[1]), T, NOW)
    assert hang.kind == "collective_hang" and hang.evidence["holding_ranks"] == [1]


def test_no_verdict_before_the_threshold_or_without_a_sample():
    early = [rank(r, 20, last=NOW - 7, kind="collective") for r in (0, 1)]
    assert hang_findings(run(*early), T, NOW) == []  # 7 s < the 8 s learned threshold
    unsampled = [rank(r, 20, last=NOW - 30) for r in (0, 1)]
    assert hang_findings(run(*unsampled), T, NOW) == []  # where? unknown: no claim


def test_a_rank_blocked_in_its_data_loader_is_named():
    loader = rank(1, 20, last=NOW - 15, kind="data_loader",
                  where="DataLoader.__next__ from train_loop (loop.py:20)")  # fmt: skip
    waiting = rank(0, 20, last=NOW - 15, kind="collective")
    (hang,) = hang_findings(run(waiting, loader), T, NOW)
    assert hang.kind == "data_loader_hang" and exit_code([hang]) == DATA_LOADER_HANG
    assert hang.evidence["holding_ranks"] == [1] and "rank 1 is stuck in the data loader" in (
        hang.message
    )
    # With no collective in the step, the others wait in the report barrier instead: the
    # barrier shows it, the data loader is named as the cause.
    behind = rank(1, 19, last=NOW - 17, kind="data_loader", where="DataLoader.__next__")
    ahead = rank(0, 20, last=NOW - 15, inside=True, kind="report")
    (stall,) = run_findings(run(ahead, behind), T, NOW)
    assert stall.kind == "data_loader_hang" and "rank 1 is 1 report behind, in DataLoader" in (
        stall.message
    )
    user = rank(1, 19, last=NOW - 17, kind="user", where="step (loop.py:9)")
    (stall,) = run_findings(run(ahead, user), T, NOW)
    assert stall.kind == "barrier_stall" and exit_code([stall]) == BARRIER_STALL


def test_every_rank_inside_the_same_report_is_a_stuck_controller():
    inside = [rank(r, 12, last=NOW - 20 + r, inside=True, kind="report") for r in (0, 1, 2)]
    (stuck,) = hang_findings(run(*inside), T, NOW)
    assert stuck.kind == "controller_stuck" and exit_code([stuck]) == CONTROLLER_STUCK
    assert "every rank (3) arrived at report 12 and none has returned, for 18s" in stuck.message
    # not while an upload is in flight: that is the upload's class
    uploading = CheckpointRecord(
        "checkpoint_x",
        "uploading",
        bytes=1000,
        uploading_since=NOW - 5,
        rank_uploads={0: (NOW - 5, None)},
    )
    assert kinds(hang_findings(run(*inside, checkpoints=[uploading]), T, NOW)) == []


def test_an_upload_far_past_its_usual_pace_is_stuck_and_a_big_one_is_not():
    done = [CheckpointRecord(f"c{i}", "committed", bytes=1_000_000, upload_s=0.1,
                             throughput_bps=10e6) for i in range(3)]  # fmt: skip
    ranks = [rank(r, 12, last=NOW - 20, inside=r == 0) for r in (0, 1)]
    stuck = CheckpointRecord(
        "c3",
        "uploading",
        bytes=1_000_000,
        uploading_since=NOW - 25,
        mode="SYNC",
        rank_uploads={0: (NOW - 25, None)},
    )
    (finding,) = hang_findings(run(*ranks, checkpoints=[*done, stuck]), T, NOW)
    assert finding.kind == "checkpoint_upload_stuck"
    assert exit_code([finding]) == CHECKPOINT_UPLOAD_STUCK
    assert "on rank 0" in finding.message and "usual 10.00 MB/s would take 0.1s" in (
        finding.message
    )
    huge = CheckpointRecord(
        "c3",
        "uploading",
        bytes=10_000_000_000,
        uploading_since=NOW - 25,
        rank_uploads={0: (NOW - 25, None)},
    )  # 1000 s at 10 MB/s
    assert hang_findings(run(*ranks, checkpoints=[*done, huge]), T, NOW) == []


def test_every_rank_in_its_own_code_with_no_report_is_a_compute_hang():
    loop = [rank(r, 20, last=NOW - 30, kind="user", where="step (loop.py:9)") for r in (0, 1)]
    (hang,) = hang_findings(run(*loop), T, NOW)
    assert hang.kind == "compute_hang" and exit_code([hang]) == COMPUTE_HANG


def test_a_rank_three_times_slower_is_a_straggler_not_a_hang():
    slow = rank(2, 30, last=NOW - 1, kind="user", samples=40, waiting=0.02)
    peers = [rank(r, 30, last=NOW - 1, kind="collective", samples=40, waiting=0.66)
             for r in (0, 1, 3)]  # fmt: skip
    (found,) = hang_findings(run(peers[0], peers[1], slow, peers[2]), T, NOW)
    assert found.kind == "straggler" and found.severity == "warning"
    assert exit_code([found]) == HEALTHY
    assert found.evidence["rank"] == 2 and found.evidence["score"] > 2.5
    # jitter is not a straggler
    even = [rank(r, 30, last=NOW - 1, kind="user", samples=40, waiting=w)
            for r, w in enumerate((0.1, 0.2, 0.15, 0.05))]  # fmt: skip
    assert hang_findings(run(*even), T, NOW) == []
    # too few samples: no score
    young = [rank(r, 3, last=NOW - 1, kind="user", samples=5, waiting=w)
             for r, w in enumerate((0.0, 0.9))]  # fmt: skip
    assert hang_findings(run(*young), T, NOW) == []


def test_ranks_ahead_of_a_controller_that_stopped_taking_reports_are_a_stuck_controller():
    """The ranks go on into Train's queue for a report or two after the controller stops:
    the clock starts when every rank had sent the first report it never took."""
    ranks = [rank(r, 7, last=NOW - 7, inside=True) for r in (0, 1)]  # report 5 at NOW - 11

    def with_taken(taken):
        attempt = Attempt(1, "running", 0.0, attempt_id="a1", reports_taken=taken)
        return dataclasses.replace(run(*ranks), attempts=(attempt,))

    (stuck,) = hang_findings(with_taken(4), T, NOW)
    assert stuck.kind == "controller_stuck" and stuck.evidence["reports_taken"] == 4
    assert "the controller has taken 4 report(s); every rank has made 7, for 11s" in (stuck.message)
    assert hang_findings(with_taken(6), T, NOW) == []  # report 7 only 7 s ago


def test_a_ledger_gone_quiet_freezes_the_wait_at_its_last_publish():
    """The ledger last published 2.5 s after both ranks entered report 7, the controller
    having taken 5 (report 6 entered 4.5 s before that publish; two in Train's queue is
    ordinary), and has been silent since. Its counts are frozen: the wait is judged to its
    last publish, never grown against ``now`` into a stuck controller. A ledger that goes
    on publishing the same counts is evidence, and the wait grows."""
    given = Thresholds.given(stall_after_s=5)
    ranks = [rank(r, 7, last=NOW - 7, inside=True) for r in (0, 1)]
    attempt = Attempt(1, "running", 0.0, attempt_id="a1", reports_taken=5)
    stalled = dataclasses.replace(run(*ranks), attempts=(attempt,))

    def judged(published_at: float) -> list[str]:
        ledger = LedgerStatus(available=True, started_at=0.0, published_at=published_at)
        return kinds(diagnose(Snapshot(NOW, Cluster("h:1", True), runs=(stalled,),
                                       ledger=ledger), given))  # fmt: skip

    assert "controller_stuck" not in judged(NOW - 4.5)  # report 6 entered at NOW - 9
    assert "controller_stuck" in judged(NOW - 0.5)


def test_a_run_that_failed_because_the_controller_could_not_load_a_metric_is_named():
    from ray.exceptions import RaySystemError
    from ray.train.v2._internal.exceptions import WorkerHealthCheckFailedError
    from ray.train.v2.api.exceptions import WorkerGroupError

    from raytop.diagnose.retries import undeliverable_findings
    from raytop.wire.train_hooks import failure_details

    unloadable = WorkerHealthCheckFailedError(
        "A worker health check failed.", RaySystemError(RuntimeError("cannot load"))
    )
    assert failure_details(WorkerGroupError("x", {1: unloadable})).undeliverable
    died = WorkerHealthCheckFailedError("A worker health check failed.", RuntimeError("gone"))
    assert not failure_details(WorkerGroupError("x", {1: died})).undeliverable
    failed = Attempt(
        1,
        "errored",
        0.0,
        attempt_id="a1",
        reports_taken=4,
        undeliverable=True,
        error_class="WorkerHealthCheckFailedError",
        error="RuntimeError: no",
    )
    (finding,) = undeliverable_findings(dataclasses.replace(run(), attempts=(failed,)))
    assert finding.kind == "report_undeliverable" and exit_code([finding]) == CONTROLLER_STUCK
    assert "could not load what the ranks sent it after taking 4 report(s)" in finding.message


def test_a_long_first_epoch_is_no_hang_before_the_run_has_a_rhythm():
    """One report, then a 5-minute epoch: no interval is known yet, so no claim (a fixed
    --stall-after still applies)."""
    first = [rank(r, 1, last=NOW - 120, kind="user", where="epoch (loop.py:9)") for r in (0, 1)]
    assert hang_findings(run(*first), T, NOW) == []
    (fixed,) = hang_findings(run(*first), Thresholds.given(60.0), NOW)
    assert fixed.kind == "compute_hang"


def test_a_ranks_peers_median_is_the_median_of_every_other_rank():
    """``median_without`` (O(1) per rank) agrees with the median of the others' list."""
    import random
    import statistics

    from raytop.diagnose.hang import median_without

    rng = random.Random(3)
    for size in (2, 3, 4, 5, 8, 33):
        for _ in range(50):
            values = [rng.choice([0.1, 0.25, 0.5, rng.random()]) for _ in range(size)]
            ordered = sorted(values)
            for i, value in enumerate(values):
                others = values[:i] + values[i + 1 :]
                index = ordered.index(value)
                assert median_without(ordered, index) == statistics.median(others)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.01, 0.1, 0.15, 0.3, 0.5, 0.66, 0.9, 1.0]),
                min_size=2, max_size=12))  # fmt: skip
def test_stragglers_are_the_ranks_over_twice_their_peers_median(waits):
    """The stragglers (``hang.stragglers``, which passes a rank under twice the lowest of
    its peers' medians without its own) are the ranks a rank-by-rank reading names: a
    working share of at least 0.2 and at least STRAGGLER_SCORE times the median of every
    other rank's (any share over 0.2 against a median of 0)."""
    import statistics

    from raytop.diagnose.hang import STRAGGLER_SCORE, stragglers

    ranks = [rank(r, 30, last=NOW - 1, kind="user", samples=40, waiting=w)
             for r, w in enumerate(waits)]  # fmt: skip
    named = {f.evidence["rank"] for f in stragglers(run(*ranks), T, NOW)}
    works = [1.0 - w for w in waits]
    expected = set()
    for r, share in enumerate(works):
        median = statistics.median(works[:r] + works[r + 1 :])
        score = share / median if median > 0 else (float("inf") if share > 0.2 else 0.0)
        if score >= STRAGGLER_SCORE and share >= 0.2:
            expected.add(r)
    assert named == expected
