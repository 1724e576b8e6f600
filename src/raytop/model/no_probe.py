"""Why a Train run has no probe report: one typed reason per run, never a silent blank.

A run raytop did not launch shows per-rank counts only when raytop's probe runs in its
workers. Train builds the callbacks named in ``RAY_TRAIN_CALLBACKS`` in the process that
constructs the trainer (``DataParallelTrainer._create_default_callbacks`` calls
``_initialize_env_callbacks``, ray/train/v2/api/data_parallel_trainer.py, the same on Ray
2.58, 2.59 and 2.60): a job's driver, or a Tune trial's actor. So the evidence for why a
run is silent is that process's environment, and what the probe itself filed when it
could not hook (``model.records.ProbeProblem``). ``diagnose.no_probe`` weighs it.

Stdlib only (``model`` floor).
"""

from __future__ import annotations

from dataclasses import dataclass

PROBE_CALLBACK = "raytop.probe.ReportProbe"  # what RAY_TRAIN_CALLBACKS must name
CALLBACKS_ENV = "RAY_TRAIN_CALLBACKS"

# The kinds of reason, in ``status --json`` (docs/schema.md):
WAITING = "waiting"  # seen for less than the bound: the first report may still come
CALLBACKS_UNSET = "callbacks_unset"  # the trainer's process does not name the probe
HOOKS_UNFIT = "hooks_unfit"  # the probe ran and filed why it cannot count on this Ray
SILENT = "silent"  # the probe is named where the trainer was built, yet no report came
UNKNOWN = "unknown"  # the trainer's process is not readable from here
NO_PROBE_KINDS = (WAITING, CALLBACKS_UNSET, HOOKS_UNFIT, SILENT, UNKNOWN)
# Each kind in a few words, for a run's one-line summary in the list of runs.
SHORT = {
    WAITING: "no probe report yet",
    CALLBACKS_UNSET: "no probe: RAY_TRAIN_CALLBACKS not set",
    HOOKS_UNFIT: "no probe: its hooks do not fit this Ray",
    SILENT: "no probe report",
    UNKNOWN: "no probe",
}


@dataclass(frozen=True)
class NoProbe:
    """Why a run has no probe report: ``kind`` (one of ``NO_PROBE_KINDS``) and one line
    saying it, with what to do."""

    kind: str
    line: str

    @property
    def short(self) -> str:
        return SHORT.get(self.kind, "no probe")


@dataclass(frozen=True)
class TrainerEnv:
    """What raytop could read of the process that built a run's trainer. ``read``: its
    environment was read (it runs on this node and is the process the cluster names);
    then ``callbacks`` is its ``RAY_TRAIN_CALLBACKS`` (None: not set). ``who`` names the
    process in words ("job 03000000's driver (pid 4242)")."""

    who: str
    read: bool = False
    callbacks: str | None = None


def names_probe(callbacks: str | None) -> bool:
    """Whether a ``RAY_TRAIN_CALLBACKS`` value names raytop's probe (Train splits it on
    commas and strips each name)."""
    return PROBE_CALLBACK in {name.strip() for name in (callbacks or "").split(",")}


# What Ray says when Train cannot build a callback RAY_TRAIN_CALLBACKS names
# (``_initialize_env_callbacks``, the same on Ray 2.58 to 2.60).
_IMPORT_FAILED = f"Failed to import callback from '{PROBE_CALLBACK}'"


def job_needs_probe(message: str | None) -> str | None:
    """How a job ended, in words, when its message says Train could not import raytop's
    probe (None otherwise)."""
    if not message or _IMPORT_FAILED not in message:
        return None
    return (f"failed: {CALLBACKS_ENV} names {PROBE_CALLBACK}, but raytop is not installed "
            f"where Train imports it (the trainer's process or its workers)")  # fmt: skip
