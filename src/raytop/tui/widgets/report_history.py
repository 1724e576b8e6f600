"""One rank's recent reports (``Worker.report_times`` / ``report_exits``, at most 32):
a bar per report-to-report interval, and a table of the reports, newest first.

The probe records when the rank entered each ``ray.train.report`` and when it came out;
the rhythm of those times is where a rank that slows down shows before it stalls.
Ages are counted from the app's clock, so they tick between snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from raytop.model import Worker
from raytop.model.format import fmt_duration
from raytop.tui.format import fit_words, fmt_seconds
from raytop.tui.glyphs import glyphs_of
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import number

NO_INTERVALS = "no report-to-report times yet: fewer than two reports in its history"
_MAX_BAR = 3  # columns of one bar (and one of space) when there is room


@dataclass(frozen=True)
class ReportRow:
    """One report as the table shows it."""

    number: int  # its index in the attempt, from 1
    entered_ago_s: float
    inside_s: float | None  # exit - enter; None while still inside
    gap_s: float | None  # since the previous report's entry (None: the oldest kept)


def report_rows(worker: Worker, now: float) -> list[ReportRow]:
    """The rank's kept reports, newest first. Entry ``i`` of ``report_times`` is report
    ``reports_entered - len(report_times) + 1 + i``: the history holds the last ones."""
    times = worker.report_times
    exits = worker.report_exits
    first = worker.reports_entered - len(times) + 1
    rows = []
    for i, entered in enumerate(times):
        exited = exits[i] if i < len(exits) else None
        rows.append(
            ReportRow(
                number=first + i,
                entered_ago_s=now - entered,
                inside_s=None if exited is None else exited - entered,
                gap_s=entered - times[i - 1] if i else None,
            )
        )
    return rows[::-1]


def bar_rows(values: Sequence[float], width: int, height: int, levels: str) -> list[list[str]]:
    """A bar chart of ``values`` (oldest left), ``height`` lines tall, top line first;
    each line is one string per bar (its cells and the space after it). Scaled from 0
    to the largest; ``levels`` are the eighths of a cell, lowest first (``Glyphs.spark``).
    Every value gets at least the lowest level; only the last ``width`` values fit."""
    if not values or width <= 0 or height <= 0:
        return []
    values = list(values)[-width:]
    cell = max(1, min(_MAX_BAR + 1, width // len(values)))
    bar = cell - 1 if cell > 1 else 1
    top = max(values) or 1.0
    eighths = [max(1, round(v / top * height * 8)) for v in values]
    lines = []
    for row in range(height - 1, -1, -1):
        line = []
        for e in eighths:
            filled = min(8, max(0, e - 8 * row))
            char = levels[filled - 1] if filled else " "
            line.append(char * bar + " " * (cell - bar))
        lines.append(line)
    return lines


def open_interval_s(worker: Worker, now: float) -> float | None:
    """How long since its last entry: the interval still open (None once it is done)."""
    if worker.done or not worker.report_times:
        return None
    return max(0.0, now - worker.report_times[-1])


def describe_intervals(
    worker: Worker, now: float, width: int, height: int, levels: str, ellipsis: str = "…"
) -> Content:
    """A caption (how many intervals, their median and longest, the open one), then the
    bars: the closed intervals, and last the one still open, in the warning colour (a
    rank that stalls shows as one bar towering over its usual rhythm)."""
    intervals = worker.report_intervals_s
    still_open = open_interval_s(worker, now)
    if not intervals:
        return Content.styled(NO_INTERVALS, "$text-muted italic")
    # The median is the rank's one interval (``Worker.usual_interval_s``), the pipeline's.
    caption = (
        f"report to report: median {fmt_seconds(worker.usual_interval_s)}"
        f" · longest {fmt_seconds(max(intervals))}"
    )
    values = list(intervals)
    if still_open is not None:
        caption += f" · open {fmt_duration(still_open)}"
        values.append(still_open)
    rows = bar_rows(values, width, max(1, height - 1), levels)
    lines = [fit_words(Content.styled(caption, "$text-muted"), width, ellipsis)]
    for row in rows:
        if still_open is None:
            lines.append(Content.styled("".join(row).rstrip(), "$accent"))
        else:
            closed, last = "".join(row[:-1]), row[-1].rstrip()
            lines.append(
                Content.assemble(
                    Content.styled(closed, "$accent"), Content.styled(last, "$text-warning")
                )
            )
    return Content("\n").join(lines)


class IntervalChart(Static):
    """The rank's report-to-report intervals as bars, as tall as the widget (CSS): one
    line at 80x24 (a sparkline), more where there is room."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._worker: Worker | None = None
        self._now = 0.0

    def show(self, worker: Worker | None, now: float) -> None:
        self._worker = worker
        self._now = now
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self._worker is None:
            self.update("")
            return
        glyphs = glyphs_of(self)
        width, height = self.content_size
        width, height = width or 40, height or 2
        self.update(
            describe_intervals(
                self._worker, self._now, width, height, glyphs.spark, glyphs.ellipsis
            )
        )


_COLUMNS = (
    ColumnSpec("report", "report", 6, "right"),
    ColumnSpec("entered", "entered", 9, "right"),
    ColumnSpec("inside", "in report", 12, "right"),
    ColumnSpec("gap", "gap", 7, "right"),
)


def _cells(row: ReportRow) -> tuple[object, ...]:
    inside = (
        f"inside {fmt_duration(row.entered_ago_s)}"
        if row.inside_s is None
        else fmt_seconds(max(0.0, row.inside_s))
    )
    # Still inside: as long as it has been in so far.
    inside_key = row.entered_ago_s if row.inside_s is None else row.inside_s
    return (
        number(str(row.number), row.number),
        number(f"{fmt_duration(row.entered_ago_s)} ago", row.entered_ago_s),
        number(inside, inside_key),
        number(fmt_seconds(row.gap_s), row.gap_s),
    )


class ReportTable(KeyedTable):
    """The rank's kept reports, newest first, keyed by report number."""

    def show(self, worker: Worker | None, now: float) -> None:
        rows = report_rows(worker, now) if worker is not None else []
        wanted = {str(row.number): _cells(row) for row in rows}
        self.sync_rows(wanted, _COLUMNS)
