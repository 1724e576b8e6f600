"""The ranks of one Train run attempt, diff-updated by rank so the cursor survives ticks."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable

from raytop.diagnose.ledger import Thresholds, behind_by, worker_state
from raytop.model import TrainRun, Worker
from raytop.model.format import fmt_duration
from raytop.tui.format import fmt_bytes

THRESHOLDS = Thresholds()

# Column key -> (header, content width). The order is the display order.
_COLUMNS = {
    "rank": ("rank", 4),
    "node": ("node", 8),
    "pid": ("pid", 7),
    "entered": ("entered", 7),
    "exited": ("exited", 6),
    "behind": ("behind", 6),
    "last_report": ("last rep", 8),
    "heartbeat": ("beat", 6),
    "cpu": ("cpu%", 4),
    "rss": ("rss", 5),
    "state": ("state", 8),
}
_LEFT = frozenset({"node", "state"})
# Dropped first when the table is too narrow (at 80 columns: node, then rss).
_DROP_ORDER = ("node", "rss", "heartbeat", "cpu", "pid", "last_report")

STATES = ("training", "waiting", "behind", "silent", "dead", "done")


@dataclass(frozen=True)
class StateCell:
    """A rank's state, coloured when drawn (from the table's CSS, so themes apply).

    ``stalled``: the rank the others wait for (a barrier stall's missing rank)."""

    state: str
    stalled: bool
    table: WorkerTable = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.state

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.state, style=self.table.state_style(self.state, self.stalled), end="")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(len(self.state), len(self.state))


class WorkerTable(DataTable[object]):
    """One row per rank (keyed by the rank as a string); fixed column widths."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {
        *(f"worker-table--{state}" for state in STATES),
        "worker-table--stalled",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self._run: TrainRun | None = None
        self._stalled: frozenset[int] = frozenset()
        self._shown: tuple[str, ...] | None = None

    @property
    def columns_shown(self) -> tuple[str, ...]:
        return self._shown or ()

    @property
    def selected_rank(self) -> int | None:
        if self.row_count == 0:
            return None
        return int(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value or 0)

    def state_style(self, state: str, stalled: bool) -> Style:
        name = "worker-table--stalled" if stalled else f"worker-table--{state}"
        if name not in self.COMPONENT_CLASSES:
            return Style.null()
        return self.get_component_rich_style(name, partial=True)

    def show_run(self, run: TrainRun | None, stalled: Collection[int] = ()) -> None:
        """Make the rows match ``run.workers``: add, update changed cells, remove."""
        self._run = run
        self._stalled = frozenset(stalled)
        workers = sorted(run.workers, key=lambda w: w.rank) if run else []
        behind = behind_by(run) if run else {}
        with self.app.batch_update():
            selected = self._cursor_key()
            columns = self._ensure_columns()
            wanted = {str(w.rank): self._cells(w, run, behind, columns) for w in workers if run}
            present = {key.value for key in self.rows}
            stale = present - wanted.keys()
            if len(stale) > len(wanted):  # mostly new rows: one rebuild beats N removals
                self.clear()
                present = set()
            else:
                for key in stale:
                    self.remove_row(key)
            for key, cells in wanted.items():
                if key not in present:
                    self.add_row(*cells, key=key)
                    continue
                for column, new, old in zip(columns, cells, self.get_row(key), strict=True):
                    if new != old:
                        self.update_cell(key, column, new)
            if selected in wanted:
                row = self.get_row_index(selected)
                if row != self.cursor_row:
                    self.move_cursor(row=row)

    def on_resize(self) -> None:
        # Which columns fit depends on our width: rebuild them if that changed.
        self.show_run(self._run, self._stalled)

    def _cells(
        self, w: Worker, run: TrainRun, behind: dict[int, int], columns: tuple[str, ...]
    ) -> tuple[object, ...]:
        gap = behind.get(w.rank, 0)
        state = worker_state(w, run, THRESHOLDS)
        stalled = w.rank in self._stalled
        everything: dict[str, object] = {
            "rank": _right(str(w.rank)),
            "node": Text((w.node_id or "-")[:8], no_wrap=True),
            "pid": _right("-" if w.pid is None else str(w.pid)),
            "entered": _right(str(w.reports_entered)),
            "exited": _right(str(w.reports_exited)),
            "behind": Text(str(gap) if gap else "", justify="right", style="bold"),
            "last_report": _right(fmt_duration(w.last_report_age_s)),
            "heartbeat": _right(fmt_duration(w.heartbeat_age_s)),
            "cpu": _right("-" if w.cpu_percent is None else f"{w.cpu_percent:.0f}"),
            "rss": _right(fmt_bytes(w.rss_bytes)),
            "state": StateCell(state, stalled, self),
        }
        return tuple(everything[key] for key in columns)

    def _ensure_columns(self) -> tuple[str, ...]:
        """(Re)build the columns when the set that fits the width changes."""
        available = self.scrollable_content_region.width
        shown = list(_COLUMNS)
        for key in _DROP_ORDER:
            if self._width_of(shown) <= available:
                break
            shown.remove(key)
        layout = tuple(shown)
        if layout != self._shown:
            self._shown = layout
            self.clear(columns=True)
            for key in layout:
                header, width = _COLUMNS[key]
                justify = "left" if key in _LEFT else "right"
                label = Text(header, justify=justify, no_wrap=True, overflow="ellipsis")
                self.add_column(label, key=key, width=width)
        return layout

    def _width_of(self, keys: list[str]) -> int:
        return sum(_COLUMNS[key][1] + 2 * self.cell_padding for key in keys)

    def _cursor_key(self) -> str | None:
        if self.row_count == 0:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value


def _right(text: str) -> Text:
    return Text(text, justify="right", no_wrap=True)
