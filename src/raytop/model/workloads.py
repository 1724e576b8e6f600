"""The one list of everything that runs on the cluster (``Snapshot.workloads``).

One row per thing a user would call "a run": an experiment raytop launched, a Tune
experiment it did not launch (found in Tune's default storage or under ``--storage``), a
Train run outside any experiment, and a job that runs neither (a plain Ray script), live
ones first. Each row carries everything a face shows, derived once by the pipeline
(``pipeline.workloads``): where it comes from, its status and how it ended, what it holds
now. A face displays the row; it never parses one of its strings back.
"""

from __future__ import annotations

from dataclasses import dataclass

# What the row is (``Workload.kind``).
KIND_EXPERIMENT = "experiment"  # a Tune experiment (``Snapshot.experiments``, same path)
KIND_TRAIN_RUN = "train_run"  # a Train run of no experiment (``Snapshot.runs``, same run_id)
KIND_JOB = "job"  # a job running neither (``Snapshot.jobs``, same job_id)

# Where it comes from (``Workload.origin``).
ORIGIN_RAYTOP = "raytop"  # launched by ``raytop run`` (or resumed by raytop)
ORIGIN_RAY_JOB = "ray_job"  # a ``ray job submit`` entrypoint (submission id, entrypoint)
ORIGIN_DRIVER = "driver_script"  # a script connected to the cluster as a driver
ORIGIN_UNKNOWN = "unknown"  # no job of this cluster is known to run it (history, or
# jobs submitted together that the evidence cannot tell apart)

# Status of a Train run or a job row (an experiment row has its ExperimentStatus).
RUNNING, ENDED, FINISHED, UNKNOWN = "RUNNING", "ENDED", "FINISHED", "UNKNOWN"


@dataclass(frozen=True)
class Workload:
    """One row. ``key`` finds its object: the experiment's path, the Train run's
    ``run_id`` or the job's ``job_id`` (by ``kind``). ``origin_label``: where it comes
    from, display-ready ("raytop", "Ray job raysubmit_…: python -m …", "driver script:
    python train.py"). ``status``: an experiment's ``ExperimentStatus``, or RUNNING,
    ENDED, FINISHED, UNKNOWN; ``how_ended``: one line once it ended and the job says how
    (stopped, failed: <Ray's message>, driver died, driver exited, succeeded; or "driver
    gone" for an experiment with unfinished trials). ``summary``: what it is doing, one
    line ("20 trials: 2 running, 18 pending", "4 ranks", "3 trials could resume").
    ``cpu``/``gpu``: what its placement groups hold now (placed bundles); ``waiting``:
    its groups not placed yet."""

    kind: str
    key: str
    name: str
    origin: str
    origin_label: str
    status: str
    live: bool
    how_ended: str | None = None
    summary: str = ""
    job_id: str | None = None
    submission_id: str | None = None
    entrypoint: str | None = None
    cpu: float = 0.0
    gpu: float = 0.0
    waiting: int = 0
    # Trials of an experiment that a resume would run again (not TERMINATED nor ERROR)
    # once its driver is gone; 0 otherwise.
    resumable: int = 0


@dataclass(frozen=True)
class OlderExperiments:
    """Experiment folders under one of Tune's default storage folders that were not
    read (older than a day and than every live job): ``count`` of them under ``root``.
    ``SnapshotCollector.show_all_experiments`` reads them too."""

    root: str
    count: int


def others_line(workloads: tuple[Workload, ...], own: frozenset[str]) -> str | None:
    """One line on every row but ``own`` (keys: the experiments a ``raytop run`` view is
    about), for the view that shows only those: "2 other runs (1 live) hold 4 CPU, 1
    waits". None when there is no other row. Sums what the rows already say."""
    others = [w for w in workloads if w.key not in own]
    if not others:
        return None
    live = sum(w.live for w in others)
    word = "other run" if len(others) == 1 else "other runs"
    line = f"{len(others)} {word}" + (f" ({live} live)" if live and live < len(others) else "")
    cpu, gpu = sum(w.cpu for w in others), sum(w.gpu for w in others)
    held = [f"{_number(n)} {r}" for r, n in (("CPU", cpu), ("GPU", gpu)) if n]
    if held:
        line += (" hold " if len(others) > 1 else " holds ") + ", ".join(held)
    waiting = sum(w.waiting for w in others)
    return line + (f", {waiting} waiting to place" if waiting else "")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
