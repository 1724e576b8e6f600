"""The cluster's jobs: a job table row and Ray's record of a submitted job, checked as
untrusted input (``model.untrusted_jobs``), read together (``sources.jobs``), and what
raytop says of a job from them (``model.jobs``: how it ended, its label, its driver)."""

from __future__ import annotations

import json

import pytest

from raytop.model import untrusted
from raytop.model.jobs import Job, driver_of, short_entrypoint
from raytop.model.untrusted_jobs import (
    MAX_ENTRYPOINT,
    MAX_JOBS,
    job_table_row,
    submission_record,
)
from raytop.sources.jobs import JobsReader
from raytop.wire.jobs import JOB_INFO_NAMESPACE, submission_key
from tests.fakes import FakeKv


def row(job_id: str, start: int, *, end: int = 0, dead: bool = False, sid: str | None = None,
        entrypoint: str = "python train.py", namespace: str = "anon") -> dict:  # fmt: skip
    """A job table row as ``wire.jobs.job_row`` copies it (times in ms)."""
    return {"job_id": job_id, "dead": dead, "driver_pid": 4242, "driver_ip": "10.0.0.5",
            "start_ms": start, "end_ms": end, "entrypoint": entrypoint,
            "submission_id": sid, "namespace": namespace}  # fmt: skip


def record(status: str, message: str | None = None, **more) -> bytes:
    """Ray's record of a submitted job, as ``JobInfo.to_json`` writes it."""
    return json.dumps({"status": status, "entrypoint": "python -m sleepy --forever",
                       "message": message, "start_time": 1000, "end_time": None,
                       "driver_exit_code": None, **more}).encode()  # fmt: skip


def kv_with(rows: list[dict], records: dict[str, bytes]) -> FakeKv:
    kv = FakeKv({}, namespaces={JOB_INFO_NAMESPACE: {submission_key(s): r
                                                      for s, r in records.items()}})  # fmt: skip
    kv.jobs = rows
    return kv


def test_how_a_job_ended_reads_from_rays_record_first():
    stopped = Job("01000000", submission_id="raysubmit_a", status="STOPPED", dead=False)
    assert (stopped.ended, stopped.how_ended) == (True, "stopped")  # before its driver is gone
    message = "\nJob entrypoint command failed with exit code 1\nTraceback …\nValueError: boom\n"
    failed = Job("02000000", submission_id="raysubmit_b", status="FAILED", message=message)
    assert (
        failed.how_ended
        == "failed: Job entrypoint command failed with exit code 1 … ValueError: boom"
    )
    died = Job("03000000", submission_id="raysubmit_c", status="RUNNING", dead=True)
    assert died.how_ended == "driver died"
    script = Job("04000000", entrypoint="python train.py", dead=True)
    assert (script.how_ended, script.label) == ("driver exited", "driver script: python train.py")
    command = "python -m ray.tune.examples.async_hyperband_example --smoke-test"
    running = Job("05000000", submission_id="raysubmit_d", status="RUNNING", entrypoint=command)
    assert (running.ended, running.how_ended) == (False, None)
    assert running.label.startswith("Ray job raysubmit_d: python -m ray.tune.examples")
    assert running.label.endswith("…") and len(short_entrypoint(running.entrypoint)) == 60
    # The program by its name; the whole command stays in entrypoint.
    assert short_entrypoint("/opt/venv/bin/python  train.py --lr 1") == "python train.py --lr 1"
    assert short_entrypoint("./run.sh") == "run.sh" and short_entrypoint("/") == "/"


def test_the_driver_of_a_time_is_the_latest_job_alive_then():
    early = Job("01000000", start_time=100.0, end_time=200.0, dead=True)
    long = Job("02000000", start_time=150.0)
    later = Job("03000000", start_time=160.0, end_time=170.0, dead=True)
    assert driver_of((early, long, later), 165.0).job_id == "03000000"
    assert driver_of((early, long, later), 180.0).job_id == "02000000"
    assert driver_of((early, long, later), 120.0).job_id == "01000000"
    assert driver_of((early, later), 300.0) is None
    assert driver_of((), 165.0) is None
    # Submitted together (connected 2 s apart, Tune started 4 s later): either could be
    # its driver, so none is named.
    first, second = Job("04000000", start_time=400.0), Job("05000000", start_time=402.0)
    assert driver_of((long, first, second), 406.0) is None
    assert driver_of((long, first), 406.0).job_id == "04000000"


def test_a_table_row_is_checked_and_its_long_command_cut():
    checked = job_table_row(row("01000000", 1_700_000_000_000, entrypoint="x" * 10_000))
    assert len(checked["entrypoint"]) == MAX_ENTRYPOINT and checked["entrypoint"].endswith("…")
    assert (checked["start_time"], checked["end_time"]) == (1_700_000_000.0, None)
    for bad in ({"job_id": ""}, {"driver_pid": "12"}, {"dead": "yes"}, {"start_ms": -1}):
        with pytest.raises(untrusted.Invalid):
            job_table_row({**row("01000000", 1), **bad})


def test_a_record_of_another_shape_is_refused_naming_the_field():
    with pytest.raises(untrusted.Invalid, match="status"):
        submission_record({"status": "EXPLODED"})
    with pytest.raises(untrusted.Invalid, match="message"):
        submission_record({"status": "FAILED", "message": ["a"]})
    ok = submission_record(json.loads(record("FAILED", "m" * 5000, driver_exit_code=-15)))
    assert ok["exit_code"] == -15 and len(ok["message"]) == 2000


def test_the_reader_joins_records_leaves_rays_own_jobs_out_and_says_what_is_bad():
    rows = [row("01000000", 1000), row("02000000", 3000, sid="raysubmit_ok"),
            row("03000000", 2000, sid="raysubmit_bad"),
            row("04000000", 4000, namespace="_ray_internal_dashboard")]  # fmt: skip
    kv = kv_with(rows, {"raysubmit_ok": record("STOPPED"), "raysubmit_bad": b'{"status": 7}'})
    jobs = JobsReader(kv)
    found = jobs.read()
    assert [j.job_id for j in found] == ["02000000", "03000000", "01000000"]  # newest first
    stopped, bad, script = found
    assert (stopped.how_ended, stopped.entrypoint) == ("stopped", "python -m sleepy --forever")
    assert bad.status is None and not bad.ended  # its record left out, the job kept
    (warning,) = jobs.warnings
    assert "raysubmit_bad" in warning and "_ray_internal_job_info_raysubmit_bad" in warning
    assert script.label == "driver script: python train.py"


def test_an_ended_jobs_record_is_not_asked_again():
    kv = kv_with([row("01000000", 1000, sid="raysubmit_a")], {"raysubmit_a": record("SUCCEEDED")})
    asked: list[list[str]] = []
    real = kv.multi_get_from
    kv.multi_get_from = lambda ns, keys: asked.append(keys) or real(ns, keys)
    reader = JobsReader(kv)
    assert reader.read()[0].how_ended == "succeeded"
    assert reader.read()[0].how_ended == "succeeded"
    assert asked == [[submission_key("raysubmit_a")], []]


def test_a_table_over_the_cap_keeps_the_newest():
    kv = kv_with([row(f"{i:08x}", 1000 + i) for i in range(MAX_JOBS + 5)], {})
    reader = JobsReader(kv)
    found = reader.read()
    assert len(found) == MAX_JOBS and found[0].job_id == f"{MAX_JOBS + 4:08x}"
    assert any("showing the newest" in w for w in reader.warnings)


def test_a_submitted_job_that_never_connected_is_a_job_from_its_record_alone():
    """``ray job submit -- python sleepy.py``: a script that never calls ``ray.init`` has
    no row in the job table, only Ray's record; stopped, it says so."""
    kv = kv_with([row("01000000", 1000)], {"raysubmit_sleepy": record("STOPPED")})
    found = JobsReader(kv).read()
    sleepy = next(j for j in found if j.submission_id == "raysubmit_sleepy")
    assert (sleepy.job_id, sleepy.how_ended, sleepy.start_time) == ("", "stopped", 1.0)
    assert sleepy.label == "Ray job raysubmit_sleepy: python -m sleepy --forever"
