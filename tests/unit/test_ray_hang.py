"""Ray 2.60's NCCL hang detector beside raytop's own hang classes (issue 22): the files it
uploads on a confirmed hang, shaped as Ray 2.60 writes them (``ncclras -f json`` polls in
NCCL 2.28-2.30's schema, the text report, each rank's stacks), read as untrusted input
from a run's folder; the finding says which verdict came first. GPU/NCCL-only in life:
here the files are made by hand, as Ray's ``dump_ras_query_history`` and
``dump_workers_stack_traces`` would name them."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from raytop.diagnose import diagnose
from raytop.diagnose.check import COLLECTIVE_HANG, exit_code
from raytop.diagnose.ray_hang import ray_hang_findings
from raytop.model import Snapshot, TrainRun, Worker
from raytop.model.nccl_ras import CommLag, RayHangVerdict, Unreadable, parse_poll
from raytop.model.thresholds import Thresholds
from raytop.sources.hang_detector import HangDetectorReader
from raytop.sources.storage import Storages

RUNNING = {"abort_flag": False, "finalize_called": False, "destroy_flag": False,
           "init_state": 0}  # fmt: skip


def poll(counts: dict[int, int], status=RUNNING, comm="7f3a9c", op="AllReduce") -> bytes:
    ranks = [{"rank": r, "host": "gpu-node-1", "pid": 100 + r, "cuda_dev": r,
              "status": status, "collective_counts": {op: n, "Broadcast": 3}}
             for r, n in counts.items()]  # fmt: skip
    data = {"nccl_version": "2.29.1", "timestamp": "2026-12-05 10:00:00", "communicators_count": 1,
            "communicators": [{"hash": comm, "secondary_hash": "x", "size": len(ranks),
                               "ranks_count": len(ranks), "missing_ranks_count": 0,
                               "ranks": ranks, "missing_ranks": []}]}  # fmt: skip
    return json.dumps(data, indent=2).encode()


def test_a_poll_names_the_rank_behind_by_rays_rule() -> None:
    comms, lagging = parse_poll(poll({0: 42, 1: 41, 2: 42, 3: 42}))
    assert comms == 1
    assert lagging == (CommLag("7f3a9c", "AllReduce", (1,), 42, 41, 4),)
    assert parse_poll(poll({0: 42, 1: 42})) == (1, ())  # in step: no hang
    aborted = {**RUNNING, "abort_flag": True}
    assert parse_poll(poll({0: 42, 1: 41}, status=aborted)) == (1, ())  # not RUNNING


def test_ncclras_2_28_9s_missing_comma_is_repaired_as_ray_does() -> None:
    raw = (
        poll({0: 5, 1: 4}).decode().replace('"missing_ranks_count": 0,', '"missing_ranks_count": 0')
    )
    assert parse_poll(raw.encode())[1][0].behind == (1,)


@pytest.mark.parametrize("raw", [
    b"not json", b"[]", b'{"communicators": {}}', b'{"communicators": [{"ranks": 3}]}',
    b'{"communicators": [{"ranks": [{"rank": "0", "status": {"init_state": 0},'
    b' "collective_counts": {}}]}]}',
    b'{"communicators": [{"ranks": [{"rank": 0, "status": {"init_state": 0},'
    b' "collective_counts": {"AllReduce": "many"}}]}]}',
])  # fmt: skip
def test_a_poll_of_another_shape_is_refused_in_one_line(raw) -> None:
    with pytest.raises(Unreadable):
        parse_poll(raw)


def test_a_huge_poll_is_refused_unread() -> None:
    with pytest.raises(Unreadable, match="over"):
        parse_poll(b" " * (5 << 20))


def hang_files(run: Path, counts: dict[int, int] | None, stacks=(0, 1)) -> None:
    ras, traces = run / "hang_detector" / "nccl_ras", run / "hang_detector" / "stack_traces"
    ras.mkdir(parents=True)
    traces.mkdir(parents=True)
    if counts is not None:
        (ras / "ncclras_2026-12-05-09-59-45.json").write_bytes(poll({r: 1 for r in counts}))
        (ras / "ncclras_2026-12-05-10-00-00.json").write_bytes(poll(counts))
    (ras / "ncclras_report.txt").write_text("RAS report\n")
    for rank in stacks:
        (traces / f"rank_{rank}.log").write_text(f"# Thread 1 of rank {rank}\n")


def test_the_reader_takes_the_newest_poll_and_the_stacks(tmp_path) -> None:
    run = tmp_path / "run"
    hang_files(run, {0: 42, 1: 41})
    os.utime(run / "hang_detector" / "stack_traces" / "rank_1.log", (1000.0, 1000.0))
    verdict, warning = HangDetectorReader(Storages()).read(str(run))
    assert warning is None
    assert verdict.lagging[0].behind == (1,) and verdict.communicators == 1
    assert verdict.stack_ranks == (0, 1)
    assert verdict.folder == str(run / "hang_detector")
    assert verdict.confirmed_at is not None and verdict.confirmed_at > 1000.0  # the newest


def test_a_bad_poll_is_a_warning_and_the_verdict_stands_on_the_files(tmp_path) -> None:
    run = tmp_path / "run"
    hang_files(run, None)
    (run / "hang_detector" / "nccl_ras" / "ncclras_x.json").write_bytes(b"\x1b]2;x\x07{")
    verdict, warning = HangDetectorReader(Storages()).read(str(run))
    assert verdict is not None and verdict.lagging == ()
    assert warning.startswith("hang_detector/nccl_ras/ncclras_x.json: not JSON")
    assert HangDetectorReader(Storages()).read(str(tmp_path / "nothing")) == (None, None)


def test_a_fifo_in_place_of_a_poll_is_not_read(tmp_path) -> None:
    run = tmp_path / "run"
    hang_files(run, None)
    os.mkfifo(run / "hang_detector" / "nccl_ras" / "ncclras_z.json")
    verdict, warning = HangDetectorReader(Storages()).read(str(run))  # returns: never blocks
    assert verdict is not None and warning


# -- the finding: Ray's verdict beside raytop's --------------------------------------------

T = Thresholds(learn_stall=False, stall_after_s=60.0)
VERDICT = RayHangVerdict(confirmed_at=2_000.0, folder="/r/run/hang_detector", communicators=1,
                         lagging=(CommLag("7f3a9c", "AllReduce", (1,), 42, 41, 2),),
                         stack_ranks=(0, 1))  # fmt: skip


def hung_run(last_report_at: float, verdict=VERDICT) -> TrainRun:
    at = last_report_at
    workers = tuple(Worker(rank=r, reports_entered=5, reports_exited=5, last_enter_at=at,
                           last_exit_at=at, state="training") for r in (0, 1))  # fmt: skip
    return TrainRun(run_id="r1", run_name="gpt", attempt_id="a", world_size=2, workers=workers,
                    ray_hang=verdict)  # fmt: skip


def test_rays_verdict_is_an_error_and_says_who_came_first() -> None:
    from raytop.model import Finding, Severity

    run = hung_run(last_report_at=1_000.0)  # raytop's threshold crossed at 1,060
    own = [Finding("collective_hang", Severity.ERROR, "run gpt attempt 1", "…")]
    (found,) = ray_hang_findings(run, own, T, over=False)
    assert found.kind == "ray_nccl_hang" and found.severity == Severity.ERROR
    assert found.message == (
        "Ray's NCCL hang detector confirmed a hang: communicator 7f3a9c: rank 1 behind on "
        "AllReduce (41 calls, others 42); raytop names it collective_hang; raytop first, by "
        "15m40s (its evidence in /r/run/hang_detector)"
    )
    (alone,) = ray_hang_findings(run, [], T, over=False)
    assert "raytop has not named a hang on this run" in alone.message
    assert exit_code([alone]) == COLLECTIVE_HANG


def test_a_verdict_the_run_moved_past_is_information() -> None:
    (moved,) = ray_hang_findings(hung_run(last_report_at=2_500.0), [], T, over=False)
    assert moved.kind == "ray_nccl_hang_past" and "the run has reported since" in moved.message
    (ended,) = ray_hang_findings(hung_run(last_report_at=1_000.0), [], T, over=True)
    assert ended.kind == "ray_nccl_hang_past" and "the attempt is over" in ended.message
    assert exit_code([moved, ended]) == 0
    assert ray_hang_findings(replace(hung_run(1.0), ray_hang=None), [], T, over=False) == []


def test_the_verdict_travels_through_status_json_and_back() -> None:
    from raytop.model import Cluster

    snapshot = Snapshot(taken_at=2_100.0, cluster=Cluster("127.0.0.1:6379", True),
                        runs=(hung_run(1_000.0),))  # fmt: skip
    again = Snapshot.from_json(json.loads(json.dumps(snapshot.to_json())))
    assert again.runs[0].ray_hang == VERDICT
    assert diagnose(again) == diagnose(snapshot)
