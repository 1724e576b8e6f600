"""``exit.json`` says the driver ended only where no live driver is proven: an empty (or
any) exit.json beside the process proven by pid, start time and command line is a driver
running, and ``check --teardown`` is not "safe" (folder D)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from raytop.process_identity import check_driver
from tests.unit.teardown_folders import (
    committed_run,
    dead_pid,
    driver_record,
    folder,
    no_cluster_cli,
    shown,
    spec_copy,
    teardown_lines,
)


@pytest.fixture
def live_driver():
    """Starts a process whose command line is raytop's driver's for a raytop dir."""
    started: list[subprocess.Popen] = []

    def start(raytop_dir: Path) -> subprocess.Popen:
        argv = ["raytop.launch.driver", "--raytop-dir", str(raytop_dir)]
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv],
                                stdin=subprocess.DEVNULL)  # fmt: skip
        started.append(proc)
        deadline = time.monotonic() + 10
        while "raytop.launch.driver" not in psutil.Process(proc.pid).cmdline():
            assert time.monotonic() < deadline, "the stand-in driver never showed its argv"
            time.sleep(0.02)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_an_exit_record_never_outweighs_a_driver_proven_live(tmp_path, monkeypatch, live_driver):
    """Folder D: an empty exit.json beside the proven driver (was: "safe")."""
    cli = no_cluster_cli(tmp_path, monkeypatch)
    d = folder(tmp_path, "D", ("t1", "TERMINATED"))
    committed_run(d, "t1")
    raytop_dir = spec_copy(d)
    proc = live_driver(raytop_dir)
    driver_record(raytop_dir, proc.pid, psutil.Process(proc.pid).create_time())
    (raytop_dir / "exit.json").write_text("")
    code, lines = teardown_lines(cli, d)
    assert code == 14
    assert lines == [
        "teardown_unsafe D: the Tune driver is running; its state reaches storage only every "
        "10 s or more: stop it first (`raytop stop`), it saves and syncs on the way out"
    ]
    assert shown(cli, d)["status"] == "RUNNING"


def test_exit_json_means_ended_only_where_no_live_driver_is_proven(tmp_path, live_driver):
    raytop_dir = tmp_path / "exp" / ".raytop"
    raytop_dir.mkdir(parents=True)
    proc = live_driver(raytop_dir)
    started = psutil.Process(proc.pid).create_time()
    os.mkfifo(raytop_dir / "exit.json")  # a FIFO never blocks: it is only looked at
    driver_record(raytop_dir, proc.pid, started)
    assert check_driver(raytop_dir).alive is True
    # The pid provably another process (another raytop dir on its command line): ended.
    other = tmp_path / "other" / ".raytop"
    other.mkdir(parents=True)
    stranger = live_driver(other)
    driver_record(raytop_dir, stranger.pid, psutil.Process(stranger.pid).create_time())
    assert (check_driver(raytop_dir).alive, check_driver(raytop_dir).problem) == (False, None)
    # The pid gone: ended.
    driver_record(raytop_dir, dead_pid(), started)
    assert check_driver(raytop_dir).alive is False
    # A raytop driver of this very dir whose start time is not the recorded one: cannot tell.
    driver_record(raytop_dir, proc.pid, started - 3600)
    assert check_driver(raytop_dir).alive is None
