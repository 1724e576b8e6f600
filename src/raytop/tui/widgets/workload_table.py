"""The one list of everything that runs on the cluster (``Snapshot.workloads``): raytop's
experiments, Tune experiments it did not launch, Train runs of no experiment and jobs
running neither, live first, as the pipeline ordered them.

Each row says where it comes from (raytop, a Ray job's submission id and entrypoint, a
driver script), its status and how it ended, what it is doing and what its placement
groups hold. Keyed by ``kind:key`` so the cursor stays on its row; the screen that holds
the table decides what choosing a row does (``selected``).
"""

from __future__ import annotations

from rich.text import Text

from raytop.model.format import fmt_value
from raytop.model.workloads import KIND_EXPERIMENT, KIND_JOB, KIND_TRAIN_RUN, Workload
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import left, right

_COLUMNS = (
    ColumnSpec("status", "status", 11),
    ColumnSpec("kind", "what", 5),
    ColumnSpec("name", "run", 20),
    ColumnSpec("doing", "doing", 16),
    ColumnSpec("holds", "holds", 11, "right"),  # words: sorted by its text
    ColumnSpec("origin", "from", 16),
)
# A Tune experiment, a Train run of no experiment, a job running neither: in 5 columns.
KIND_WORDS = {KIND_EXPERIMENT: "Tune", KIND_TRAIN_RUN: "Train", KIND_JOB: "job"}


def row_key(workload: Workload) -> str:
    return f"{workload.kind}:{workload.key}"


def holds(workload: Workload) -> str:
    """``4 CPU 1 GPU``, ``+2 waiting`` for groups not placed yet; ``-`` for nothing."""
    parts = [f"{fmt_value(n)} {r}" for r, n in (("CPU", workload.cpu), ("GPU", workload.gpu)) if n]
    if workload.waiting:
        parts.append(f"+{workload.waiting} waiting")
    return " ".join(parts) or "-"


class WorkloadTable(KeyedTable):
    """One row per run of the cluster; ``selected`` is the highlighted row's workload."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: tuple[Workload, ...] = ()

    @property
    def selected(self) -> Workload | None:
        key = self.cursor_key()
        return next((w for w in self._rows if row_key(w) == key), None)

    def show_workloads(self, rows: tuple[Workload, ...]) -> None:
        self._rows = rows
        columns = self.fit_columns(
            list(_COLUMNS), drop=("kind", "doing"),
            grow={"name": 36, "doing": 34, "origin": None},
        )  # fmt: skip
        keys = tuple(c.key for c in columns)
        self.sync_rows({row_key(w): self._cells(w, keys) for w in rows}, columns)

    def on_resize(self) -> None:
        self.show_workloads(self._rows)

    @staticmethod
    def _cells(w: Workload, keys: tuple[str, ...]) -> tuple[object, ...]:
        # How it ended comes first in what it is doing: the status column stays short.
        doing = " · ".join(p for p in (w.how_ended, w.summary) if p)
        everything: dict[str, object] = {
            "status": Text(
                w.status, no_wrap=True, overflow="ellipsis", style="bold" if w.live else ""
            ),
            "kind": left(KIND_WORDS.get(w.kind, w.kind)),
            "name": Text(w.name, no_wrap=True, overflow="ellipsis"),
            "doing": Text(doing, no_wrap=True, overflow="ellipsis"),
            "holds": right(holds(w)),
            "origin": Text(w.origin_label, no_wrap=True, overflow="ellipsis"),
        }
        return tuple(everything[key] for key in keys)
