"""The first screen: cluster line, one experiment with its trials, and the findings."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from raytop.model import Experiment
from raytop.model.format import fmt_duration
from raytop.tui.state import ViewState
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.experiment_header import ExperimentHeader
from raytop.tui.widgets.findings_list import FindingsList
from raytop.tui.widgets.trial_table import TrialTable


class OverviewScreen(Screen[None]):
    """Renders a ``ViewState``; only while visible, catching up when it becomes visible."""

    BINDINGS = [
        Binding("e", "next_experiment", "Next experiment", id="raytop.next-experiment"),
    ]

    def __init__(self, *, clock: Callable[[], float], read_only: bool) -> None:
        super().__init__()
        self._clock = clock
        self._read_only = read_only
        self._state = ViewState()
        self._experiment_name: str | None = None

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield ExperimentHeader()
        yield TrialTable()
        yield FindingsList()
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._show_age)

    def on_screen_resume(self) -> None:
        self._redraw()

    def show(self, state: ViewState) -> None:
        """Take a new state; draw it now if this screen is on view, else on resume."""
        self._state = state
        if self.is_mounted and self.is_current:
            self._redraw()

    def action_next_experiment(self) -> None:
        experiments = self._experiments()
        if experiments:
            index = (self._selected_index(experiments) + 1) % len(experiments)
            self._experiment_name = experiments[index].name
            self._redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Only offer "next experiment" when there is more than one.
        if action == "next_experiment":
            return len(self._experiments()) > 1
        return True

    def _experiments(self) -> tuple[Experiment, ...]:
        body = self._state.body
        return body.experiments if body else ()

    def _selected_index(self, experiments: tuple[Experiment, ...]) -> int:
        """The experiment the user chose, found by name (positions may shift); else 0."""
        names = [e.name for e in experiments]
        return names.index(self._experiment_name) if self._experiment_name in names else 0

    def _redraw(self) -> None:
        state = self._state
        self.query_one(ClusterBar).show(state.cluster, state.problem)
        self._show_age()
        experiments = self._experiments()
        index = self._selected_index(experiments)
        experiment = experiments[index] if experiments else None
        self._experiment_name = experiment.name if experiment else None
        self.query_one(ExperimentHeader).show(experiment, index + 1, len(experiments))
        self.query_one(TrialTable).show_experiment(experiment)
        body = state.body
        self.query_one(FindingsList).show(body.findings if body else ())
        self.refresh_bindings()

    def _show_age(self) -> None:
        parts = ["read-only"] if self._read_only else []
        if self._state.latest is not None:
            age = fmt_duration(self._clock() - self._state.latest.taken_at)
            parts.append(f"updated {age} ago")
        self.query_one(ClusterBar).show_age(" · ".join(parts))
