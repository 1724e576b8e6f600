"""The live trials table, diff-updated by trial id so the cursor survives every tick.

Two columns draw pictures, from ``glyphs_of(self)`` (ASCII under ``--ascii``): ``trend``,
a sparkline of the metric's recent values (``Trial.metric_history``, each trial on its
own scale), shown when some trial has a history; and ``iter``, which becomes a progress
bar with ``3/5`` when some trial's iteration count is known (``Trial.max_iterations``).
A trial its scheduler stopped early shows ``EARLY-STOP`` (``Trial.stopped_early``). The
params column shows only the params that differ between trials (the rest are said once,
in the header above); the experiment's best trial (``Experiment.best_trial``, derived by
the pipeline) has a star before its metric and its id in bold.
``good`` is the goodput of the trial's Train run (its ranks' compute share, the
pipeline's ``TrainRun.goodput``), shown once some run has one. Every number sorts by its
value (``o``), the pictures too: the iterations done, and the metric's change over its
history (last minus first).
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from raytop.model import Experiment, Trial
from raytop.model.format import fmt_duration, fmt_params, fmt_value, varying_keys
from raytop.tui.format import progress_bar, sparkline
from raytop.tui.glyphs import glyphs_of
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import LazyRow, SortedCell, StyledCell, number

# Content widths of the fixed columns (keys double as headers, except "metric", which
# shows the experiment's metric name); "params" takes whatever width is left.
_WIDTHS = {"trial": 11, "status": 10, "metric": 12, "trend": 8, "iter": 5, "elapsed": 7, "fail": 4,
           "good": 4}  # fmt: skip
_PROGRESS_WIDTH = 11  # "iter" with a bar: "███░░ 12/20"
_BAR_WIDTH = 5  # at most; narrower when the count is long ("██ 120/1000")
_ORDER = ("trial", "status", "params", "metric", "trend", "iter", "good", "elapsed", "fail")
_NUMERIC = frozenset({"metric", "iter", "good", "elapsed", "fail"})
# Dropped first when the table is too narrow; trial, status, params, the metric and the
# iterations always stay. At 80 columns with both pictures: fail, then elapsed.
_DROP_ORDER = ("fail", "elapsed", "trend", "good")
_MIN_PARAMS_WIDTH = 12


# A TERMINATED trial its scheduler ended before its budget (``Trial.stopped_early``):
# the label fits the status column; the rule is on the line under the table.
STOPPED_EARLY = "EARLY-STOP"


def fmt_failures(used: int, limit: int | None, unlimited: str = "∞") -> str:
    """Tune's failures of a trial over its ``trial_max_failures``: ``1/2``, ``0/∞``; the
    count alone when the limit is not known."""
    if limit is None:
        return str(used)
    return f"{used}/{unlimited if limit < 0 else limit}"


def _status_class(status: str) -> str:
    return f"trial-table--{status.lower()}"


def status_label(trial: Trial) -> tuple[str, str]:
    """The status cell's text and its component class."""
    if trial.stopped_early:
        return STOPPED_EARLY, "trial-table--stopped"
    return trial.status, _status_class(trial.status)


def progress_text(trial: Trial, width: int, full: str, empty: str) -> str:
    """``███░░ 3/5`` in at most ``width`` characters (the bar shrinks for a long count,
    and goes below two cells); just ``3`` when the trial's count is not known."""
    if trial.max_iterations is None:
        return str(trial.iterations)
    count = f"{trial.iterations}/{trial.max_iterations}"
    bar = min(_BAR_WIDTH, width - len(count) - 1)
    if bar < 2:
        return count
    return f"{progress_bar(trial.iterations, trial.max_iterations, bar, full, empty)} {count}"


def metric_key(value: object) -> float | None:
    """The metric's value to sort by; ``None`` (last) for one that is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def trend_change(history: tuple[float, ...]) -> float | None:
    """How much the metric moved over its history (last minus first), to sort by."""
    return history[-1] - history[0] if len(history) >= 2 else None


class _TrialCells:
    """How a trial's row is made (a ``LazyRow``'s maker), when it is: with what its table
    was last shown with (``_made_with``: a kept row is one whose cells those do not
    change, ``_cells_context``). ~70 bytes a row where a ``functools.partial`` of the
    same was ~380: 3 MB at 10,000 trials, twice over while a new table replaces one."""

    __slots__ = ("table", "trial", "best", "good")

    def __init__(self, table: TrialTable, trial: Trial, best: bool, good: float | None) -> None:
        self.table, self.trial, self.best, self.good = table, trial, best, good

    def __call__(self) -> tuple[object, ...]:
        metric, swept, widths = self.table._made_with
        return self.table._cells(self.trial, metric, swept, widths, best=self.best, good=self.good)


class TrialTable(KeyedTable):
    """One row per trial of one experiment; columns have fixed widths (no re-measuring)."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "trial-table--running",
        "trial-table--pending",
        "trial-table--paused",
        "trial-table--stopped",
        "trial-table--terminated",
        "trial-table--error",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._experiment: Experiment | None = None
        # trial id → (the trial, its goodput, its row): an unchanged trial keeps its row
        # (the very ``LazyRow``, which ``sync_rows`` then skips) while what else its cells
        # depend on (the metric, the swept keys, the columns and iter's width, the glyphs:
        # ``_cells_context``) is the same: of a sweep's 10,000 trials a refresh changes a
        # few. A row's cells are made only once it is on screen (or read, filtered or
        # sorted by): building all 10,000 rows' cells was most of the first frame.
        self._cells_of: dict[str, tuple[Trial, float | None, LazyRow]] = {}
        self._cells_context: tuple[object, ...] | None = None
        self._made_with: tuple[str | None, frozenset[str], dict[str, int]] = (None, frozenset(), {})
        self._best: str | None = None  # the best trial's id, at the last show

    @property
    def selected_trial_id(self) -> str | None:
        """The trial under the cursor, if any."""
        return self.cursor_key()

    def status_style(self, status: str) -> Style:
        return self.component_style(_status_class(status))

    def show_experiment(self, experiment: Experiment | None) -> None:
        """Make the rows match ``experiment.trials``: add, update changed cells, remove."""
        self._experiment = experiment
        metric = experiment.metric if experiment else None
        trials = experiment.trials if experiment else ()
        swept = varying_keys([t.config for t in trials])
        # Each trial's goodput: its Train run's compute share (the pipeline's), the newest
        # run of the trial's (a resumed trial's new controller).
        goodput = {r.trial_id: r.goodput for r in (experiment.runs if experiment else ())
                   if r.trial_id is not None and r.goodput is not None}  # fmt: skip
        columns = self._columns(
            metric,
            trend=any(t.metric_history for t in trials),
            progress=any(t.max_iterations is not None for t in trials),
            good=bool(goodput),
        )
        widths = {column.key: column.width for column in columns}
        best = experiment.best_trial.trial_id if experiment and experiment.best_trial else None
        marked = {best, self._best}  # the rows whose star may move
        # The cells use the columns (their order) and the width of ``iter``, never that of
        # ``params`` (the table cuts its text): the scrollbar coming with the 10,000 rows,
        # or a terminal resized, keeps every row (made again, ~9 MB at 10,000 trials).
        context = (metric, swept, tuple(widths), widths.get("iter"), glyphs_of(self))
        known = self._cells_of if context == self._cells_context else {}
        self._cells_of, self._cells_context, self._best = {}, context, best
        self._made_with = metric, swept, widths
        wanted = {}
        for t in trials:
            kept = known.get(t.trial_id) if t.trial_id not in marked else None
            good = goodput.get(t.trial_id)
            if kept is not None and (kept[0] is t or kept[0] == t) and kept[1] == good:
                row = kept[2]
            else:
                row = LazyRow(_TrialCells(self, t, t.trial_id == best, good))
            self._cells_of[t.trial_id] = (t, good, row)
            wanted[t.trial_id] = row
        self.sync_rows(wanted, columns)

    def on_resize(self) -> None:
        # The params column's width depends on ours: rebuild the columns if it changed.
        self.show_experiment(self._experiment)

    def _cells(
        self,
        trial: Trial,
        metric: str | None,
        swept: frozenset[str],
        widths: dict[str, int],
        *,
        best: bool,
        good: float | None = None,
    ) -> tuple[object, ...]:
        glyphs = glyphs_of(self)
        value = trial.metrics.get(metric) if metric else None
        shown_value = fmt_value(value) if metric else ""
        width = widths.get("iter", _WIDTHS["iter"])
        label, status_class = status_label(trial)
        everything: dict[str, object] = {
            "trial": Text(
                trial.trial_id, style="bold" if best else "", overflow="ellipsis", no_wrap=True
            ),
            "status": StyledCell(label, status_class, self),
            "params": Text(fmt_params(trial.config, swept), overflow="ellipsis", no_wrap=True),
            "metric": number(
                f"{glyphs.best} {shown_value}" if best else shown_value,
                metric_key(value),
                "bold" if best else "",
            ),
            "trend": SortedCell(
                Text(sparkline(trial.metric_history, _WIDTHS["trend"], glyphs.spark), no_wrap=True),
                trend_change(trial.metric_history),
            ),
            "iter": SortedCell(
                Text(
                    progress_text(trial, width, glyphs.bar_full, glyphs.bar_empty),
                    justify="right",
                    no_wrap=True,
                ),
                float(trial.iterations),
            ),
            "good": number("-" if good is None else f"{good:.0%}", good),
            "elapsed": number(fmt_duration(trial.elapsed_s), trial.elapsed_s),
            "fail": number(
                fmt_failures(trial.num_failures, trial.max_failures, glyphs.unlimited),
                trial.num_failures,
            ),
        }
        return tuple(everything[key] for key in widths)

    def _columns(
        self, metric: str | None, *, trend: bool, progress: bool, good: bool = False
    ) -> tuple[ColumnSpec, ...]:
        """The metric column is headed by the metric's name; params fills the width.
        ``trend``, the progress form of ``iter`` and ``good`` (goodput) only when some
        trial has them."""
        widths = dict(_WIDTHS, iter=_PROGRESS_WIDTH if progress else _WIDTHS["iter"])
        headers = {"metric": metric or "metric", "iter": "progress" if progress else "iter"}
        columns = [
            ColumnSpec(
                key,
                headers.get(key, key),
                widths.get(key, _MIN_PARAMS_WIDTH),
                "right" if key in _NUMERIC else "left",
            )
            for key in _ORDER
            if (key != "trend" or trend) and (key != "good" or good)
        ]
        return self.fit_columns(columns, drop=_DROP_ORDER, grow={"params": None})
