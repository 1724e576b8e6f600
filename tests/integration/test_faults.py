"""Fault cases on a real local cluster (issue 8: R1, R2, R6; R4 is in
``tests/integration/test_tui_tmux.py``). Each test prints its figures as ``FIGURE name=value``
lines (``pytest -rP`` shows them); docs/RELIABILITY.md quotes them with the command.

The watcher below is the collector the TUI holds: one long-lived ``SnapshotCollector``,
polled again as soon as the previous poll is done (every 0.5 s here), in a process of its
own, so that a fault that ended it would show as a dead watcher, not a hung test."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import (
    experiment_status,
    launch_run,
    own_tmpdir,
    run_output,
    run_raytop,
    wait_for,
)

pytestmark = pytest.mark.ray
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

WATCH = """
import json, sys, time
from raytop.model.thresholds import Thresholds
from raytop.pipeline.collect import SnapshotCollector
address, seconds, experiments = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
collector = SnapshotCollector(address, experiments=[(e, None) for e in experiments], watch=True,
                              thresholds=Thresholds(stall_after_s=5))
end = time.monotonic() + seconds
while time.monotonic() < end:
    s = collector.collect()
    ledger = s.ledger
    print(json.dumps({
        "t": time.time(),
        "connected": s.cluster.connected,
        "error": s.cluster.error,
        "ledger": None if ledger is None else {
            "available": ledger.available, "restarted_at": ledger.restarted_at,
            "gap_s": ledger.gap_s},
        "findings": sorted({f.kind for f in s.findings}),
        "experiments": [{
            "status": str(e.status),
            "trials": [[t.trial_id, t.status, t.iterations] for t in e.trials],
            "workers": [[w.reports_entered, w.reports_exited, w.done]
                        for run in e.runs for w in run.workers],
            "taken": [a.reports_taken for run in e.runs for a in run.attempts],
        } for e in s.experiments],
    }), flush=True)
    time.sleep(0.5)
"""


class Watcher:
    """The TUI's collector in a process of its own; every poll is one JSON line."""

    def __init__(self, address: str, seconds: float, *experiments: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WATCH, address, str(seconds), *map(str, experiments)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.polls: list[dict] = []
        # Lines arrive through a queue, so that a watcher stuck inside a poll fails the
        # wait at its deadline instead of blocking a readline until the test's timeout.
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def until(self, predicate, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if not line:
                raise AssertionError(
                    f"the watcher died (code {self.process.wait()}) waiting for {what}: "
                    f"{self.process.stderr.read()[-2000:]}"
                )
            poll = json.loads(line)
            self.polls.append(poll)
            if predicate(poll):
                return poll
        raise AssertionError(f"timed out waiting for {what}; last poll: {self.polls[-1:]}")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def figure(name: str, value) -> None:
    print(f"FIGURE {name}={value}")


# -- R1: the ledger actor killed mid-run -------------------------------------------------

# A driver joining a loopback-only cluster must keep 127.0.0.1 (see R6); harmless today.
LOOPBACK_DRIVER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# Joins the cluster first (a driver's start takes seconds under load), says "ready", and
# kills the ledger when told (a line on stdin): the kill lands when the test means it to.
KILL_LEDGER = """
import sys, time, ray
ray.init(address=sys.argv[1], logging_level="ERROR")
ledger = ray.get_actor("raytop_ledger", namespace="raytop")
print("ready", flush=True)
sys.stdin.readline()
ray.kill(ledger, no_restart=True)
print(time.time(), flush=True)
"""


CHECK_EVERY_S = 1.0


class Checker(threading.Thread):
    """``raytop check`` run again and again while the fault happens, as a liveness probe
    would: every exit code and every first line it printed."""

    def __init__(self, address: str, experiment: Path) -> None:
        super().__init__(daemon=True)
        self.args = ["check", "--stall-after", "5", "--address", address,
                     "--experiment", str(experiment)]  # fmt: skip
        self.results: list[tuple[float, int, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        # A probe's period, not back to back: each check is a process (~0.75 CPU-s) on
        # the 2 cores the run under test shares.
        while not self.stop.wait(CHECK_EVERY_S):
            result = run_raytop(*self.args, timeout=60)
            self.results.append((time.time(), result.returncode, result.stdout + result.stderr))

    def finish(self) -> list[tuple[float, int, str]]:
        self.stop.set()
        self.join(timeout=90)
        return self.results


def test_r1_ledger_killed_the_view_says_so_reconnects_and_loses_no_report(
    ray_cluster, example_copy
):
    # ~0.45 s an epoch here: the ledger dies some 3 s in, and the run goes on long enough
    # after for its probes to make a new one (a run that ends first leaves none).
    epochs = 40
    spec = example_copy(
        "stall.toml", "stall_loop.py",
        edit={"skip_rank = 1": "skip_rank = -1", "epochs = 5": f"epochs = {epochs}",
              "epoch_s = 0.5": "epoch_s = 0.3"},
    )  # fmt: skip
    experiment = spec.parent / "results" / "stall"
    driver = launch_run(spec, ray_cluster.address)
    wait_for(experiment.is_dir, 60, "the experiment folder")
    watcher = Watcher(ray_cluster.address, 240, experiment)
    checker = Checker(ray_cluster.address, experiment)
    killer = None
    try:

        def counts(poll):
            return poll["experiments"][0]["workers"]

        before = watcher.until(
            lambda p: len(counts(p)) == 2 and min(w[1] for w in counts(p)) >= 3, 150,
            "both ranks to report 3 times",
        )  # fmt: skip
        checker.start()
        killer = subprocess.Popen([sys.executable, "-c", KILL_LEDGER, ray_cluster.address],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, **LOOPBACK_DRIVER_ENV})  # fmt: skip
        assert killer.stdout.readline().strip() == "ready"
        wait_for(lambda: len(checker.results) >= 2, 30, "a check or two before the fault")
        killer.stdin.write("kill\n")
        killer.stdin.flush()
        killed_at = float(killer.stdout.readline())
        back = watcher.until(
            lambda p: p["ledger"]["available"] and (p["ledger"]["restarted_at"] or 0) > 0,
            60, "the view to show the ledger recreated",
        )  # fmt: skip
        assert "ledger_restarted" in back["findings"] and back["ledger"]["gap_s"] is not None
        figure("r1_ledger_reconnect_s", f"{back['t'] - killed_at:.1f}")
        figure("r1_ledger_gap_s", f"{back['ledger']['gap_s']:.1f}")
        # The counts go on from where they were (the probes resent their whole state).
        assert min(w[1] for w in counts(back)) >= min(w[1] for w in counts(before))
        done = watcher.until(
            lambda p: counts(p) and all(w[2] for w in counts(p)), 180, "both ranks done"
        )
        # The RunProbe gave the new ledger its whole record: every report the controller
        # took, those before the kill too.
        watcher.until(lambda p: p["experiments"][0]["taken"] == [epochs], 60,
                      "the run's attempt, every report taken, in the new ledger")  # fmt: skip
        # the run itself was never touched
        assert driver.wait(timeout=120) == 0, run_output(spec, experiment)
    finally:
        checks = checker.finish() if checker.is_alive() else checker.results
        watcher.close()
        for process in (driver, killer):
            if process is not None and process.poll() is None:
                process.kill()
    assert min(w[1] for w in counts(before)) < epochs  # the ledger died mid-run
    made = [epochs, epochs]  # each rank calls ray.train.report once per epoch
    counted = [w[1] for w in counts(done)]
    figure("r1_ledger_reports_made", sum(made))
    figure("r1_ledger_reports_lost", sum(made) - sum(counted))
    assert [tuple(w) for w in counts(done)] == [(epochs, epochs, True)] * 2
    # No false alarm at any poll, before, during or after the gap, and no failed check.
    alarms = {"barrier_stall", "report_mispaired", "rank_dead", "rank_silent"}
    assert not [p["findings"] for p in watcher.polls if alarms & set(p["findings"])]
    during = [c for c in checks if c[0] >= killed_at]
    assert checks and during, checks
    assert {code for _, code, _ in checks} == {0}, [c for c in checks if c[1] != 0]
    figure("r1_ledger_checks_during_and_after", len(during))


# -- R1: a GCS that stops answering, then dies ---------------------------------------------


@pytest.mark.own_cluster
def test_r1_a_gcs_that_stops_answering_then_dies_never_ends_the_view(tmp_path, monkeypatch):
    """The GCS accepts connections but does not answer (frozen, as while a loaded cluster
    is being stopped), then is gone, then a new one starts on the same address. Ray's GCS
    client ends its whole process 60 s after the GCS is gone, and Ray's state accessor
    (which raytop once read the tables with) had no per-call timeout and ended the process
    when a read left in flight met the new GCS ("WrongClusterID"): the view must say "not
    connected" within its read deadline, outlive the give-up, and connect to the new GCS
    (found under load: the watcher of the restart test below was ended by Ray mid-test)."""
    from raytop.launch import cluster
    from raytop.launch.spec import ClusterSection
    from raytop.wire.gcs import READ_DEADLINE_S

    (tmp_path / "home").mkdir()
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAY_TMPDIR", own_tmpdir("gcsfrozen"))  # never the shared cluster's
    ports: list[int] = []
    pick = cluster._free_port
    monkeypatch.setattr(cluster, "_free_port", lambda: ports.append(pick()) or ports[-1])
    target = cluster.start_embedded(ClusterSection(num_cpus=1))
    head = psutil.Process(cluster.embedded_record()["pid"])
    (gcs,) = [p for p in head.children(recursive=True) if p.name() == "gcs_server"]
    watcher = Watcher(target.address, 150)
    try:
        watcher.until(lambda p: p["connected"], 30, "the view to connect")
        gcs.send_signal(signal.SIGSTOP)
        frozen_at = time.time()
        seen = watcher.until(lambda p: not p["connected"], READ_DEADLINE_S + 20,
                             "the view to show a GCS that does not answer")  # fmt: skip
        figure("r1_frozen_gcs_seen_s", round(seen["t"] - frozen_at, 1))
        # Killed with a read in flight: the watcher polls again at once after a failure.
        gcs.kill()
        killed_at = time.time()
        last = watcher.until(lambda p: p["t"] > killed_at + 75, 120,
                             "the view to outlive Ray's 60 s give-up")  # fmt: skip
        assert not last["connected"] and watcher.process.poll() is None
        figure("r1_view_alive_after_gcs_gone_s", round(last["t"] - killed_at))
        cluster.stop_embedded()
        replay = iter(list(ports))
        monkeypatch.setattr(cluster, "_free_port", lambda: next(replay))
        restart_at = time.time()
        assert cluster.start_embedded(ClusterSection(num_cpus=1)).address == target.address
        back = watcher.until(lambda p: p["connected"], 60, "the view to connect to the new GCS")
        assert watcher.process.poll() is None
        # The GCS answers before the node is alive: the view is back before the start ends.
        figure("r1_new_gcs_seen_after_restart_s", round(back["t"] - restart_at, 1))
    finally:
        watcher.close()
        with contextlib.suppress(Exception):
            gcs.send_signal(signal.SIGCONT)
        cluster.stop_embedded()


# -- R1: the cluster stopped and started again on the same address -----------------------


@pytest.mark.own_cluster
def test_r1_cluster_stopped_and_started_again_the_view_reconnects_and_counts_resume(
    tmp_path, monkeypatch, example_copy
):
    """A private embedded cluster (its own RAYTOP_HOME), stopped and started again on
    the same ports: raytop's own start/stop code, with its port picker replayed."""
    from raytop.launch import cluster
    from raytop.launch.spec import ClusterSection

    (tmp_path / "home").mkdir()
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAY_TMPDIR", own_tmpdir("restart"))  # never the shared cluster's
    # A machine where a local ray.init() of Ray 2.60 once ran holds ~/.ray/auth_token, and
    # with it `ray start` turns token authentication on unless told otherwise: raytop's
    # cluster, its readers, its driver and the run must all still work (cluster.auth_env).
    user = tmp_path / "user"
    (user / ".ray").mkdir(parents=True)
    (user / ".ray" / "auth_token").write_text(uuid.uuid4().hex)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    ports: list[int] = []
    pick = cluster._free_port
    monkeypatch.setattr(cluster, "_free_port", lambda: ports.append(pick()) or ports[-1])
    steps = 5
    spec = example_copy("scalar.toml", "scalar_objective.py",
                        edit={"[1, 2, 3, 4]": "[2, 3]",
                              "steps = 3": f"steps = {steps}"})  # fmt: skip
    experiment = spec.parent / "results" / "scalar"  # not there yet: run after the restart
    target = cluster.start_embedded(ClusterSection(num_cpus=2))
    watcher = Watcher(target.address, 300, experiment)
    try:
        watcher.until(lambda p: p["connected"], 30, "the view to connect")
        assert run_raytop("check", "--address", target.address).returncode == 0

        current = Path(own_tmpdir("restart")) / "ray" / "ray_current_cluster"
        assert current.read_text().strip() == target.address  # what Ray's `ray start` wrote
        stopped_at = time.time()
        assert cluster.stop_embedded()
        # Forgotten, as `ray stop` does: a plain ray.init() would try to join the dead address.
        assert not current.exists()
        gone = watcher.until(lambda p: not p["connected"], 30, "the view to show it gone")
        assert "cluster_unreachable" in gone["findings"] and target.address in gone["error"]
        figure("r1_cluster_detect_s", f"{gone['t'] - stopped_at:.1f}")
        down = run_raytop("check", "--address", target.address, timeout=60)
        assert down.returncode == 20, down.stdout + down.stderr
        assert down.stdout.startswith("cluster_unreachable:") and "Traceback" not in down.stderr
        time.sleep(5)  # an outage, not a blip

        replay = iter(list(ports))
        monkeypatch.setattr(cluster, "_free_port", lambda: next(replay))
        restart_at = time.time()
        restarted = cluster.start_embedded(ClusterSection(num_cpus=2))
        up_at = time.time()
        assert restarted.address == target.address
        back = watcher.until(lambda p: p["connected"], 60, "the view to reconnect")
        figure("r1_cluster_restart_s", f"{up_at - restart_at:.1f}")  # until the node is alive
        # The GCS answers long before the node is alive: the view is back by then.
        figure("r1_cluster_reconnect_after_restart_s", f"{back['t'] - restart_at:.1f}")
        figure("r1_cluster_outage_seen_s", f"{back['t'] - gone['t']:.1f}")
        assert run_raytop("check", "--address", target.address).returncode == 0

        # Counts resume: a sweep on the restarted cluster, seen by the same collector.
        finished = run_raytop("run", str(spec), "--no-tui", "--address", target.address,
                              timeout=180)  # fmt: skip
        assert finished.returncode == 0, finished.stdout + finished.stderr
        seen = watcher.until(
            lambda p: p["connected"] and p["experiments"][0]["status"] == "FINISHED", 30,
            "the same view to show the sweep finished",
        )  # fmt: skip
        trials = seen["experiments"][0]["trials"]
        assert [t[1:] for t in trials] == [["TERMINATED", steps]] * 2
        figure("r1_cluster_reports_lost", 2 * steps - sum(t[2] for t in trials))
        assert watcher.process.poll() is None  # the view outlived the outage
    finally:
        watcher.close()
        cluster.stop_embedded()


# -- R2 and R6: the TUI in a real terminal (tmux) ----------------------------------------


def tui_process(pane) -> psutil.Process:
    """The raytop TUI process running in ``pane`` (the pane's shell runs it as a child)."""
    shell = subprocess.run(
        [*pane.tmux, "list-panes", "-t", pane.name, "-F", "#{pane_pid}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    (tui,) = [
        p for p in psutil.Process(int(shell)).children(recursive=True)
        if "raytop" in p.cmdline() and p.cmdline()[:1] == [sys.executable]
    ]  # fmt: skip
    return tui


@needs_tmux
def test_r2_terminal_hangup_leaves_the_run_going_and_reattach_shows_it(ray_cluster, example_copy):
    from tests.tmux import Pane

    steps = 30
    spec = example_copy("scalar.toml", "scalar_objective.py",
                        edit={"[1, 2, 3, 4]": "[1, 2]",
                              "steps = 3": f"steps = {steps}"})  # fmt: skip
    experiment = spec.parent / "results" / "scalar"
    raytop = [sys.executable, "-m", "raytop"]
    pane = Pane([*raytop, "run", str(spec), "--address", ray_cluster.address])
    try:
        pane.wait_for(lambda s: "RUNNING" in s and "x=" in s, 120, "the sweep on screen")
        tui = tui_process(pane)
        tui.send_signal(signal.SIGHUP)  # what the terminal sends when ssh drops
        hung_up_at = time.monotonic()
        tui.wait(timeout=20)
        figure("r2_tui_exit_after_hangup_s", f"{time.monotonic() - hung_up_at:.1f}")
    finally:
        pane.close()
    driver = json.loads((experiment / ".raytop" / "driver.json").read_text())
    assert psutil.pid_exists(driver["pid"]), "the driver died with the terminal"
    mid = experiment_status(ray_cluster.address, experiment)
    assert mid["status"] == "RUNNING", mid["status"]

    attach = Pane([*raytop, "--address", ray_cluster.address])
    try:
        screen = attach.wait_for(lambda s: "scalar" in s and ("RUNNING" in s or "FINISHED" in s),
                                 60, "the same experiment after re-attaching")  # fmt: skip
        # Its own row must say FINISHED: the list of every run on the cluster also shows
        # other tests' experiments, some of them finished long ago.
        screen = attach.wait_for(
            lambda s: any("scalar" in line and "FINISHED" in line for line in s.splitlines())
            and s.count("TERMINATED") >= 2,
            180, "the sweep to finish",
        )  # fmt: skip
        attach.keys("q")
        attach.wait_for(lambda s: "EXITED=0" in s, 20, "raytop to exit")
    finally:
        attach.close()
    done = experiment_status(ray_cluster.address, experiment)
    assert done["status"] == "FINISHED", done["status"]
    assert [(t["status"], t["iterations"]) for t in done["trials"]] == [("TERMINATED", steps)] * 2
    assert "scalar" in screen


def listening(processes: list[psutil.Process]) -> list[tuple[int, str, str, int]]:
    """Every LISTEN socket (inet, v4 and v6) of ``processes``: (pid, name, ip, port)."""
    found = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            for conn in process.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found.append((process.pid, process.name(), conn.laddr.ip, conn.laddr.port))
    return found


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return (mapped or address).is_loopback


@needs_tmux
def test_r6_the_tui_opens_no_listening_port(ray_cluster):
    from tests.tmux import Pane

    pane = Pane([sys.executable, "-m", "raytop", "--address", ray_cluster.address])
    try:
        pane.wait_for(lambda s: ray_cluster.address in s, 60, "the TUI connected")
        time.sleep(3)  # a few polls
        tui = tui_process(pane)
        processes = [tui, *tui.children(recursive=True)]
        sockets = [c for p in processes for c in p.net_connections(kind="inet")]
        # The inspection sees the TUI's own client connection to the GCS ...
        gcs_port = int(ray_cluster.address.rsplit(":", 1)[1])
        assert any(c.raddr and c.raddr.port == gcs_port for c in sockets), sockets
        # ... and not one listening socket.
        assert listening(processes) == []
        figure("r6_tui_inet_sockets", len(sockets))
        figure("r6_tui_listening_sockets", 0)
    finally:
        pane.close()


def test_r6_the_embedded_cluster_binds_only_loopback(ray_cluster):
    from raytop.launch.cluster import embedded_record

    head = psutil.Process(embedded_record()["pid"])
    sockets = listening([head, *head.children(recursive=True)])
    assert len(sockets) >= 3, sockets  # at least the GCS, the raylet and the dashboard
    exposed = [s for s in sockets if not is_loopback(s[2])]
    figure("r6_cluster_listening_sockets", len(sockets))
    figure("r6_cluster_sockets_not_on_loopback", len(exposed))
    assert exposed == [], exposed
