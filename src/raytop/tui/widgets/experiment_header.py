"""One experiment in a glance: status, trial counts (of the sweep's total when known),
metric, driver, the params every trial shares (said once here, so the trials table shows
only what tells trials apart) and warnings."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from raytop.model import Experiment, ExperimentStatus
from raytop.model.format import fmt_constants, fmt_trials, varying_keys
from raytop.tui.format import fit_words, shown, shown_lines
from raytop.tui.glyphs import glyphs_of

_STATUS_STYLE = {
    ExperimentStatus.RUNNING: "bold $primary",
    ExperimentStatus.FINISHED: "bold $success",
    ExperimentStatus.ERRORED: "bold $error",
    ExperimentStatus.INTERRUPTED: "bold $warning",
}
_COUNT_ORDER = ("RUNNING", "PENDING", "PAUSED", "TERMINATED", "ERROR")


def experiment_lines(
    experiment: Experiment, position: int, count: int, width: int = 80, ellipsis: str = "…"
) -> list[Content]:
    """The header's lines (made visible by the widget, once); the constants' line is cut
    to ``width`` cells, at a word, with ``ellipsis``."""
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
        Content(f"{fmt_trials(len(experiment.trials), experiment.trials_total)}: {tally}"),
    ]
    configs = [t.config for t in experiment.trials]
    constants = fmt_constants(configs, varying_keys(configs))
    if constants:
        line = Content.assemble(Content.styled("constants: ", "$text-muted"), shown(constants))
        lines.append(fit_words(line, width, ellipsis))
    lines += [Content.styled(f"⚠ {w}", "$text-warning") for w in experiment.warnings]
    return lines


class ExperimentHeader(Static):
    """The lines above the trials table; ``lines_shown``: how many, at the last ``show``."""

    lines_shown = 1

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
            width = max(20, (self.size.width or self.app.size.width) - 2)  # less the padding
            lines = experiment_lines(experiment, position, count, width, glyphs_of(self).ellipsis)
        lines += [Content.styled(f"⚠ {w}", "$text-warning") for w in home_warnings]
        self.lines_shown = len(lines)
        self.update(shown_lines(lines))
