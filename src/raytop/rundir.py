"""The raytop dir of a launched run: what the detached driver leaves for the faces.

``driver.json`` (pid, host, spec, address, metric), ``exit.json`` (written when the
driver ends), ``trials.json`` (the TrialProbe's live table), ``spec.toml`` (the spec as
launched) and ``driver.log``. It sits inside the experiment folder for local storage, else
under ``$RAYTOP_HOME/runs/<name>``.
"""

from __future__ import annotations

import socket
from pathlib import Path

from raytop.home import raytop_home, read_json

RAYTOP_DIR_NAME = ".raytop"
TRAIN_RUNS_DIR = "train_runs"  # under the experiment folder: one Train run per torch trial
STOP_REQUESTS = "stop_trials.json"  # in the raytop dir: trial ids the driver's stopper ends
STOP_MARKER = "stop_requested.json"  # the user stopped the whole experiment (resumable)


def train_run_name(experiment_name: str, trial_id: str) -> str:
    """Unique per trial, stable across Tune retries and restores: a retried or restored
    trial resumes its Train run from the run's checkpoint snapshot (RAY_NOTES b, e)."""
    return f"{experiment_name}-{trial_id}"


def is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def join_path(base: str, *parts: str) -> str:
    """``base/part/…``; a URI's query (``s3://b/p?endpoint_override=…``, as pyarrow and Ray
    take it) stays at the end."""
    path, sep, query = base.partition("?") if is_uri(base) else (base, "", "")
    return "/".join([path.rstrip("/"), *parts]) + sep + query


def split_path(path: str) -> tuple[str, str]:
    """(parent, name) of a folder path or URI; a URI's query stays on the parent."""
    bare, sep, query = path.partition("?") if is_uri(path) else (path, "", "")
    parent, _, name = bare.rstrip("/").rpartition("/")
    return parent + sep + query, name


def local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def raytop_dir_for(experiment_path: str, name: str) -> Path:
    if is_uri(experiment_path):
        return raytop_home() / "runs" / name
    return Path(local_path(experiment_path)) / RAYTOP_DIR_NAME


def driver_alive(raytop_dir: Path) -> tuple[int | None, bool | None]:
    """(pid, alive) of the driver recorded in ``raytop_dir``; alive is None when it ran on
    another host (cannot tell from here)."""
    info = read_json(raytop_dir / "driver.json")
    if not info:
        return None, None
    pid = int(info["pid"])
    if (raytop_dir / "exit.json").exists():
        return pid, False
    if info.get("host") != socket.gethostname():
        return pid, None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid, False
    return pid, b"raytop.launch.driver" in cmdline
