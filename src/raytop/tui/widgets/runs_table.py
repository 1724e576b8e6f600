"""The Train runs of no watched experiment: ones started by a plain script (with raytop's
probe through ``RAY_TRAIN_CALLBACKS``, or with none), or by another person's sweep.

Keyed by run id and diff-updated like the other tables. A run with no probe shows what the
actor table says (its workers, where they run) and ``no probe`` where counts would be.
"""

from __future__ import annotations

from rich.text import Text

from raytop.model import TrainRun
from raytop.model.train_run import RUN_FROM_TRAIN_STATE
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import left, number

_COLUMNS = (
    ColumnSpec("run", "run", 24),
    ColumnSpec("attempt", "att", 3, "right"),
    ColumnSpec("ranks", "ranks", 5, "right"),
    ColumnSpec("reports", "reports", 9, "right"),
    ColumnSpec("state", "state", 9),
    ColumnSpec("nodes", "nodes", 8),
)
NO_PROBE = "no probe"


def run_state(run: TrainRun) -> str:
    if not run.instrumented:
        return NO_PROBE
    if run.finished:
        return "finished"
    return "running"


def report_range(run: TrainRun) -> tuple[str, int | None]:
    """``12`` or ``11-12`` (fewest-most reports entered by a rank), sorted by the fewest;
    ``-`` with no probe."""
    if not run.instrumented or not run.workers:
        return "-", None
    counts = [w.reports_entered for w in run.workers]
    low, high = min(counts), max(counts)
    return (str(high) if low == high else f"{low}-{high}"), low


def _attempt_known(run: TrainRun) -> bool:
    """Its probe counts its attempts, or Train's own state does; not the actor table."""
    return run.instrumented or run.source == RUN_FROM_TRAIN_STATE


class RunsTable(KeyedTable):
    """One row per run, by run name."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._runs: tuple[TrainRun, ...] = ()

    @property
    def selected_run_id(self) -> str | None:
        return self.cursor_key()

    def show_runs(self, runs: tuple[TrainRun, ...]) -> None:
        self._runs = runs
        columns = self.fit_columns(list(_COLUMNS), drop=("nodes",), grow={"run": None})
        keys = tuple(c.key for c in columns)
        ordered = sorted(runs, key=lambda r: (not r.instrumented, r.run_name))
        self.sync_rows({r.run_id: self._cells(r, keys) for r in ordered}, columns)

    def on_resize(self) -> None:
        self.show_runs(self._runs)

    @staticmethod
    def _cells(run: TrainRun, keys: tuple[str, ...]) -> tuple[object, ...]:
        nodes = sorted({(w.node_id or "?")[:8] for w in run.workers})
        everything: dict[str, object] = {
            "run": Text(run.run_name, no_wrap=True, overflow="ellipsis"),
            "attempt": number(str(run.attempt_index), run.attempt_index)
            if _attempt_known(run)
            else number("-", None),
            "ranks": number(str(run.world_size), run.world_size),
            "reports": number(*report_range(run)),
            "state": left(run_state(run)),
            "nodes": left(" ".join(nodes)),
        }
        return tuple(everything[key] for key in keys)
