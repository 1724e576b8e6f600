"""The live trials table, diff-updated by trial id so the cursor survives every tick."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from raytop.model import Experiment, Trial
from raytop.model.format import fmt_duration, fmt_params, fmt_value, varying_keys
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable, StyledCell

# Content widths of the fixed columns (keys double as headers, except "metric", which
# shows the experiment's metric name); "params" takes whatever width is left.
_WIDTHS = {"trial": 11, "status": 10, "metric": 10, "iter": 5, "elapsed": 7, "fail": 4}
_ORDER = ("trial", "status", "params", "metric", "iter", "elapsed", "fail")
_NUMERIC = frozenset({"metric", "iter", "elapsed", "fail"})
_MIN_PARAMS_WIDTH = 12


def _status_class(status: str) -> str:
    return f"trial-table--{status.lower()}"


class TrialTable(KeyedTable):
    """One row per trial of one experiment; columns have fixed widths (no re-measuring)."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "trial-table--running",
        "trial-table--pending",
        "trial-table--paused",
        "trial-table--terminated",
        "trial-table--error",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._experiment: Experiment | None = None

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
        wanted = {t.trial_id: self._cells(t, metric, swept) for t in trials}
        self.sync_rows(wanted, self._columns(metric))

    def on_resize(self) -> None:
        # The params column's width depends on ours: rebuild the columns if it changed.
        self.show_experiment(self._experiment)

    def _cells(self, trial: Trial, metric: str | None, swept: frozenset[str]) -> tuple[object, ...]:
        value = fmt_value(trial.metrics.get(metric)) if metric else ""
        return (
            Text(trial.trial_id, overflow="ellipsis", no_wrap=True),
            StyledCell(trial.status, _status_class(trial.status), self),
            Text(fmt_params(trial.config, swept), overflow="ellipsis", no_wrap=True),
            Text(value, justify="right"),
            Text(str(trial.iterations), justify="right"),
            Text(fmt_duration(trial.elapsed_s), justify="right"),
            Text(str(trial.num_failures), justify="right"),
        )

    def _columns(self, metric: str | None) -> tuple[ColumnSpec, ...]:
        """The metric column is headed by the metric's name; params fills the width."""
        columns = [
            ColumnSpec(
                key,
                (metric or "metric") if key == "metric" else key,
                _WIDTHS.get(key, _MIN_PARAMS_WIDTH),
                "right" if key in _NUMERIC else "left",
            )
            for key in _ORDER
        ]
        return self.fit_columns(columns, grow={"params": None})
