"""Time shares: the probe's sampler on real threads in functions compiled under the file
names of the libraries they stand for (no torch, no Ray), the accounting over the attempt
and the last minute, the reader of hostile records, the pipeline's shares and goodput,
and the judgement of where the time goes."""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raytop.diagnose import diagnose
from raytop.diagnose.check import exit_code
from raytop.diagnose.time_sinks import time_sink_findings
from raytop.model import Activity, Cluster, LedgerStatus, Snapshot, TrainRun, Worker
from raytop.model.records import SHARE_KINDS
from raytop.model.thresholds import Thresholds
from raytop.model.time_shares import report_share, shares, summed
from raytop.model.untrusted_activity import MAX_SHARE_S, activity_record
from raytop.pipeline.derive import with_rank_states
from raytop.probe.time_shares import (
    MAX_STEP_S,
    RECENT_S,
    TimeShares,
    classify_share,
    rank_share,
)
from raytop.wire import train_frames
from tests.unit.test_probe_activity import SITE

CONTEXT = "ray/train/v2/_internal/execution/context.py"
CHAIN = """
def {outer}(event):
    return {inner}(event)
"""
LEAF = """
def {name}(event):
    event.wait(10)
"""


def chain(*calls: tuple[str, str]):
    """Library functions, each in its own file, each calling the next; the last waits."""
    inner_fn = None
    for i, (path, name) in enumerate(reversed(calls)):
        namespace: dict = {}
        if i == 0:
            source = LEAF.format(name=name)
        else:
            namespace["_inner"] = inner_fn
            source = CHAIN.format(outer=name, inner="_inner")
        exec(compile(source, SITE + path, "exec"), namespace)
        inner_fn = namespace[name]
    return inner_fn


@contextmanager
def thread_in(*calls: tuple[str, str]) -> Iterator[object]:
    """The innermost frame of a thread blocked at the end of ``calls``, called from here."""
    event, started = threading.Event(), threading.Event()
    function = chain(*calls)

    def train_loop():
        started.set()
        function(event)

    thread = threading.Thread(target=train_loop, daemon=True)
    thread.start()
    started.wait(5)
    try:
        yield sys._current_frames()[thread.ident]
    finally:
        event.set()
        thread.join(5)


REPORT = ("ray/train/v2/api/train_fn_utils.py", "report")
PARTS = ("execution/context.py", {"_sync_checkpoint_dir_name_across_ranks": "report_barrier",
                                  "_upload_checkpoint": "report_upload",
                                  "_wait_then_report": "report_wait"})  # fmt: skip


@pytest.mark.parametrize("calls, kind", [
    ([("torch/distributed/distributed_c10d.py", "all_reduce")], "collective"),
    ([("torch/utils/data/dataloader.py", "__next__")], "data_loader"),
    ([("torch/autograd/__init__.py", "backward")], "compute"),
    ([("botocore/endpoint.py", "make_request")], "io"),
    ([REPORT, (CONTEXT, "_sync_checkpoint_dir_name_across_ranks"), ("threading.py", "wait")],
     "report_barrier"),
    ([REPORT, (CONTEXT, "_upload_checkpoint"), ("pyarrow/fs.py", "copy_files")],
     "report_upload"),
    ([REPORT, (CONTEXT, "_wait_then_report"), ("queue.py", "put")], "report_wait"),
    ([REPORT, ("ray/train/v2/_internal/execution/other.py", "_wait_then_report")],
     "report_other"),  # the right name in another file is not Train's report part
    ([REPORT], "report_other"),
    ([("mylib_is_not_a_library.py", "step")], "compute"),
])  # fmt: skip
def test_each_thread_counts_to_the_share_of_the_work_it_is_in(calls, kind):
    with thread_in(*calls) as frame:
        assert classify_share(frame, *PARTS)[0] == kind


def test_until_its_first_step_or_report_a_rank_is_starting_up():
    calls = [("torch/distributed/distributed_c10d.py", "broadcast")]  # DDP's first sync
    with thread_in(*calls) as frame:
        assert rank_share(frame, *PARTS, started=False) == ("startup", False)
        assert rank_share(frame, *PARTS, started=True) == ("collective", True)


def test_on_a_ray_whose_report_frames_are_unknown_report_is_one_share():
    calls = [REPORT, (CONTEXT, "_wait_then_report"), ("queue.py", "put")]
    with thread_in(*calls) as frame:
        assert classify_share(frame, "", {}) == ("report_other", True)


def test_the_installed_ray_has_trains_report_parts_where_the_probe_looks():
    path, parts = train_frames.report_parts()
    import ray.train.v2._internal.execution.context as context

    assert context.__file__.endswith(path)
    assert set(parts.values()) == {"report_barrier", "report_upload", "report_wait"}
    assert all(hasattr(context.TrainContext, name) for name in parts)


def test_the_controller_poll_is_read_as_the_controller_reads_it(monkeypatch):
    monkeypatch.delenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", raising=False)
    assert train_frames.controller_poll_s() == 2.0
    monkeypatch.setenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
    assert train_frames.controller_poll_s() == 0.5
    for bad in ("soon", "0", "-1"):
        monkeypatch.setenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", bad)
        assert train_frames.controller_poll_s() is None


def test_each_gap_counts_to_the_kind_seen_at_its_end_over_the_attempt_and_the_last_minute():
    clock = TimeShares()
    clock.add("compute", 100.0)  # starts the clock
    clock.add("compute", 100.5)
    clock.add("report_wait", 101.0)
    assert clock.record() == ({"compute": 0.5, "report_wait": 0.5},) * 2 + (0.0,)
    clock.add("data_loader", 200.0)  # a paused process: one step counts MAX_STEP_S at most
    total, recent, _ = clock.record()
    assert total == {"compute": 0.5, "report_wait": 0.5, "data_loader": MAX_STEP_S}
    assert recent == {"data_loader": MAX_STEP_S}  # the rest is older than RECENT_S
    for i in range(1, int(RECENT_S) * 2 + 1):
        clock.add("collective", 200.0 + i * 0.5)
    total, recent, _ = clock.record()
    assert recent == {"collective": RECENT_S}
    assert total["collective"] == RECENT_S


def test_the_waiting_fraction_is_the_time_spent_waiting_over_the_recent_window():
    clock = TimeShares()
    assert clock.waiting() == (0.0, 0)
    clock.add("compute", 100.0)
    clock.add("compute", 100.75)  # a backward pass: compute, yet waiting under DDP
    clock.add("compute", 101.0, waiting=True)
    clock.add("report_wait", 102.0, waiting=True)
    assert clock.waiting() == (0.625, 2)  # 1.25 of 2 s
    for i in range(1, int(RECENT_S) * 10 + 1):  # a minute of work pushes it all out
        clock.add("compute", 102.0 + i * 0.1)
    assert clock.waiting()[0] == 0.0


def test_two_identical_ranks_of_a_half_second_loop_wait_alike_whatever_their_phase():
    """Sleep 0.3 s, report 0.2 s: sampled once a second, at a fixed phase, one rank read
    as never waiting and the other as always (a "straggler" of 42 % work against 12 %).
    Counted by time ten times a second, both read 40 % waiting, whatever the phase."""
    for phase in (0.0, 0.03, 0.05, 0.07, 0.099):
        clock = TimeShares()
        for i in range(600):
            now = i * 0.1 + phase
            waiting = (now % 0.5) >= 0.3
            clock.add("report_wait" if waiting else "compute", now, waiting)
        assert abs(clock.waiting()[0] - 0.4) < 0.05, phase


def test_shares_need_two_seconds_and_sum_to_one():
    assert shares({"compute": 1.0}) is None
    got = shares({"compute": 3.0, "report_wait": 1.0})
    assert set(got) == set(SHARE_KINDS) and math.isclose(sum(got.values()), 1.0, abs_tol=0.001)
    assert (got["compute"], report_share(got)) == (0.75, 0.25)
    assert summed([{"compute": 1.0}, {"compute": 2.0, "io": 1.0}])["compute"] == 3.0


GOOD = {"kind": "user", "where": "step", "since": 1.0, "sampled_at": 2.0, "samples": 3,
        "waiting": 0.0}  # fmt: skip


@pytest.mark.parametrize("bad", [
    {"compute": -1.0}, {"compute": float("nan")}, {"compute": 1e12}, {"gpu": 1.0},
    {"compute": "1"}, ["compute"], "compute", {"compute": True},
])  # fmt: skip
def test_hostile_seconds_drop_the_shares_never_the_activity(bad):
    got = activity_record({**GOOD, "time_s": bad, "recent_time_s": {"io": 2.0}})
    assert got is not None and "time_s" not in got and got["recent_time_s"] == {"io": 2.0}


def ranked(rank: int, time_s: dict[str, float], recent: dict[str, float] | None = None):
    activity = Activity(kind="user", where="step", since=1.0, sampled_at=2.0, time_s=time_s,
                        recent_time_s=recent if recent is not None else time_s)  # fmt: skip
    return Worker(rank=rank, reports_entered=3, reports_exited=3, heartbeat_at=2.5,
                  last_enter_at=2.0, activity=activity)  # fmt: skip


def run_of(*workers: Worker, poll: float | None = 2.0) -> TrainRun:
    return with_rank_states(TrainRun("r1", "exp-t1", "a1", len(workers), workers=workers,
                                     controller_poll_s=poll), Thresholds(), 3.0)  # fmt: skip


def test_the_run_sums_its_ranks_seconds_and_goodput_is_its_compute_share():
    run = run_of(ranked(0, {"compute": 30.0, "report_wait": 10.0}),
                 ranked(1, {"compute": 10.0, "report_barrier": 30.0}, recent={}))  # fmt: skip
    assert run.workers[0].time_shares["compute"] == 0.75
    assert run.workers[1].recent_time_shares is None
    assert run.time_shares["compute"] == 0.5 and run.goodput == 0.5
    assert run.time_sampled_s == 80.0
    assert run.recent_time_shares["report_wait"] == 0.25


def test_a_run_mostly_waiting_for_the_controller_is_told_why_and_stays_healthy():
    run = run_of(
        ranked(0, {"compute": 12.0, "report_wait": 28.0}),
        ranked(1, {"compute": 12.0, "report_wait": 24.0, "report_barrier": 4.0}),
    )
    (finding,) = time_sink_findings(run)
    assert finding.kind == "time_sink" and finding.severity == "info"
    assert finding.message == (
        "70% of the ranks' time is in train.report: each result waits for Train's controller "
        "to take the one before (it polls every 2.0 s) — report less often"
    )
    assert finding.run_id == "r1" and finding.attempt_id == "a1"
    snapshot = Snapshot(taken_at=1000.0, cluster=Cluster(address="a", connected=True),
                        runs=(run,), ledger=LedgerStatus(available=True))  # fmt: skip
    found = diagnose(snapshot)
    assert "time_sink" in {f.kind for f in found} and exit_code(found) == 0


@pytest.mark.parametrize("seconds, words", [
    ({"compute": 10.0, "data_loader": 30.0}, "data loading takes 75% of the ranks' time"),
    ({"compute": 10.0, "collective": 30.0}, "collectives take 75% of the ranks' time"),
    ({"compute": 10.0, "io": 30.0}, "I/O outside train.report takes 75%"),
    ({"compute": 10.0, "report_upload": 30.0}, "its checkpoint uploads take that time"),
    ({"compute": 10.0, "report_barrier": 30.0}, "wait at its barrier for the last rank"),
])  # fmt: skip
def test_the_kind_that_takes_most_of_the_time_is_named_with_its_cause(seconds, words):
    (finding,) = time_sink_findings(run_of(ranked(0, seconds), ranked(1, seconds)))
    assert words in finding.message, finding.message


def test_no_finding_for_compute_a_split_or_too_short_a_sample():
    assert time_sink_findings(run_of(ranked(0, {"compute": 30.0, "report_wait": 10.0}))) == []
    split = {"compute": 15.0, "data_loader": 13.0, "collective": 12.0}
    assert time_sink_findings(run_of(ranked(0, split))) == []
    assert time_sink_findings(run_of(ranked(0, {"compute": 1.0, "report_wait": 9.0}))) == []


def test_the_wait_for_the_controller_is_told_without_a_poll_it_does_not_know():
    (finding,) = time_sink_findings(run_of(ranked(0, {"compute": 5.0, "report_wait": 35.0}),
                                           poll=None))  # fmt: skip
    assert "(it polls" not in finding.message and "report less often" in finding.message


def test_the_text_face_names_each_live_runs_goodput_and_its_largest_waits():
    from raytop.faces.text import status_text

    run = run_of(ranked(0, {"compute": 12.0, "report_wait": 28.0}))
    snapshot = Snapshot(taken_at=1000.0, cluster=Cluster(address="a", connected=True),
                        runs=(run,), ledger=LedgerStatus(available=True))  # fmt: skip
    assert "run exp-t1 attempt 1: goodput 30% · controller wait 70%" in status_text(snapshot)
    over = replace(run, workers=tuple(replace(w, done=True) for w in run.workers))
    assert "goodput" not in status_text(replace(snapshot, runs=(over,)))


def test_the_start_up_is_counted_apart_from_the_shares():
    clock = TimeShares()
    clock.add("startup", 10.0)
    clock.add("startup", 10.8)
    clock.add("compute", 11.0)  # a gap counts to the kind seen at its end
    assert clock.record() == ({"compute": 0.2}, {"compute": 0.2}, 0.8)
    good = activity_record({**GOOD, "startup_s": 2.5})
    assert good is not None and good["startup_s"] == 2.5
    for bad in (-1.0, float("inf"), "2.5", None):
        got = activity_record({**GOOD, "startup_s": bad})
        assert got is not None and "startup_s" not in got


def _by_definition(value) -> dict | None:
    """The check as it reads: known kinds, each a finite number (not a bool) in range."""
    from raytop.model.untrusted import is_finite_number

    if not isinstance(value, dict) or not set(value) <= set(SHARE_KINDS):
        return None
    if not all(is_finite_number(v) and 0.0 <= v <= MAX_SHARE_S for v in value.values()):
        return None
    return {k: float(v) for k, v in value.items()}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(
    st.sampled_from([*SHARE_KINDS, "other"]),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**400),
              st.booleans(), st.text(max_size=2), st.none()),
    max_size=4,
))  # fmt: skip
def test_the_seconds_check_is_its_definition(value) -> None:
    from raytop.model.untrusted_activity import _seconds_by_kind

    assert _seconds_by_kind(value) == _by_definition(value)
