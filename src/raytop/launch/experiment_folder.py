"""What an experiment folder already holds, that a new run must never reuse silently.

A folder holding Tune's state (``tuner.pkl``, ``experiment_state-*.json``) is an experiment
``resume`` continues. A folder holding only Train runs with checkpoint snapshots is a
trap: Train V2 resumes a run by its name and storage path alone (a second run of the same
name loads the snapshot and resumes from its latest checkpoint), so a new sweep whose
trials take those run names would silently continue them. ``run`` and ``resume`` both
read it here.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from raytop.model.paths import join_path
from raytop.rundir import TRAIN_RUNS_DIR
from raytop.sources.checkpoints import SNAPSHOT_FILE
from raytop.sources.storage import open_storage
from raytop.sources.storage_base import Entry, Storage


def holds_tune_state(storage: Storage) -> bool:
    """Whether the storage's root holds Tune's state (a local folder or remote), from one
    listing of it (a remote one that cannot be reached takes seconds to say so)."""
    return lists_tune_state(storage.listing("") or [])


def lists_tune_state(entries: list[Entry]) -> bool:
    """Whether a folder's listing holds Tune's state."""
    names = [e.name for e in entries]
    return "tuner.pkl" in names or bool(fnmatch.filter(names, "experiment_state-*.json"))


def holds_tune_experiment(experiment_path: str) -> bool:
    """Whether ``experiment_path`` (a folder or ``s3://…``) already holds Tune's state."""
    return holds_tune_state(open_storage(experiment_path, watch=False))


def train_runs_with_checkpoints(experiment_path: str) -> list[str]:
    """The Train runs under ``experiment_path`` that have a checkpoint snapshot: a trial
    taking one of these run names would resume from it."""
    storage = open_storage(experiment_path, watch=False)
    runs = [e.name for e in storage.listing(TRAIN_RUNS_DIR) or [] if e.is_dir]
    return sorted(r for r in runs if storage.exists(join_path(TRAIN_RUNS_DIR, r, SNAPSHOT_FILE)))


@dataclass(frozen=True)
class ExistingExperiment:
    """What already sits in a run's experiment folder: never reused silently.

    ``resumable``: it holds Tune's state (``run --resume`` continues it); else it holds
    Train runs with checkpoints a new sweep's trials would silently resume from.
    ``refusal`` is the line shown when ``run`` is given neither flag."""

    resumable: bool
    refusal: str


def existing_experiment(path: str) -> ExistingExperiment | None:
    """What ``path`` (a folder or ``s3://…``) already holds that a new run must not reuse."""
    if holds_tune_experiment(path):
        return ExistingExperiment(True, (
            f"{path} already holds an experiment: `raytop resume {path}` (or run --resume) "
            "continues it, run --new-name starts a fresh one beside it; nothing was changed"
        ))  # fmt: skip
    if runs := train_runs_with_checkpoints(path):
        return ExistingExperiment(False, (
            f"{path} holds Train runs with checkpoints ({', '.join(runs[:3])}) but no Tune "
            "experiment to resume: new trials would resume from them; run --new-name starts "
            "a fresh experiment beside it; nothing was changed"
        ))  # fmt: skip
    return None
