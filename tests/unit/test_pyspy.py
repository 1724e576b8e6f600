"""Stacks of a rank with no probe, read from outside (``sources.pyspy``): the real py-spy
on a real process of this host whose title is a Ray worker's (as Ray sets it), never on a
pid that is not one; py-spy's refusals, a hang and a missing binary as one line each; and
Ray's dashboard's ``/worker/traceback`` (a stand-in HTTP server answering as Ray 2.58's
reporter_head does: the dump, 403 when profiling is disabled, 500 with py-spy's output)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from raytop.model.stacks import STACK_BY_DASHBOARD, STACK_BY_PY_SPY
from raytop.sources import pyspy
from raytop.sources.pyspy import (
    NOT_INSTALLED,
    PROFILING_DISABLED,
    error_line,
    local_dump,
    not_a_worker,
    order_threads,
    remote_dump,
)
from raytop.wire.dashboard import DashboardClient
from tests.fakes import FakeDashboard, kv_for

WORKER_TITLE = "ray::RayTrainWorker.run_train_fn"
LOOP = """
import threading, time
def train_loop_of_the_test():
    time.sleep(60)
threading.Thread(target=train_loop_of_the_test, name="TrainingThread(loop)").start()
time.sleep(60)
"""
# What py-spy 0.4.3 writes when the kernel refuses it another user's process (root
# without CAP_SYS_PTRACE), recorded on this machine.
REFUSED = """Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: Permission denied (os error 13)
    1: Permission denied (os error 13)

Stack backtrace:
   0: <E as anyhow::context::ext::StdError>::ext_context
"""


def spawn(title: str | None) -> subprocess.Popen:
    """A Python process running ``LOOP``, its process title ``title`` (as Ray sets a
    worker's) or its own."""
    if title is None:
        argv = [sys.executable, "-c", LOOP]
    else:
        argv = ["bash", "-c", f'exec -a "{title}" "$0" -c "$1"', sys.executable, LOOP]
    proc = subprocess.Popen(argv)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(os.listdir(f"/proc/{proc.pid}/task")) < 2:
        time.sleep(0.05)  # until the interpreter started the loop's thread
    time.sleep(0.2)
    return proc


@pytest.fixture
def worker() -> Iterator[subprocess.Popen]:
    proc = spawn(WORKER_TITLE)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def plain() -> Iterator[subprocess.Popen]:
    proc = spawn(None)
    yield proc
    proc.kill()
    proc.wait()


def fake_py_spy(tmp_path: Path, script: str) -> str:
    """An executable standing in for py-spy (``script``: its shell body); it records
    that it ran in ``ran``."""
    path = tmp_path / "py-spy"
    path.write_text(f"#!/bin/sh\necho ran >> {tmp_path}/ran\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


needs_py_spy = pytest.mark.skipif(pyspy.find_py_spy() is None, reason="py-spy not installed")


# -- py-spy here, on raytop's own node ------------------------------------------------------


@needs_py_spy
def test_a_ray_workers_stack_is_py_spys_dump_with_the_train_loop_first(worker):
    answer = local_dump(worker.pid)
    assert (answer.by, answer.problem) == (STACK_BY_PY_SPY, None)
    assert "train_loop_of_the_test" in answer.text
    first_thread = next(line for line in answer.text.splitlines() if line.startswith("Thread"))
    assert '"TrainingThread(loop)"' in first_thread
    native = local_dump(worker.pid, native=True)
    assert "train_loop_of_the_test" in native.text


def test_a_pid_that_is_not_a_ray_worker_is_never_attached_to(plain, tmp_path):
    binary = fake_py_spy(tmp_path, "exit 0")
    answer = local_dump(plain.pid, binary=binary)
    assert answer.text is None
    assert f"pid {plain.pid} on this host is not a Ray worker" in answer.problem
    assert "PID namespace" in answer.problem and "not attached to" in answer.problem
    assert not (tmp_path / "ran").exists()


def test_a_gone_worker_is_one_line_and_no_py_spy(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    binary = fake_py_spy(tmp_path, "exit 0")
    answer = local_dump(proc.pid, binary=binary)
    assert f"pid {proc.pid} is not running on this host" in answer.problem
    assert not (tmp_path / "ran").exists()
    assert not_a_worker(os.getpid()) is not None  # pytest's own process: not a Ray worker


def test_a_refused_attach_says_why_and_what_would_allow_it(worker, tmp_path):
    binary = fake_py_spy(tmp_path, f"cat >&2 <<'EOF'\n{REFUSED}EOF\nexit 1")
    answer = local_dump(worker.pid, binary=binary)
    assert (tmp_path / "ran").exists() and answer.text is None
    assert answer.problem.startswith(f"the OS refused py-spy on pid {worker.pid} (ptrace: ")
    assert "Permission denied (os error 13)" in answer.problem
    assert "CAP_SYS_PTRACE" in answer.problem and "\n" not in answer.problem
    assert "only a process's ancestors" in pyspy._failure(1, 1, REFUSED, scope=1)
    assert "only an admin may attach" in pyspy._failure(1, 1, REFUSED, scope=2)


def test_py_spys_other_failures_and_a_hang_are_one_line(worker, tmp_path):
    failing = fake_py_spy(tmp_path, "echo 'Error: Failed to find python version' >&2; exit 1")
    answer = local_dump(worker.pid, binary=failing)
    assert answer.problem == (
        f"py-spy failed on pid {worker.pid} (exit 1): Failed to find python version"
    )
    hanging = fake_py_spy(tmp_path, "exec sleep 30")
    started = time.monotonic()
    answer = local_dump(worker.pid, binary=hanging, timeout_s=0.5)
    assert time.monotonic() - started < 3
    assert answer.problem == "py-spy did not finish within 0.5 s (stopped)"


def test_no_py_spy_is_one_line(worker, monkeypatch):
    monkeypatch.setattr(pyspy, "find_py_spy", lambda executable=None: None)
    assert local_dump(worker.pid).problem == NOT_INSTALLED


def test_py_spy_is_found_beside_the_python_when_not_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    binary = fake_py_spy(tmp_path, "exit 0")
    assert pyspy.find_py_spy(str(tmp_path / "python")) == binary
    assert pyspy.find_py_spy(str(tmp_path / "nowhere" / "python")) is None


def test_error_line_keeps_the_error_and_its_first_cause():
    assert error_line(REFUSED) == (
        "Failed to get process executable name. Check that the process is running. "
        "(Permission denied (os error 13))"
    )
    assert error_line("Permission Denied: Try running again with elevated permissions") == (
        "Permission Denied: Try running again with elevated permissions"
    )
    assert error_line("") == "no output"


def test_order_threads_puts_the_train_loop_first_and_cuts_on_a_thread_boundary():
    dump = (
        "Process 7: ray::RayTrainWorker\nPython v3.11.7\n\n"
        'Thread 7 (idle): "MainThread"\n    main_loop (worker.py:1)\n'
        'Thread 8 (active): "TrainingThread(loop)"\n    loop (train.py:9)\n'
        'Thread 9 (idle): "ray_print_logs"\n    wait (threading.py:3)\n'
    )
    ordered = order_threads(dump)
    assert ordered.index("TrainingThread") < ordered.index("MainThread")
    assert ordered.startswith("Process 7: ray::RayTrainWorker")
    limit = ordered.index('Thread 7 (idle): "MainThread"') + 80
    cut = order_threads(dump, max_chars=limit)
    assert "TrainingThread" in cut and "MainThread" not in cut
    assert cut.endswith(f"(2 more threads not shown: over {limit} characters)")


# -- Ray's dashboard, for a worker on another node ------------------------------------------

RAY_500 = (
    "Failed to execute `['/usr/bin/py-spy', 'dump', '-p', '41']`.\n\n"
    "=== stderr ===\n" + REFUSED + "\n=== stdout ===\n"
)


@pytest.fixture
def dashboard() -> Iterator[FakeDashboard]:
    server = FakeDashboard(b'Process 41: ray::RayTrainWorker\n\nThread 41 (idle): "MainThread"'
                           b"\n    loop (train.py:3)\n")  # fmt: skip
    yield server
    server.stop()


def test_the_dashboard_route_is_asked_for_the_pid_on_its_node(dashboard):
    client = DashboardClient(kv_for(dashboard.address))
    answer = remote_dump(client, 41, "ab12", native=True)
    assert (answer.by, answer.problem) == (STACK_BY_DASHBOARD, None)
    assert "loop (train.py:3)" in answer.text
    (path,) = dashboard.paths
    url = urlparse(path)
    assert url.path == "/worker/traceback"
    assert parse_qs(url.query) == {"pid": ["41"], "node_id": ["ab12"], "native": ["1"]}


def test_profiling_disabled_is_said_in_one_line(dashboard):
    dashboard.status = 403
    dashboard.body = b"Profiling is disabled by default for security reasons. To enable..."
    answer = remote_dump(DashboardClient(kv_for(dashboard.address)), 41, "ab12")
    assert answer.problem == "not on raytop's node, and " + PROFILING_DISABLED
    assert "RAY_DASHBOARD_ENABLE_PROFILING=1" in answer.problem


def test_py_spy_failing_on_the_workers_node_is_its_reason(dashboard):
    dashboard.status = 500
    dashboard.body = RAY_500.encode()
    answer = remote_dump(DashboardClient(kv_for(dashboard.address)), 41, "ab12")
    assert answer.problem == (
        "py-spy on the worker's node failed: Failed to get process executable name. Check "
        "that the process is running. (Permission denied (os error 13))"
    )


def test_no_dashboard_or_a_bad_node_id_is_one_line_and_no_ask(dashboard):
    assert remote_dump(None, 41, "ab12").problem == (
        "not on raytop's node, and no Ray dashboard to ask"
    )
    client = DashboardClient(kv_for(dashboard.address))
    assert "is not hex" in remote_dump(client, 41, "ab&pid=1").problem
    assert dashboard.paths == []
    dashboard.stop()
    down = remote_dump(client, 41, "ab12", deadline_s=0.5)
    assert down.problem.startswith("not on raytop's node, and Ray's dashboard at http://")
