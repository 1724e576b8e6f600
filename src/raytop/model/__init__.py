"""Frozen, stdlib-only data the whole product passes around.

Everything the sources collect becomes these objects; the TUI, ``status --json`` and
``check`` all read the same ``Snapshot``. Nothing here may import ray or textual.
"""

from raytop.model.cluster import Bundle, Cluster, HostStats, Node, PlacementGroup
from raytop.model.finding import Finding, Severity
from raytop.model.snapshot import (
    TERMINAL_TRIAL_STATUSES,
    Experiment,
    ExperimentStatus,
    LedgerStatus,
    Snapshot,
    StacksCapture,
    Trial,
)
from raytop.model.train_run import (
    Activity,
    Attempt,
    CheckpointRecord,
    RetryBudget,
    TrainRun,
    Worker,
)

__all__ = [
    "Activity",
    "TERMINAL_TRIAL_STATUSES",
    "Attempt",
    "Bundle",
    "CheckpointRecord",
    "Cluster",
    "Experiment",
    "ExperimentStatus",
    "Finding",
    "HostStats",
    "LedgerStatus",
    "Node",
    "PlacementGroup",
    "RetryBudget",
    "Severity",
    "Snapshot",
    "StacksCapture",
    "TrainRun",
    "Trial",
    "Worker",
]
