"""The raytop dir of a launched run: what the detached driver leaves for the faces.

``driver.json`` (pid, host, spec, address, metric), ``exit.json`` (written when the
driver ends), ``trials/`` (the TrialProbe's live table, in segments: ``probe.trial_table``;
a driver of an older raytop wrote it whole, as ``trials.json``), ``spec.toml`` (the spec as
launched) and ``driver.log``; ``captures/<UTC time>/`` (each stacks request's answers,
written by raytop's process: ``pipeline.captures``) and ``flight_recorder/<trial id>/``
(PyTorch's Flight Recorder dumps of a torch trial on GPUs, written by the workers). It
sits inside the experiment folder for local storage, else under ``$RAYTOP_HOME/runs/<name>``.
"""

from __future__ import annotations

from pathlib import Path

from raytop.home import raytop_home
from raytop.model.paths import is_uri, local_path

RAYTOP_DIR_NAME = ".raytop"
TRAIN_RUNS_DIR = "train_runs"  # under the experiment folder: one Train run per torch trial
TRIALS_DIR = "trials"  # in the raytop dir: the TrialProbe's table, <k>.json and index.json
TRIALS_INDEX = f"{TRIALS_DIR}/index.json"  # written after the segments it names
TRIALS_WHOLE = "trials.json"  # the table as one file, as a driver of an older raytop wrote it
STOP_REQUESTS = "stop_trials.json"  # in the raytop dir: trial ids the driver's stopper ends
STOP_MARKER = "stop_requested.json"  # the user stopped the whole experiment (resumable)
CAPTURES_DIR = "captures"  # in the raytop dir (or $RAYTOP_HOME): one folder per capture
FLIGHT_RECORDER_DIR = "flight_recorder"  # in the raytop dir: <trial id>/rank_<N> dumps


def train_run_name(experiment_name: str, trial_id: str) -> str:
    """Unique per trial, stable across Tune retries and restores: a retried or restored
    trial resumes its Train run from the run's checkpoint snapshot
    (docs/RAY_FACTS.md#train-resume-by-name, docs/RAY_FACTS.md#tune-train-nesting)."""
    return f"{experiment_name}-{trial_id}"


def trials_segment(k: int) -> str:
    """The k-th segment of the TrialProbe's table, relative to the raytop dir."""
    return f"{TRIALS_DIR}/{k}.json"


def raytop_dir_for(experiment_path: str, name: str) -> Path:
    if is_uri(experiment_path):
        return raytop_home() / "runs" / name
    return Path(local_path(experiment_path)) / RAYTOP_DIR_NAME
