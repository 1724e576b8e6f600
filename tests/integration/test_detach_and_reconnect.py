"""The driver outlives the terminal; a lost cluster degrades the snapshot and recovers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import run_raytop, status_json

pytestmark = pytest.mark.ray


def test_driver_survives_a_dropped_terminal(ray_cluster, example_copy):
    spec = example_copy("scalar.toml", "scalar_objective.py", edit={"steps = 3": "steps = 20"})
    watcher = subprocess.Popen(
        [sys.executable, "-m", "raytop", "run", str(spec), "--no-tui",
         "--address", ray_cluster.address],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    for line in watcher.stdout:
        if "RUNNING" in line:
            break
    os.kill(watcher.pid, signal.SIGHUP)  # what a dropped ssh session sends
    watcher.wait(timeout=10)
    experiment = spec.parent / "results" / "scalar"
    driver = json.loads((experiment / ".raytop" / "driver.json").read_text())
    assert os.path.exists(f"/proc/{driver['pid']}"), "the driver died with its terminal"

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        (exp,) = status_json(ray_cluster.address, experiment)["experiments"]
        if exp["status"] != "RUNNING":
            break
        time.sleep(1)
    assert exp["status"] == "FINISHED"
    assert [t["status"] for t in exp["trials"]] == ["TERMINATED"] * 4


class Forwarder:
    """A TCP proxy in front of the GCS that can be cut and restored, on the same port."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self._sockets: list[socket.socket] = []

    def start(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port), reuse_port=True)
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        # shutdown() wakes the thread blocked in accept(); close() alone would not, and the
        # kernel would go on accepting connections.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self._sockets.clear()


WATCH = """
import sys, time
from raytop.pipeline.collect import SnapshotCollector
collector = SnapshotCollector(sys.argv[1], experiments=[])
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    snapshot = collector.collect()
    print(int(snapshot.cluster.connected), snapshot.cluster.error or "", flush=True)
    time.sleep(0.5)
"""


def test_lost_cluster_shows_disconnected_then_recovers(ray_cluster):
    """The same long-lived collector (as the TUI's poller holds it) turns disconnected
    within seconds of losing the GCS, survives the outage, and reconnects when it is back."""
    proxy = Forwarder(ray_cluster.address)
    proxy.start()
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCH, proxy.address, "25"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    states = []

    def state() -> str:
        line = watcher.stdout.readline()
        assert line, f"the collector process died (code {watcher.wait()}) after {states}"
        states.append(line[0])
        return line

    def until(want: str, within_s: float) -> str:
        """The first state line starting with ``want``, read within ``within_s``."""
        deadline = time.monotonic() + within_s
        while (line := state())[0] != want:
            assert time.monotonic() < deadline, f"no state {want} in {within_s} s: {states}"
        return line

    until("1", 60)
    proxy.cut()
    line = until("0", 60)
    assert proxy.address in line
    time.sleep(5)
    proxy.start()
    until("1", 60)
    watcher.kill()
    proxy.cut()
    assert states[0] == "1" and "0" in states and states[-1] == "1"


def test_down_without_an_embedded_cluster_changes_nothing(tmp_path):
    result = run_raytop("down", env={"RAYTOP_HOME": str(tmp_path)})
    assert result.returncode == 0
    assert "nothing to stop" in result.stderr
