"""End to end, as a user meets it: ``raytop run`` in a real terminal (tmux), the sweep live
on screen, ``q`` leaves the run going, and a bare ``raytop`` re-attaches; a stopped
experiment resumed from the TUI's Resume screen, after its preview and a confirmation."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import experiment_status, launch_run, run_raytop, wait_for

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Pane:
    def __init__(self, command: list[str], size=(100, 30)) -> None:
        self.name = f"raytop-e2e-{uuid.uuid4().hex[:8]}"
        env = " ".join(
            f"{k}={shlex.quote(os.environ[k])}" for k in ("RAYTOP_HOME", "PATH") if k in os.environ
        )
        shell = f"env {env} TERM=xterm-256color {shlex.join(command)}; echo EXITED=$?; sleep 60"
        # A tmux server of its own (-L): no race with another pane's server shutting down.
        self.tmux = ["tmux", "-L", self.name]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", str(size[0]),
             "-y", str(size[1]), shell],
            check=True,
        )  # fmt: skip

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        ).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, predicate, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def test_run_shows_the_sweep_live_and_quitting_leaves_it_running(ray_cluster, example_copy):
    spec = example_copy(
        "scalar.toml", "scalar_objective.py", edit={"steps = 3": "steps = 40"}
    )  # ~8 s per trial: long enough to quit while it runs
    raytop = [sys.executable, "-m", "raytop"]
    pane = Pane([*raytop, "run", str(spec), "--address", ray_cluster.address])
    try:
        screen = pane.wait_for(lambda s: "RUNNING" in s and "x=" in s, 90, "running trials")
        assert ray_cluster.address in screen
        pane.keys("q")
        screen = pane.wait_for(lambda s: "EXITED=" in s, 20, "raytop to exit")
        assert "EXITED=0" in screen
        assert "the run keeps going" in screen
    finally:
        pane.close()

    # The driver survived the TUI; re-attaching shows the sweep finishing.
    attach = Pane([*raytop, "--address", ray_cluster.address])
    try:
        screen = attach.wait_for(
            lambda s: s.count("TERMINATED") >= 4 and "FINISHED" in s, 120, "the sweep to finish"
        )
        assert "scalar" in screen
        attach.keys("q")
        attach.wait_for(lambda s: "EXITED=0" in s, 20, "raytop to exit")
    finally:
        attach.close()


def test_resume_screen_previews_then_resumes_a_stopped_experiment(ray_cluster, example_copy):
    spec = example_copy("scalar.toml", "scalar_objective.py",
                        edit={"steps = 3": "steps = 100", "[1, 2, 3, 4]": "[1, 2]"})  # fmt: skip
    experiment = spec.parent / "results" / "scalar"
    watcher = launch_run(spec, ray_cluster.address)

    def running():
        trials = experiment_status(ray_cluster.address, experiment)["trials"]
        return experiment.is_dir() and any(t["iterations"] > 2 for t in trials)

    wait_for(lambda: experiment.is_dir() and running(), 120, "the trials to run")
    assert run_raytop("stop", str(experiment), "--yes").returncode == 0
    watcher.wait(timeout=60)
    assert experiment_status(ray_cluster.address, experiment)["status"] == "INTERRUPTED"

    pane = Pane([sys.executable, "-m", "raytop", "--address", ray_cluster.address])
    try:
        pane.wait_for(lambda s: "INTERRUPTED" in s, 60, "the stopped experiment")
        pane.keys("u")
        screen = pane.wait_for(lambda s: "resumable" in s and "start from scratch" in s, 60,
                               "the experiment list and its preview")  # fmt: skip
        assert "errored trials" in screen
        pane.keys("a")
        pane.wait_for(lambda s: "Resume" in s and "scalar" in s and "[y]" in s.lower()
                      or "yes" in s.lower(), 20, "the confirmation")  # fmt: skip
        pane.keys("y")
        pane.wait_for(lambda s: "resumed 'scalar'" in s, 60, "the resume to be launched")
        done = wait_for(
            lambda: (e := experiment_status(ray_cluster.address, experiment))["status"]
            == "FINISHED" and e,
            180, "the resumed experiment to finish",
        )  # fmt: skip
        assert [t["status"] for t in done["trials"]] == ["TERMINATED", "TERMINATED"]
        assert all(t["iterations"] == 100 for t in done["trials"])
    finally:
        pane.close()
        run_raytop("stop", str(experiment), "--yes")
