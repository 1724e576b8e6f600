"""Starting the detached Tune driver, which outlives the terminal that started it.

``launch(spec, target)`` starts ``python -m raytop.launch.driver`` (``launch/driver.py``,
the process itself) in its own session with its output in ``<raytop_dir>/driver.log`` and,
once the process's command line shows the driver, writes ``driver.json`` (pid and its
start time, host, spec, address, experiment path, and the trials the sweep will have in
all: Tune creates them lazily, so a face shows "2 of 4 trials" while only two exist).
The raytop dir sits inside the experiment folder for local storage (see ``raytop.rundir``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from raytop.home import register_experiment
from raytop.jsonfile import open_log, read_json, write_atomic, write_json_atomic
from raytop.launch.cluster import LOOPBACK_ENV, Target
from raytop.launch.planning import trial_count
from raytop.launch.preflight import preflight
from raytop.launch.spec import RunSpec
from raytop.process_identity import DRIVER_MODULE, start_stamp, wait_until_shown
from raytop.rundir import STOP_MARKER, TRIALS_INDEX, TRIALS_WHOLE, raytop_dir_for

# Set for launched drivers unless the user set them; Ray propagates RAY_TRAIN_* variables
# set in the driver's environment to the Train controller and workers. Train's controller
# takes one report per worker per poll, every RAY_TRAIN_HEALTH_CHECK_INTERVAL_S (2 s by
# default), and a worker's next report() waits for it: at 0.5 s a report reaches the
# screen within a second.
DRIVER_ENV_DEFAULTS = {
    "RAY_TRAIN_ENABLE_STATE_TRACKING": "1",
    "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5",
    # A missing metric becomes a raytop finding instead of crashing the whole sweep.
    "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",
    "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
}


@dataclass(frozen=True)
class Launched:
    pid: int
    raytop_dir: Path
    log_path: Path


def launch(spec: RunSpec, target: Target, errored: str | None = None) -> Launched:
    """Start the detached driver: a new sweep, or (``errored`` set: resume | restart | skip)
    ``Tuner.restore`` of the experiment, with what to do with its errored trials.

    Only raytop's own bookkeeping of the previous driver is replaced; Tune's and Train's
    files are never touched here. ``preflight`` first (SpecError, one line): every launch
    and actual resume imports the entrypoint and proves the storage writable here."""
    preflight(spec)
    raytop_dir = raytop_dir_for(spec.experiment_path, spec.experiment.name)
    raytop_dir.mkdir(parents=True, exist_ok=True)
    spec_file = str(spec.path)
    if errored is not None:  # a resume runs the copy saved at launch: keep naming the user's
        previous = read_json(raytop_dir / "driver.json")
        if isinstance(previous, dict) and isinstance(previous.get("spec"), str):
            spec_file = previous["spec"]
    for stale in ("exit.json", TRIALS_WHOLE, TRIALS_INDEX, "job.json", STOP_MARKER):
        (raytop_dir / stale).unlink(missing_ok=True)
    if errored is None:  # the bytes validated, not the file as it may be by now
        write_atomic(raytop_dir / "spec.toml", spec.source)
    log_path = raytop_dir / "driver.log"
    env = {**DRIVER_ENV_DEFAULTS, **os.environ}
    env.pop("RAY_ADDRESS", None)  # the driver gets the resolved address explicitly
    if target.loopback_only:
        env.update(LOOPBACK_ENV)
    with open_log(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", DRIVER_MODULE, str(spec.path),
             "--address", target.address, "--raytop-dir", str(raytop_dir),
             "--name", spec.experiment.name, "--storage-path", spec.experiment.storage_path,
             "--spec-dir", str(spec.spec_dir),
             *(["--restore", errored] if errored else [])],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env, cwd=spec.spec_dir,
        )  # fmt: skip
    # Recorded once its command line shows the driver: a reader then proves it at once.
    wait_until_shown(proc.pid, lambda: proc.poll() is not None, DRIVER_MODULE)
    write_json_atomic(
        raytop_dir / "driver.json",
        {
            "pid": proc.pid,
            # With the pid, what proves later that a live pid is still this driver.
            **start_stamp(proc.pid),
            "host": socket.gethostname(),
            "spec": spec_file,
            "address": target.address,
            "experiment_name": spec.experiment.name,
            "experiment_path": spec.experiment_path,
            "metric": spec.tune.metric,
            "mode": spec.tune.mode,
            "trials_total": trial_count(spec),  # grid points × num_samples
            "started_at": time.time(),
        },
    )
    register_experiment(spec.experiment.name, spec.experiment_path, raytop_dir)
    return Launched(proc.pid, raytop_dir, log_path)
