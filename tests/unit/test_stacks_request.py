"""A stacks request on a run with no probe, through the real collector with no cluster:
the actor table's shapes (a controller and two workers, one on this host, one at
203.0.113.9: TEST-NET-3, never this host), a stand-in KV store and a stand-in dashboard.
The worker here is a real process titled as Ray titles its workers, read by the real
py-spy; the one elsewhere is asked of the dashboard, which answers as Ray 2.58 does with
profiling disabled (403), or with the dump. No request is written to the KV store when no
run with the probe is on view, and the request does not wait out its timeout for ranks
that can never answer it. The answers land where a probe's do, and in the capture."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator

import pytest

from raytop.faces.text import stacks_text
from raytop.model import Cluster, Snapshot, TrainRun, Worker
from raytop.model.stacks import STACK_BY_DASHBOARD, STACK_BY_PROBE, STACK_BY_PY_SPY, StackAnswer
from raytop.pipeline.collect import SnapshotCollector
from raytop.pipeline.stacks_request import _only_answers, with_answers
from raytop.pipeline.uninstrumented import DRIVER_HINT
from raytop.sources.pyspy import PROFILING_DISABLED, find_py_spy
from raytop.wire.dashboard import DashboardClient
from raytop.wire.kv_keys import STACKS_COMMAND_KEY
from tests.fakes import FakeDashboard, kv_for
from tests.unit.test_pyspy import WORKER_TITLE, spawn

FAR_NODE = "ab12cd"
HERE = {"node_id": "n1", "address": "127.0.0.1", "alive": True, "is_head": True,
        "resources_total": {"CPU": 4.0}, "resources_available": {"CPU": 2.0},
        "labels": {}}  # fmt: skip
FAR = {**HERE, "node_id": FAR_NODE, "address": "203.0.113.9", "is_head": False}
FAR_PID = 4242


class Gcs:
    """The GCS reader's shapes: two nodes, and the actors of one Train run with no probe
    started by a job's driver (its owner is no actor)."""

    def __init__(self, local_pid: int) -> None:
        def actor(cls, pid, address, owner, node):
            return {"class_name": cls, "job_id": "05000000", "pid": pid, "node_id": node,
                    "address": address, "owner": owner}  # fmt: skip

        self._actors = {
            "c1": actor("TrainController", 10, "127.0.0.1:7001", "127.0.0.1:6000", "n1"),
            "w1": actor("RayTrainWorker", local_pid, "127.0.0.1:7002", "127.0.0.1:7001", "n1"),
            "w2": actor("RayTrainWorker", FAR_PID, "203.0.113.9:7003", "127.0.0.1:7001",
                        FAR_NODE),
            "w3": actor("RayTrainWorker", FAR_PID + 1, "203.0.113.9:7004", "127.0.0.1:7001",
                        FAR_NODE),
        }  # fmt: skip

    def nodes(self):
        return [HERE, FAR]

    def actors(self):
        return self._actors

    def placement_groups(self):
        return []

    def reset(self):
        pass


@pytest.fixture
def worker():
    proc = spawn(WORKER_TITLE)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def dashboard() -> Iterator[FakeDashboard]:
    server = FakeDashboard(b"Profiling is disabled by default for security reasons.")
    server.status = 403
    yield server
    server.stop()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def collector(kv, local_pid: int) -> SnapshotCollector:
    return SnapshotCollector("127.0.0.1:1", gcs=(Gcs(local_pid), kv),
                             dashboard=DashboardClient(kv))  # fmt: skip


@pytest.mark.skipif(find_py_spy() is None, reason="py-spy not installed")
def test_a_run_with_no_probe_gets_its_stacks_by_py_spy_here_and_says_why_not_elsewhere(
    worker, dashboard, home
):
    kv = kv_for(dashboard.address)
    started = time.monotonic()
    snapshot = collector(kv, worker.pid).request_stacks(timeout_s=5.0)
    assert time.monotonic() - started < 4.0  # no wait for ranks that cannot answer
    assert STACKS_COMMAND_KEY not in kv.data  # no run with the probe: nothing written
    (run,) = snapshot.runs
    assert (run.instrumented, run.job_id, run.probe_hint) == (False, "05000000", DRIVER_HINT)
    here, *far = sorted(run.workers, key=lambda w: w.pid != worker.pid)
    assert (here.stack_by, here.stack_problem) == (STACK_BY_PY_SPY, None)
    assert "train_loop_of_the_test" in here.stack
    for elsewhere in far:
        assert (elsewhere.stack, elsewhere.stack_by) == (None, STACK_BY_DASHBOARD)
        assert elsewhere.stack_problem == "not on raytop's node, and " + PROFILING_DISABLED
        assert elsewhere.stack_request == here.stack_request is not None
    # Its 403 is the dashboard's answer for every worker: asked once.
    assert len([p for p in dashboard.paths if p.startswith("/worker/traceback")]) == 1
    # The faces show them as they show a probe's: the text face, the capture.
    text = stacks_text(snapshot)
    assert f"pid {worker.pid} · no probe · by py-spy" in text
    assert "train_loop_of_the_test" in text and PROFILING_DISABLED in text
    (folder,) = snapshot.stacks_capture.saved_to
    index = json.loads((home / "captures" / folder.rsplit("/", 1)[1] / "index.json").read_text())
    (entry,) = index["ranks"]
    assert (entry["pid"], entry["by"], entry["python"]) == (worker.pid, "py-spy", True)


def test_a_worker_elsewhere_gets_the_dashboards_dump_when_profiling_is_enabled(dashboard, home):
    dashboard.status = 200
    dashboard.body = b'Process 4242: ray::RayTrainWorker\n\nThread 1 (idle): "MainThread"\n' + (
        b"    far_loop (train.py:7)\n"
    )
    gone = 2**22 + 17  # no such pid here: the local worker is gone, said in one line
    snapshot = collector(kv_for(dashboard.address), gone).request_stacks(timeout_s=5.0)
    (run,) = snapshot.runs
    far = next(w for w in run.workers if w.pid == FAR_PID)
    assert far.stack_by == STACK_BY_DASHBOARD and "far_loop (train.py:7)" in far.stack
    paths = sorted(p for p in dashboard.paths if p.startswith("/worker/traceback"))
    assert len(paths) == 2  # it takes stacks: each worker there is asked
    assert f"pid={FAR_PID}&" in paths[0] and f"node_id={FAR_NODE}" in paths[0]
    here = next(w for w in run.workers if w.pid == gone)
    assert here.stack is None and f"pid {gone} is not running on this host" in here.stack_problem


# -- the answers' places -------------------------------------------------------------------


def test_probe_answers_say_so_and_stale_ones_are_dropped():
    fresh = Worker(rank=0, stack="s", stack_request="q2")
    stale = Worker(rank=1, stack="old", stack_request="q1")
    run = TrainRun("r", "exp-t1", "a", 2, workers=(fresh, stale))
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("a", True), runs=(run,))
    a, b = _only_answers(snapshot, "q2").runs[0].workers
    assert (a.stack, a.stack_by) == ("s", STACK_BY_PROBE)
    assert (b.stack, b.stack_by) == (None, None)


def test_answers_go_only_to_the_ranks_with_no_probe_they_were_taken_of():
    probed = TrainRun("p", "probed", "a", 1, workers=(Worker(rank=0, pid=5),))
    bare = TrainRun("b", "bare", "c", 2, workers=(Worker(rank=0, pid=5), Worker(rank=1, pid=6)),
                    instrumented=False)  # fmt: skip
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("a", True), runs=(probed, bare))
    python = StackAnswer(STACK_BY_PY_SPY, text="Thread 5\n    loop (t.py:1)")
    refused = StackAnswer(STACK_BY_PY_SPY, problem="the OS refused py-spy on pid 6 (…)")
    answers = {("p", 5): (python, None), ("b", 5): (python, python), ("b", 6): (refused, refused)}
    out = with_answers(snapshot, answers, "q9")
    assert out.runs[0] == probed  # a probed rank is its probe's to answer
    five, six = out.runs[1].workers
    assert (five.stack, five.native_stack, five.stack_request) == (python.text, python.text, "q9")
    assert (six.stack, six.stack_problem, six.native_stack) == (None, refused.problem,
                                                                refused.problem)  # fmt: skip
    assert dataclasses.replace(six, stack_problem=None, native_stack=None,
                               native_stack_request=None, stack_request=None,
                               stack_by=None) == bare.workers[1]  # fmt: skip
