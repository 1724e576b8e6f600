"""What a resume would do, and the experiments it could be done to (shared by
``diagnose.resume``, ``launch.control`` and the faces)."""

from __future__ import annotations

from dataclasses import dataclass

ERRORED_CHOICES = ("resume", "restart", "skip")


@dataclass(frozen=True)
class Checkpoint:
    dir_name: str
    epoch: int | None = None
    # Files (top-level names) its predecessor had and it lacks: shards that may not cover
    # every rank (a partial checkpoint after a worker failure, ray-project/ray#41700).
    previous: str | None = None  # the checkpoint compared with
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class PreviewRow:
    trial_id: str
    status: str
    checkpoint: str  # "checkpoint_… (epoch 3)" or "-"
    action: str


@dataclass(frozen=True)
class StoredExperiment:
    """An experiment folder found under a storage path (the Resume screen's list)."""

    path: str
    name: str
    status: str  # RUNNING, INTERRUPTED, FINISHED, … (ExperimentStatus value)
    trials: int
    can_restore: bool  # Tune's ``Tuner.can_restore``: its tuner.pkl is there
    running: bool  # its driver is alive: nothing to resume
    launched_by_raytop: bool  # raytop knows the spec it was launched with


@dataclass(frozen=True)
class ResumePreview:
    """What ``raytop resume PATH --errored E`` would do, before it does it."""

    path: str
    name: str
    status: str
    errored: str
    rows: tuple[PreviewRow, ...]
    warnings: tuple[str, ...]
