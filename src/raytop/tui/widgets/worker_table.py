"""The ranks of one Train run attempt, diff-updated by rank so the cursor survives ticks.

Each rank's state, reports-behind and rate are the pipeline's (``Worker.state``,
``Worker.behind``, ``Worker.rate_per_min``, derived once per snapshot with the collector's
thresholds): the table only displays them, so a redraw is O(ranks) and agrees with the
findings and the dashboard.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

from rich.text import Text

from raytop.model import TrainRun, Worker
from raytop.model.format import fmt_duration
from raytop.tui.format import fmt_bytes, fmt_rate
from raytop.tui.glyphs import UNICODE, glyphs_of
from raytop.tui.widgets import share_bar
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import LazyRow, SortedCell, StyledCell, number

BAR_WIDTH = 10  # the time-share bar's cells (``share_bar``)
# Column key -> (header, content width). The order is the display order.
_COLUMNS = {
    "rank": ("rank", 4),
    "node": ("node", 8),
    "pid": ("pid", 7),
    "entered": ("entered", 7),
    "exited": ("exited", 6),
    "behind": ("behind", 6),
    "last_report": ("last rep", 8),
    "rate": ("rate", 6),
    "heartbeat": ("beat", 6),
    "cpu": ("cpu%", 4),
    "gpu": ("gpu%", 4),
    "rss": ("rss", 5),
    "time": ("time", BAR_WIDTH),
    "state": ("state", 8),
}
_LEFT = frozenset({"node", "state"})
# Dropped first when the table is too narrow (at 80 columns: node, rss, then heartbeat).
_DROP_ORDER = ("node", "rss", "heartbeat", "cpu", "gpu", "rate", "pid", "time", "last_report")

# The columns only raytop's probe can fill; a run without it shows NEEDS_PROBE there.
_PROBE_COLUMNS = ("entered", "exited", "behind", "last_report", "rate", "heartbeat", "cpu", "gpu",
                  "rss", "time")  # fmt: skip
NEEDS_PROBE = "·"

STATES = ("training", "waiting", "behind", "silent", "dead", "done")


def _state_class(state: str, stalled: bool) -> str:
    """The rank the others wait for (a barrier stall's missing rank) is drawn as
    ``stalled``, whatever its own state."""
    return "worker-table--stalled" if stalled else f"worker-table--{state}"


def _cpu(w: Worker) -> tuple[str, str]:
    """Its CPU % and style: underlined in bold past its logical CPUs (Ray does not
    enforce them)."""
    if w.cpu_percent is None:
        return "-", ""
    return f"{w.cpu_percent:.0f}", "bold underline" if w.cpu_over_declared else ""


CELL_CACHE_MAX = 8_192  # distinct cells kept for reuse (``WorkerTable._cell``)


def _pid(pid: int | None) -> tuple[str, str, str, float | None]:
    return "right", "-" if pid is None else str(pid), "", pid


def _rate(per_min: float | None) -> tuple[str, str, str, float | None]:
    """Sorted by reports a minute, not by ``12/m``'s text; ``None`` (too few) last."""
    return "right", fmt_rate(per_min), "", per_min


def _behind(reports: int) -> tuple[str, str, str, float | None]:
    """Reports behind, in bold; blank (and sorted last) when none."""
    return ("right", str(reports), "bold", reports) if reports else ("right", "", "", None)


def _rss(rss: int | None) -> tuple[str, str, str, float | None]:
    """Sorted by whole MiB: finer than ``2.1G`` shows, and steady from one beat to the
    next, so a rank keeps its cell (as it does for its CPU %, sorted by the whole percent
    shown, and its ages)."""
    return "right", fmt_bytes(rss), "", None if rss is None else rss >> 20


def _percent(value: float | None) -> tuple[str, str, str, float | None]:
    """A percent, sorted by the whole percent shown."""
    if value is None:
        return "right", "-", "", None
    return "right", f"{value:.0f}", "", round(value)


def _age(seconds: float | None) -> tuple[str, str, str, float | None]:
    """An age sorts by its whole seconds (what ``fmt_duration`` counts), so the ranks
    share its cells as they share its text."""
    return "right", fmt_duration(seconds), "", None if seconds is None else int(seconds)


# Column key → the (kind, text, style, sort key) of a rank's cell there (state aside). A
# figure that moves every beat sorts at the precision it is shown with (or a little
# finer): a sort key of its own for each rank on each refresh would make every rank's
# cells anew each time, more than doubling a 2,000-rank run's redraw. ``now``: the time
# the ages are said as of (``Snapshot.ages_at``).
_CELLS: dict[str, Callable[[Worker, float], tuple[str, str, str, float | None]]] = {
    "rank": lambda w, now: ("right", str(w.rank), "", w.rank),
    "node": lambda w, now: ("left", (w.node_id or "-")[:8], "", None),
    "pid": lambda w, now: _pid(w.pid),
    "entered": lambda w, now: ("right", str(w.reports_entered), "", w.reports_entered),
    "exited": lambda w, now: ("right", str(w.reports_exited), "", w.reports_exited),
    "behind": lambda w, now: _behind(w.behind),
    "last_report": lambda w, now: _age(w.since_report(now)),
    "rate": lambda w, now: _rate(w.rate_per_min),
    "heartbeat": lambda w, now: _age(w.since_beat(now)),
    "cpu": lambda w, now: (
        "right",
        *_cpu(w),
        None if w.cpu_percent is None else round(w.cpu_percent),
    ),
    "gpu": lambda w, now: _percent(w.gpu_util_percent),
    "rss": lambda w, now: _rss(w.rss_bytes),
}


class WorkerTable(KeyedTable):
    """One row per rank (keyed by the rank as a string); fixed column widths."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        *(f"worker-table--{state}" for state in STATES),
        "worker-table--stalled",
        *share_bar.COMPONENTS,
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._run: TrainRun | None = None
        self._stalled: frozenset[int] = frozenset()
        self._now = 0.0
        # A 2,000-rank run changes every rank each refresh (its ages tick): each rank is a
        # ``LazyRow``, whose cells are made only once it is on screen (or filtered or
        # sorted by); cells are made once per distinct (kind, text, style, sort key) and
        # shared. A rank whose Worker, look and columns are the ones it had keeps its row,
        # so ``sync_rows`` passes it by.
        self._made: dict[tuple[str, str, str, float | None], object] = {}
        self._rows: dict[str, tuple[Worker, tuple[object, ...], LazyRow]] = {}
        # id(a rank's shares) → (those shares, the glyph, its bar cell): a rank whose
        # Activity is unchanged hands the very same shares dict (``Activity.shares``), so
        # its bar is not laid out again (2,000 bars a refresh took ~25 ms).
        self._bars: dict[int, tuple[object, str, object]] = {}
        self._bars_before: dict[int, tuple[object, str, object]] = {}

    def show_run(
        self, run: TrainRun | None, stalled: Collection[int] = (), now: float = 0.0
    ) -> None:
        """Make the rows match ``run.workers``: add, update changed cells, remove. ``now``:
        the time its ages are said as of (``Snapshot.ages_at``)."""
        self._run = run
        self._stalled = frozenset(stalled)
        self._now = now
        workers = sorted(run.workers, key=lambda w: w.rank) if run else []
        # The time bars only once a rank has shares (an older probe, or a run just begun,
        # has none: no column of dashes).
        columns = self._columns(
            time=any(share_bar.shown_shares(w) for w in workers),
            gpu=any(w.gpu_util_percent is not None for w in workers),  # GPU only
        )
        keys = tuple(column.key for column in columns)
        instrumented = run is None or run.instrumented
        rows = {}
        self._bars_before, self._bars = self._bars, {}
        bar = glyphs_of(self).bar_full  # in the look: a switch to ASCII redraws the bars
        stalled, kept, cells = self._stalled, self._rows.get, self._cells
        for w in workers:
            key = str(w.rank)
            # The same Worker from one second to the next: its ages move with ``now``.
            look = (keys, instrumented, w.rank in stalled, bar, now)
            before = kept(key)
            if before is not None and before[0] is w and before[1] == look:
                rows[key] = before
            else:
                rows[key] = (w, look, LazyRow(partial(cells, w, *look[:3], now)))
        self._rows = rows
        self.sync_rows({key: row[2] for key, row in rows.items()}, columns)

    def on_resize(self) -> None:
        # Which columns fit depends on our width: rebuild them if that changed.
        self.show_run(self._run, self._stalled, self._now)

    def _cell(self, kind: str, text: str, style: str = "", sort: float | None = None) -> object:
        """The cell drawing ``text`` as ``kind`` (right: a number sorted by ``sort``; left;
        state), made once."""
        key = (kind, text, style, sort)
        cell = self._made.get(key)
        if cell is None:
            if len(self._made) >= CELL_CACHE_MAX:
                self._made.clear()
            if kind == "state":
                cell = StyledCell(text, style, self)
            elif kind == "left":
                cell = Text(text, no_wrap=True)
            elif sort is not None:  # drawn by the one Text of every cell showing ``text``
                drawn = self._cell(kind, text, style)
                assert isinstance(drawn, SortedCell)
                cell = SortedCell(drawn.cell, sort)
            else:
                cell = number(text, None, style)
            self._made[key] = cell
        return cell

    def _cells(
        self, w: Worker, columns: tuple[str, ...], instrumented: bool, stalled: bool, now: float
    ) -> tuple[object, ...]:
        if not instrumented:
            # Known from the actor table only: what needs the probe says so, not "0".
            return tuple(
                self._cell("state", "no probe", "worker-table--done") if key == "state"
                else self._cell("right", NEEDS_PROBE) if key in _PROBE_COLUMNS
                else self._cell(*_CELLS[key](w, now))
                for key in columns
            )  # fmt: skip
        return tuple(
            self._cell("state", w.state, _state_class(w.state, stalled)) if key == "state"
            else self._bar(w) if key == "time"
            else self._cell(*_CELLS[key](w, now))
            for key in columns
        )  # fmt: skip

    def _bar(self, w: Worker) -> object:
        """Its time-share bar (the last minute, else its attempt), made once per look;
        sorted by its compute share."""
        shares = share_bar.shown_shares(w)
        glyphs = glyphs_of(self)
        kept = self._bars_before.get(id(shares))
        if kept is not None and kept[0] is shares and kept[1] == glyphs.bar_full:
            self._bars[id(shares)] = kept
            return kept[2]
        made = self._bar_of(shares, glyphs.bar_full)
        self._bars[id(shares)] = (shares, glyphs.bar_full, made)
        return made

    def _bar_of(self, shares: dict[str, float] | None, block: str) -> object:
        """The bar's cell, made once per distinct look (letters, glyph, compute share)."""
        letters = share_bar.bar_text(shares, BAR_WIDTH)
        if not letters:
            return self._cell("right", "-")
        compute = round(shares["compute"], 2) if shares else None
        key = ("bar", letters, block, compute)
        cell = self._made.get(key)
        if cell is None:
            ascii_ = block != UNICODE.bar_full
            cell = share_bar.ShareBarCell(letters, ascii_, block, self)
            cell = SortedCell(cell, compute)
            self._made[key] = cell
        return cell

    def _columns(self, time: bool, gpu: bool) -> tuple[ColumnSpec, ...]:
        """The columns that fit the width, dropping the least needed first; the time bars
        and the GPU's utilisation only where a rank has them."""
        left_out = {key for key, shown in (("time", time), ("gpu", gpu)) if not shown}
        columns = [
            ColumnSpec(key, *_COLUMNS[key], "left" if key in _LEFT else "right")
            for key in _COLUMNS
            if key not in left_out
        ]
        return self.fit_columns(columns, drop=_DROP_ORDER)
