"""Native stacks from inside a rank (``probe.native_stack``): the real py-spy on this very
process, and every way it can fail, each one line; then the probe answering a native
request, and what raytop reads back of it."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from raytop.model import untrusted_ledger_page
from raytop.probe import native_stack as ns
from raytop.probe import rank_commands
from raytop.probe.rank_state import RankState
from raytop.sources.ledger_records import worker_from_record
from raytop.wire.train_hooks import WorkerIdentity

PY_SPY = os.path.join(os.path.dirname(sys.executable), "py-spy")
has_py_spy = pytest.mark.skipif(not os.access(PY_SPY, os.X_OK), reason="no py-spy in the venv")
IDENTITY = WorkerIdentity(
    run_id="r", run_name="exp-t1", attempt_id="a", world_rank=0, world_size=2, local_rank=0,
    node_rank=0, node_id="n1", gpu_ids=[], placement_group_id=None, run_path="/tmp/run",
    declared={"CPU": 1.0}, restored_from=None,
)  # fmt: skip


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def busy_thread() -> threading.Thread:
    stop = threading.Event()

    def raytop_busy_loop() -> None:
        while not stop.is_set():
            sum(range(1000))

    thread = threading.Thread(target=raytop_busy_loop, name="busy", daemon=True)
    thread.stop = stop  # type: ignore[attr-defined]
    thread.start()
    return thread


@has_py_spy
def test_py_spy_dumps_this_very_process_its_parent_with_native_frames():
    """The probe's case: py-spy is a child of the process it dumps (ptrace by a child)."""
    thread = busy_thread()
    try:
        time.sleep(0.1)
        text = ns.native_stack(binary=PY_SPY, train_native_id=thread.native_id, timeout_s=20)
    finally:
        thread.stop.set()  # type: ignore[attr-defined]
    assert text.startswith(f"Process {os.getpid()}"), text[:300]
    first_thread = text.split("\nThread ", 1)[1]
    assert first_thread.startswith(f"{thread.native_id} ")  # the train loop's thread first
    assert "raytop_busy_loop (tests/unit/test_native_stack.py:" in first_thread
    assert "libc" in text or ".so" in text  # native frames, not only Python ones


def test_no_py_spy_on_the_worker_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv(ns.PY_SPY_ENV, str(tmp_path / "missing" / "py-spy"))
    assert ns.find_py_spy() is None
    assert ns.native_stack() == ns.NOT_INSTALLED
    assert (
        ns.NOT_INSTALLED == "py-spy not installed on the workers (pip install py-spy on the image)"
    )
    # Neither on PATH nor beside this Python: the same line.
    monkeypatch.delenv(ns.PY_SPY_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert ns.find_py_spy() is None and ns.native_stack() == ns.NOT_INSTALLED
    # A binary that vanished between the lookup and the run: still that line.
    assert ns.native_stack(binary=str(tmp_path / "gone")) == ns.NOT_INSTALLED


def test_a_ptrace_refusal_says_what_would_allow_it(tmp_path):
    refused = script(tmp_path, "py-spy", 'echo "Error: Permission Denied" >&2; exit 1')
    text = ns.native_stack(binary=refused, scope=0)
    assert text == (
        "py-spy may not attach to the worker (ptrace refused: Permission Denied); "
        "the container needs CAP_SYS_PTRACE"
    )
    assert "\n" not in ns.native_stack(binary=refused, scope=2)
    assert "ptrace_scope = 2" in ns.native_stack(binary=refused, scope=2)


def test_other_failures_and_a_slow_py_spy_are_one_line_each(tmp_path):
    broken = script(tmp_path, "py-spy", 'echo "Error: Failed to find python version" >&2; exit 3')
    assert ns.native_stack(binary=broken, scope=0) == (
        "py-spy failed (exit 3): Failed to find python version"
    )
    slow = script(tmp_path, "slow", "exec sleep 30")
    started = time.monotonic()
    text = ns.native_stack(binary=slow, timeout_s=0.5, scope=0)
    assert time.monotonic() - started < 5
    assert text == "py-spy did not finish within 0.5 s (stopped): no native stack"


def test_under_yama_py_spy_is_named_the_tracer_before_it_starts(tmp_path):
    """ptrace_scope 1 lets only ancestors trace: the child's own pid is granted through
    prctl(PR_SET_PTRACER) before py-spy runs (under that same pid), then taken back."""
    record = tmp_path / "ran"
    fake = script(tmp_path, "py-spy", f'echo "$$ $*" > {record}; echo "Thread 7 (idle): \\"x\\""')
    calls: list[tuple[int, int]] = []

    def prctl(option: int, arg: int) -> int:
        calls.append((option, arg))
        assert not record.exists() or arg == 0  # granted before py-spy ran
        return 0

    text = ns.native_stack(1234, binary=fake, scope=1, prctl=prctl)
    ran_as, argv = record.read_text().split(" ", 1)
    assert calls == [(ns.PR_SET_PTRACER, int(ran_as)), (ns.PR_SET_PTRACER, 0)]
    assert argv.strip() == "dump --native --pid 1234"
    assert text == 'Thread 7 (idle): "x"'


def test_the_dump_is_capped_on_a_thread_boundary_train_thread_first():
    dump = "Process 1: python\nPython v3.11\n" + "".join(
        f'Thread {tid} (idle): "t{tid}"\n' + "    frame (x.py:1)\n" * 50 for tid in (10, 20, 30)
    )
    text = ns.order_threads(dump, 30, max_chars=2_000)
    assert text.splitlines()[2] == 'Thread 30 (idle): "t30"'
    assert len(text) <= 2_000 and text.endswith("(2 more threads not shown: over 2000 characters)")
    assert ns.order_threads(dump, None, 100_000).splitlines()[2] == 'Thread 10 (idle): "t10"'
    probe = 'Thread 5 (idle): "raytop-probe"\n    Event.wait (threading.py:629)\n'
    ordered = ns.order_threads("Process 1: python\n" + probe + dump.split("\n", 2)[2], 20, 10**6)
    threads = [line for line in ordered.splitlines() if line.startswith("Thread ")]
    assert [t.split()[1] for t in threads] == ["20", "10", "30", "5"]  # raytop's own last


def test_the_probe_answers_a_native_request_in_its_next_message(monkeypatch):
    commands = {"value": json.dumps({"request_id": "q1", "run_id": None, "requested_at": 1.0})}
    monkeypatch.setattr(rank_commands, "kv_get_in_cluster", lambda key: commands["value"])
    taken: list[int | None] = []

    def fake_native(pid, *, train_native_id=None):
        taken.append(train_native_id)
        return "Thread 5 (active): native frames"

    monkeypatch.setattr(rank_commands, "native_stack", fake_native)
    rank = RankState(IDENTITY, flush_interval_s=3600.0)
    rank.enter()
    rank.commands.answer()  # an older raytop's request: no "native" key
    message = rank._message(psutil.Process())
    assert message["stack_request"] == "q1" and "native_stack" not in message and not taken

    commands["value"] = json.dumps(
        {"request_id": "q2", "run_id": None, "requested_at": 2.0, "native": True}
    )
    rank.commands.answer()
    rank.commands.native_thread.join(timeout=5)
    message = rank._message(psutil.Process())
    assert message["native_stack_request"] == "q2"
    assert message["native_stack"] == "Thread 5 (active): native frames"
    assert taken == [threading.get_native_id()]  # the train loop's OS thread id
    page = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 2,
            "first_seen_at": 1.0, "placement_group_id": None,
            "ranks": {"0": {**message, "received_at": time.time()}}}  # fmt: skip
    record = untrusted_ledger_page.ledger_page(json.loads(json.dumps(page)))["ranks"]["0"]
    worker = worker_from_record(record)
    assert (worker.native_stack_request, worker.native_stack) == ("q2", message["native_stack"])


def test_a_native_field_of_the_wrong_kind_drops_the_field_not_the_rank():
    rank = {"rank": 0, "entered": 1, "exited": 1, "native_stack": 42,
            "native_stack_request": ["q"]}  # fmt: skip
    page = {"run_id": "r", "run_name": "n", "attempt_id": "a", "world_size": 1,
            "first_seen_at": 1.0, "placement_group_id": None, "ranks": {"0": rank}}  # fmt: skip
    record = untrusted_ledger_page.ledger_page(page)["ranks"]["0"]
    assert record["native_stack"] is None and record["native_stack_request"] is None
    assert record["entered"] == 1
