"""Changing a running experiment, gracefully: stop it, or stop one trial.

Experiment stop is SIGINT to the detached driver: Tune saves the experiment state, syncs it
and returns (RAY_NOTES f), so the experiment stays resumable. A single trial is stopped by
the driver's ``TrialStopper`` at the trial's next result. Nothing here deletes anything.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from raytop.home import write_json_atomic
from raytop.model import Experiment
from raytop.rundir import STOP_MARKER, STOP_REQUESTS, driver_alive, raytop_dir_for


class ControlError(RuntimeError):
    """Why the stop could not be asked for (one line)."""


def stop_trial(raytop_dir: Path, trial_id: str) -> None:
    _, alive = driver_alive(raytop_dir)
    if not alive:
        raise ControlError(f"{raytop_dir.parent.name}: its driver is not running here")
    requests = raytop_dir / STOP_REQUESTS
    stopping = set(json.loads(requests.read_text())) if requests.exists() else set()
    write_json_atomic(requests, sorted(stopping | {trial_id}))


def stop_experiment(
    raytop_dir: Path,
    wait_s: float = 120.0,
    progress: Callable[[str], None] = lambda _msg: None,
) -> bool:
    """Ask the driver to stop; True once it has exited (within ``wait_s``; 0: don't wait)."""
    pid, alive = driver_alive(raytop_dir)
    if not alive or pid is None:
        raise ControlError(f"{raytop_dir.parent.name}: its driver is not running here")
    # Tune ends the trials it interrupts as if they finished; the marker tells readers to
    # trust Tune's saved (restorable) state over the driver's last live table.
    write_json_atomic(raytop_dir / STOP_MARKER, {"requested_at": time.time()})
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + wait_s
    while driver_alive(raytop_dir)[1]:
        if time.monotonic() >= deadline:
            return False
        progress("waiting for the driver to save its state and exit…")
        time.sleep(2)
    return True


class ExperimentControls:
    """What the TUI is given to act with (``raytop.tui.controls``): stops keyed by the
    experiment on screen. Experiment stop does not wait: the TUI shows the driver go."""

    def stop_experiment(self, experiment: Experiment) -> None:
        stop_experiment(raytop_dir_for(experiment.path, experiment.name), wait_s=0)

    def stop_trial(self, experiment: Experiment, trial_id: str) -> None:
        stop_trial(raytop_dir_for(experiment.path, experiment.name), trial_id)
