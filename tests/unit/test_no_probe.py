"""Why a Train run has no probe report (issue 22): the judgement (``diagnose.no_probe``),
the reading of the trainer's ``RAY_TRAIN_CALLBACKS`` (``sources.trainer_env``), the
pipeline that ties runs to their trainer's process and their job's filed problem
(``pipeline.no_probe``), and the probe's own check that Ray calls its hooks."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

import psutil
import pytest

from raytop.diagnose.no_probe import NO_PROBE_BOUND_S, why_no_probe
from raytop.model import Node, TrainRun, Worker
from raytop.model.jobs import Job
from raytop.model.no_probe import (
    CALLBACKS_UNSET,
    HOOKS_UNFIT,
    SILENT,
    UNKNOWN,
    WAITING,
    TrainerEnv,
    job_needs_probe,
    names_probe,
)
from raytop.pipeline.no_probe import NoProbeReasons
from raytop.probe import report_probe
from raytop.sources.trainer_env import TrainerEnvReader, callbacks_in
from raytop.wire.kv_keys import PROBE_PROBLEM_PREFIX
from raytop.wire.train_hooks import hooks_ray_lacks

DRIVER = "job 03000000's driver (pid 42)"
LATE = NO_PROBE_BOUND_S + 1


def judged(env: TrainerEnv, **kw):
    return why_no_probe(env, **{"ranks": 2, "waited_s": LATE, **kw})


def test_each_reason_needs_its_evidence() -> None:
    assert judged(TrainerEnv(DRIVER, read=True)).kind == CALLBACKS_UNSET
    assert judged(TrainerEnv(DRIVER, read=True, callbacks="  ")).kind == CALLBACKS_UNSET
    other = judged(TrainerEnv(DRIVER, read=True, callbacks="my.Callback"))
    assert other.kind == CALLBACKS_UNSET
    assert other.line == (
        f"RAY_TRAIN_CALLBACKS in {DRIVER} names my.Callback, not raytop.probe.ReportProbe"
    )
    named = TrainerEnv(DRIVER, read=True, callbacks="my.Callback, raytop.probe.ReportProbe")
    assert judged(named).kind == SILENT
    assert judged(TrainerEnv(DRIVER)).kind == UNKNOWN  # another node: not claimed either way
    unset = judged(TrainerEnv(DRIVER, read=True))
    assert unset.line == (
        f"RAY_TRAIN_CALLBACKS is not set in {DRIVER}: set "
        "RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe there"
    )


def test_nothing_is_claimed_before_the_bound_and_a_filed_problem_wins() -> None:
    early = why_no_probe(TrainerEnv(DRIVER, read=True), ranks=2, waited_s=3.0)
    assert early.kind == WAITING and "seen 3s" in early.line
    problem = why_no_probe(TrainerEnv(DRIVER, read=True), ranks=2, waited_s=0.0,
                           problem="Ray's Train callbacks have no on_report",
                           problem_ray="2.61.0")  # fmt: skip
    assert problem.kind == HOOKS_UNFIT
    assert problem.line == ("raytop's probe is in this run but cannot count on Ray 2.61.0: "
                            "Ray's Train callbacks have no on_report")  # fmt: skip


def test_a_long_value_of_another_process_is_capped() -> None:
    shown = judged(TrainerEnv(DRIVER, read=True, callbacks="x" * 5000))
    assert len(shown.line) < 400


def test_names_probe_splits_as_train_does() -> None:
    assert names_probe(" raytop.probe.ReportProbe ")
    assert names_probe("a.B,raytop.probe.ReportProbe")
    assert not names_probe("raytop.probe.ReportProbeX")
    assert not names_probe(None)


def test_a_job_that_could_not_import_the_probe_says_so() -> None:
    message = ("Job entrypoint command failed with exit code 1, last available logs:\n"
               "ValueError: Failed to import callback from 'raytop.probe.ReportProbe'")  # fmt: skip
    job = Job(job_id="03000000", submission_id="raysubmit_1", status="FAILED", message=message)
    assert job.how_ended == job_needs_probe(message)
    assert "raytop is not installed where Train imports it" in job.how_ended
    assert job_needs_probe("ValueError: Failed to import callback from 'my.Callback'") is None


# -- reading another process's environment ------------------------------------------------


def test_callbacks_in_an_environment_block() -> None:
    block = b"A=1\0RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe\0B=2\0"
    assert callbacks_in(block) == "raytop.probe.ReportProbe"
    assert callbacks_in(b"A=1\0XRAY_TRAIN_CALLBACKS=y\0") is None
    assert callbacks_in(b"RAY_TRAIN_CALLBACKS=\0") == ""


@pytest.fixture
def child():
    """A real process started with RAY_TRAIN_CALLBACKS in its environment."""
    env = {**os.environ, "RAY_TRAIN_CALLBACKS": "raytop.probe.ReportProbe"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    yield proc
    proc.kill()
    proc.wait()


def test_the_start_up_environment_of_a_local_process_is_read(child) -> None:
    reader = TrainerEnvReader()
    seen = reader.read(DRIVER, child.pid, local=True, started_by=time.time())
    assert seen == TrainerEnv(DRIVER, read=True, callbacks="raytop.probe.ReportProbe")
    plain = reader.read(DRIVER, os.getpid(), local=True)
    assert plain.read and plain.callbacks == os.environ.get("RAY_TRAIN_CALLBACKS")


def test_a_process_that_is_not_the_named_one_is_not_read(child) -> None:
    reader = TrainerEnvReader()
    assert not reader.read(DRIVER, child.pid, local=False).read  # another node's pid
    created = psutil.Process(child.pid).create_time()
    # the cluster says its driver started an hour before this process: the pid was reused
    assert not reader.read(DRIVER, child.pid, local=True, started_by=created - 3600).read
    assert not reader.read(DRIVER, None, local=True).read
    assert not reader.read(DRIVER, 2**22 + 12345, local=True).read  # no such process


# -- the pipeline: a run, its trainer's process, its job's problem -----------------------


def no_probe_run(run_id: str = "actor-c1", job_id: str = "03000000") -> TrainRun:
    workers = (Worker(rank=0, pid=11), Worker(rank=1, pid=12))
    return TrainRun(run_id=run_id, run_name="r", attempt_id="c1", world_size=2,
                    workers=workers, instrumented=False, job_id=job_id)  # fmt: skip


class StubEnv:
    def __init__(self, callbacks: dict[int, str | None]) -> None:
        self.callbacks, self.asked = callbacks, []

    def read(self, who, pid, local, started_by=None) -> TrainerEnv:
        self.asked.append((who, pid, local, started_by))
        if not local or pid not in self.callbacks:
            return TrainerEnv(who)
        return TrainerEnv(who, read=True, callbacks=self.callbacks[pid])


NODE = Node(node_id="n1", address="127.0.0.1", alive=True, is_head=True)
CONTROLLER = {"class_name": "TrainController", "job_id": "03000000", "pid": 30,
              "node_id": "n1", "address": "127.0.0.1:7001", "owner": "127.0.0.1:6000"}  # fmt: skip


def test_a_drivers_run_is_judged_by_the_drivers_environment() -> None:
    env = StubEnv({42: None})
    reasons = NoProbeReasons(env, lambda address: address == "127.0.0.1", None)
    job = Job(job_id="03000000", driver_pid=42, driver_ip="127.0.0.1", start_time=100.0)
    (run,) = reasons.judge((no_probe_run(),), {"c1": CONTROLLER}, (job,), (NODE,), now=500.0)
    assert run.no_probe.kind == CALLBACKS_UNSET  # already silent at raytop's first look
    assert env.asked == [(DRIVER, 42, True, 100.0)]


def test_a_run_first_seen_later_waits_for_the_bound() -> None:
    reasons = NoProbeReasons(StubEnv({42: None}), lambda a: True, None)
    job = Job(job_id="03000000", driver_pid=42, driver_ip="127.0.0.1", start_time=100.0)
    reasons.judge((), {}, (job,), (NODE,), now=500.0)  # raytop's first look: no run yet
    (run,) = reasons.judge((no_probe_run(),), {"c1": CONTROLLER}, (job,), (NODE,), now=501.0)
    assert run.no_probe.kind == WAITING
    (run,) = reasons.judge((no_probe_run(),), {"c1": CONTROLLER}, (job,), (NODE,),
                           now=501.0 + LATE)  # fmt: skip
    assert run.no_probe.kind == CALLBACKS_UNSET


def test_a_tune_trials_run_is_judged_by_the_actor_that_owns_its_controller() -> None:
    trial = {"class_name": "ImplicitFunc", "job_id": "03000000", "pid": 77, "node_id": "n1",
             "address": "127.0.0.1:6000", "owner": "127.0.0.1:5000"}  # fmt: skip
    env = StubEnv({77: "other.Callback"})
    reasons = NoProbeReasons(env, lambda a: True, None)
    actors = {"c1": CONTROLLER, "t1": trial}
    job = Job(job_id="03000000", driver_pid=42, driver_ip="127.0.0.1", start_time=100.0)
    (run,) = reasons.judge((no_probe_run(),), actors, (job,), (NODE,), now=500.0)
    assert run.no_probe.kind == CALLBACKS_UNSET
    assert "(ImplicitFunc, pid 77)" in run.no_probe.line and "other.Callback" in run.no_probe.line


def test_a_filed_problem_is_read_once_per_job_and_a_bad_one_is_a_warning() -> None:
    asked = []
    record = {"ray": "2.61.0", "problem": "Ray's Train callbacks have no on_report",
              "sent_at": 1.0}  # fmt: skip

    def problems(keys):
        asked.append(keys)
        return {PROBE_PROBLEM_PREFIX + "03000000": json.dumps(record).encode(),
                PROBE_PROBLEM_PREFIX + "04000000": b'{"ray": 1}'}  # fmt: skip

    reasons = NoProbeReasons(StubEnv({}), lambda a: True, problems)
    runs = (no_probe_run(), no_probe_run("actor-c2"), no_probe_run("actor-c3", "04000000"))
    judged_runs = reasons.judge(runs, {}, (), (NODE,), now=500.0)
    assert asked == [[PROBE_PROBLEM_PREFIX + "03000000", PROBE_PROBLEM_PREFIX + "04000000"]]
    assert [r.no_probe.kind for r in judged_runs] == [HOOKS_UNFIT, HOOKS_UNFIT, WAITING]
    assert reasons.warnings and "probe/problem/04000000" in reasons.warnings[0]


def test_a_run_with_the_probe_carries_no_reason() -> None:
    reasons = NoProbeReasons(StubEnv({}), lambda a: True, None)
    probed = TrainRun(run_id="r", run_name="r", attempt_id="a", world_size=1)
    assert reasons.judge((probed,), {}, (), (), now=1.0) == (probed,)


# -- the probe checks that Ray calls its hooks ----------------------------------------------


def test_ray_calls_every_hook_the_probe_counts_with() -> None:
    assert hooks_ray_lacks(report_probe.HOOKS) == []
    assert hooks_ray_lacks(("on_report", "on_a_hook_ray_never_had")) == ["on_a_hook_ray_never_had"]


def test_an_unpickled_probe_files_the_hooks_ray_lacks(monkeypatch) -> None:
    filed = []
    monkeypatch.setattr(report_probe, "hooks_ray_lacks", lambda hooks: ["on_report"])
    monkeypatch.setattr(report_probe, "file_probe_problem", filed.append)
    probe = pickle.loads(pickle.dumps(report_probe.ReportProbe()))
    assert filed == ["Ray's Train callbacks have no on_report"]
    assert probe.flush_interval_s == report_probe.FLUSH_INTERVAL_S
    monkeypatch.setattr(report_probe, "hooks_ray_lacks", lambda hooks: [])
    pickle.loads(pickle.dumps(report_probe.ReportProbe()))
    assert len(filed) == 1
