"""The Resume screen's two tables: the experiments under a storage path, and what a
resume would do to each trial of the chosen one.

Both are keyed (by experiment path, by trial id) so a re-list or a re-fetched preview
keeps the cursor on its row; both fit their columns to the width they get.
"""

from __future__ import annotations

from collections.abc import Sequence

from raytop.model.resume import PreviewRow, StoredExperiment
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import StyledCell, left, number

_EXPERIMENT_COLUMNS = (
    ColumnSpec("name", "experiment", 16),
    ColumnSpec("status", "status", 11),
    ColumnSpec("trials", "trials", 6, "right"),
    ColumnSpec("restore", "restore", 7),
    ColumnSpec("note", "note", 22),  # "not launched by raytop"
)
_EXPERIMENT_GROW: dict[str, int | None] = {"name": 40}
EXPERIMENT_STATES = ("running", "starting", "interrupted", "finished", "errored")

_PREVIEW_COLUMNS = (
    ColumnSpec("trial", "trial", 11),
    ColumnSpec("status", "status", 10),
    ColumnSpec("action", "on resume", 40),
    ColumnSpec("checkpoint", "latest checkpoint", 26),
)
# The action is what the user decides on: it takes the room, and the checkpoint goes
# when narrow (a resume's action names its checkpoint anyway; the screen shows the
# highlighted row's in full).
_PREVIEW_DROP = ("checkpoint",)
_PREVIEW_GROW: dict[str, int | None] = {"action": None, "checkpoint": 36}
TRIAL_STATES = ("running", "pending", "paused", "terminated", "error")
ACTIONS = ("resume", "restart", "start", "skip")


def experiment_note(experiment: StoredExperiment) -> str:
    """Why raytop cannot resume it, else ``resumable``."""
    reasons = []
    if experiment.running:
        reasons.append("running")
    if not experiment.launched_by_raytop:
        reasons.append("not launched by raytop")
    if not experiment.can_restore:
        reasons.append("no tuner.pkl")
    return ", ".join(reasons) or "resumable"


def action_kind(action: str) -> str:
    """``resume``, ``restart``, ``start`` (from scratch: no checkpoint) or ``skip``."""
    return next((kind for kind in ACTIONS if action.startswith(kind)), "skip")


class StoredExperimentTable(KeyedTable):
    """One row per experiment folder, keyed by its path, in the order given (newest
    first)."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        *(f"stored-experiment--{state}" for state in EXPERIMENT_STATES),
        "stored-experiment--resumable",
        "stored-experiment--blocked",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._experiments: tuple[StoredExperiment, ...] = ()

    @property
    def experiments(self) -> tuple[StoredExperiment, ...]:
        return self._experiments

    @property
    def selected_path(self) -> str | None:
        return self.cursor_key()

    def show_experiments(self, experiments: Sequence[StoredExperiment]) -> None:
        self._experiments = tuple(experiments)
        columns = self.fit_columns(_EXPERIMENT_COLUMNS, grow=_EXPERIMENT_GROW)
        self.sync_rows({e.path: self._cells(e) for e in self._experiments}, columns)

    def on_resize(self) -> None:
        self.show_experiments(self._experiments)

    def _cells(self, experiment: StoredExperiment) -> tuple[object, ...]:
        note = experiment_note(experiment)
        resumable = note == "resumable"
        return (
            left(experiment.name),
            StyledCell(experiment.status, f"stored-experiment--{experiment.status.lower()}", self),
            number(str(experiment.trials), experiment.trials),
            left("yes" if experiment.can_restore else "no"),
            StyledCell(note, f"stored-experiment--{'resumable' if resumable else 'blocked'}", self),
        )


class ResumePreviewTable(KeyedTable):
    """One row per trial: its status, its latest checkpoint, what the resume does."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        *(f"resume-preview--{state}" for state in TRIAL_STATES),
        *(f"resume-action--{kind}" for kind in ACTIONS),
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: tuple[PreviewRow, ...] = ()

    @property
    def selected_row(self) -> PreviewRow | None:
        key = self.cursor_key()
        return next((r for r in self._rows if r.trial_id == key), None)

    def show_rows(self, rows: Sequence[PreviewRow]) -> None:
        self._rows = tuple(rows)
        columns = self.fit_columns(_PREVIEW_COLUMNS, drop=_PREVIEW_DROP, grow=_PREVIEW_GROW)
        keys = tuple(column.key for column in columns)
        self.sync_rows({r.trial_id: self._cells(r, keys) for r in self._rows}, columns)

    def on_resize(self) -> None:
        self.show_rows(self._rows)

    def _cells(self, row: PreviewRow, columns: tuple[str, ...]) -> tuple[object, ...]:
        everything: dict[str, object] = {
            "trial": left(row.trial_id),
            "status": StyledCell(row.status, f"resume-preview--{row.status.lower()}", self),
            "action": StyledCell(row.action, f"resume-action--{action_kind(row.action)}", self),
            "checkpoint": left(row.checkpoint.removeprefix("checkpoint_")),  # the header says it
        }
        return tuple(everything[key] for key in columns)
