"""One experiment in a glance: status, trial counts, metric, driver and warnings."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from raytop.model import Experiment, ExperimentStatus
from raytop.model.format import plural
from raytop.tui.format import shown_lines

_STATUS_STYLE = {
    ExperimentStatus.RUNNING: "bold $primary",
    ExperimentStatus.FINISHED: "bold $success",
    ExperimentStatus.ERRORED: "bold $error",
    ExperimentStatus.INTERRUPTED: "bold $warning",
}
_COUNT_ORDER = ("RUNNING", "PENDING", "PAUSED", "TERMINATED", "ERROR")


def experiment_lines(experiment: Experiment, position: int, count: int) -> list[Content]:
    """The header's lines (made visible by the widget, once)."""
    status_style = _STATUS_STYLE.get(experiment.status, "bold $text-muted")
    first: list[Content | str] = []
    if count > 1:
        first.append(f"[{position}/{count}] ")
    first += [
        Content.styled(experiment.name, "bold"),
        "  ",
        Content.styled(experiment.status.value, status_style),
    ]
    if experiment.metric:
        first.append(f"  metric {experiment.metric} ({experiment.mode or '?'})")
    if experiment.driver_alive is not None:
        pid = f" {experiment.driver_pid}" if experiment.driver_pid is not None else ""
        state = ("alive", "$success") if experiment.driver_alive else ("dead", "bold $error")
        first += [f"  driver{pid} ", Content.styled(*state)]
    counts = experiment.status_counts()
    ordered = [s for s in _COUNT_ORDER if s in counts] + sorted(counts.keys() - set(_COUNT_ORDER))
    tally = " · ".join(f"{counts[s]} {s}" for s in ordered) or "no trials yet"
    lines = [
        Content.assemble(*first),
        Content(f"{plural(len(experiment.trials), 'trial')}: {tally}"),
    ]
    lines += [Content.styled(f"⚠ {w}", "$text-warning") for w in experiment.warnings]
    return lines


class ExperimentHeader(Static):
    """The lines above the trials table."""

    def show(
        self,
        experiment: Experiment | None,
        position: int,
        count: int,
        home_warnings: tuple[str, ...] = (),
    ) -> None:
        """``home_warnings``: problems of raytop's own records (``Snapshot.warnings``)."""
        if experiment is None:
            lines = [Content.styled("No Tune/Train experiment found yet.", "$text-muted")]
        else:
            lines = experiment_lines(experiment, position, count)
        lines += [Content.styled(f"⚠ {w}", "$text-warning") for w in home_warnings]
        self.update(shown_lines(lines))
