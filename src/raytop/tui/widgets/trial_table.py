"""The live trials table, diff-updated by trial id so the cursor survives every tick."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable

from raytop.model import Experiment, Trial
from raytop.model.format import fmt_duration, fmt_params, fmt_value, varying_keys

# Content widths of the fixed columns (keys double as headers, except "metric", which
# shows the experiment's metric name); "params" takes whatever width is left.
_WIDTHS = {"trial": 11, "status": 10, "metric": 10, "iter": 5, "elapsed": 7, "fail": 4}
_ORDER = ("trial", "status", "params", "metric", "iter", "elapsed", "fail")
_NUMERIC = frozenset({"metric", "iter", "elapsed", "fail"})
_MIN_PARAMS_WIDTH = 12


@dataclass(frozen=True)
class StatusCell:
    """A status coloured when drawn, from the table's CSS, so a theme switch recolours it."""

    status: str
    table: TrialTable = field(compare=False, repr=False)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.status, style=self.table.status_style(self.status), end="")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(len(self.status), len(self.status))


class TrialTable(DataTable[object]):
    """One row per trial of one experiment; columns have fixed widths (no re-measuring)."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {
        "trial-table--running",
        "trial-table--pending",
        "trial-table--paused",
        "trial-table--terminated",
        "trial-table--error",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self._experiment: Experiment | None = None
        self._layout: tuple[str, int] | None = None

    @property
    def selected_trial_id(self) -> str | None:
        """The trial under the cursor, if any."""
        return self._cursor_key()

    def status_style(self, status: str) -> Style:
        name = f"trial-table--{status.lower()}"
        if name not in self.COMPONENT_CLASSES:
            return Style.null()
        return self.get_component_rich_style(name, partial=True)

    def show_experiment(self, experiment: Experiment | None) -> None:
        """Make the rows match ``experiment.trials``: add, update changed cells, remove."""
        self._experiment = experiment
        metric = experiment.metric if experiment else None
        trials = experiment.trials if experiment else ()
        swept = varying_keys([t.config for t in trials])
        wanted = {t.trial_id: self._cells(t, metric, swept) for t in trials}
        with self.app.batch_update():
            selected = self._cursor_key()
            self._ensure_columns(metric)
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
                for column, new, old in zip(_ORDER, cells, self.get_row(key), strict=True):
                    if new != old:
                        self.update_cell(key, column, new)
            if selected in wanted:
                row = self.get_row_index(selected)
                if row != self.cursor_row:
                    self.move_cursor(row=row)

    def on_resize(self) -> None:
        # The params column's width depends on ours: rebuild the columns if it changed.
        self.show_experiment(self._experiment)

    def _cells(self, trial: Trial, metric: str | None, swept: frozenset[str]) -> tuple[object, ...]:
        value = fmt_value(trial.metrics.get(metric)) if metric else ""
        return (
            Text(trial.trial_id, overflow="ellipsis", no_wrap=True),
            StatusCell(trial.status, self),
            Text(fmt_params(trial.config, swept), overflow="ellipsis", no_wrap=True),
            Text(value, justify="right"),
            Text(str(trial.iterations), justify="right"),
            Text(fmt_duration(trial.elapsed_s), justify="right"),
            Text(str(trial.num_failures), justify="right"),
        )

    def _ensure_columns(self, metric: str | None) -> None:
        """(Re)build the columns when the metric name or the available width changes."""
        fixed = sum(_WIDTHS.values())
        padding = 2 * self.cell_padding * len(_ORDER)
        params_width = max(
            _MIN_PARAMS_WIDTH, self.scrollable_content_region.width - fixed - padding
        )
        layout = (metric or "metric", params_width)
        if layout == self._layout:
            return
        self._layout = layout
        self.clear(columns=True)
        for key in _ORDER:
            header = layout[0] if key == "metric" else key
            width = _WIDTHS.get(key, params_width)
            justify = "right" if key in _NUMERIC else "left"
            label = Text(header, justify=justify, overflow="ellipsis", no_wrap=True)
            self.add_column(label, key=key, width=width)

    def _cursor_key(self) -> str | None:
        if self.row_count == 0:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
