"""The first screen: cluster line, one experiment with its trials, and the findings.

Enter (or ``w``) on a trial opens the Run screen of its Train run: the ranks at the
``ray.train.report`` barrier, from the report ledger. ``p`` opens the Placement screen:
nodes, GPUs and placement groups, and why a group waits.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from raytop.model import Experiment, TrainRun
from raytop.tui.screens.base import SnapshotScreen
from raytop.tui.screens.placement import PlacementScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.state import ViewState
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.experiment_header import ExperimentHeader
from raytop.tui.widgets.findings_list import FindingsList
from raytop.tui.widgets.stall_banner import StallLine
from raytop.tui.widgets.trial_table import TrialTable

NO_LEDGER = "no report ledger for this trial yet (is the ReportProbe installed?)"


class OverviewScreen(SnapshotScreen):
    """Renders a ``ViewState``; only while visible, catching up when it becomes visible."""

    BINDINGS = [
        Binding("e", "next_experiment", "Next experiment", id="raytop.next-experiment"),
        Binding(
            "w",
            "open_run",
            "Ranks",
            id="raytop.open-run",
            tooltip="The ranks of the highlighted trial's Train run (Enter does the same).",
        ),
        Binding(
            "p",
            "open_placement",
            "Placement",
            id="raytop.placement",
            tooltip="Nodes, GPUs and placement groups: why a trial or worker group waits.",
        ),
    ]

    def __init__(self, *, clock: Callable[[], float], read_only: bool) -> None:
        super().__init__(state=ViewState(), clock=clock, read_only=read_only)
        self._experiment_name: str | None = None

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield StallLine()
        yield ExperimentHeader()
        yield TrialTable()
        yield Static(id="pending-reason")
        yield FindingsList()
        yield Footer()

    def action_next_experiment(self) -> None:
        experiments = self._experiments()
        if experiments:
            index = (self._selected_index(experiments) + 1) % len(experiments)
            self._experiment_name = experiments[index].name
            self._redraw()

    def action_open_run(self) -> None:
        trial_id = self.query_one(TrialTable).selected_trial_id
        if trial_id is not None:
            self._open_run(trial_id)

    def action_open_placement(self) -> None:
        screen = PlacementScreen(state=self._state, clock=self._clock, read_only=self._read_only)
        self.app.push_screen(screen)

    @on(DataTable.RowSelected, "TrialTable")
    def _trial_chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self._open_run(event.row_key.value)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Only offer "next experiment" when there is more than one.
        if action == "next_experiment":
            return len(self._experiments()) > 1
        # Only offer "ranks" once the report ledger knows a run of this experiment.
        if action == "open_run":
            experiment = self._experiment()
            return experiment is not None and bool(experiment.runs)
        # Only offer "placement" once the cluster has placement groups to explain.
        if action == "open_placement":
            snapshot = self._state.cluster_snapshot
            return snapshot is not None and bool(snapshot.placement_groups)
        return True

    @on(DataTable.RowHighlighted, "TrialTable")
    def _trial_highlighted(self) -> None:
        self._show_pending_reason()

    def _show_pending_reason(self) -> None:
        """Why the highlighted trial (else the first waiting one) cannot place yet."""
        experiment = self._experiment()
        trials = experiment.trials if experiment else ()
        chosen = self.query_one(TrialTable).selected_trial_id
        waiting = [t for t in trials if t.pending_reason]
        trial = next((t for t in waiting if t.trial_id == chosen), waiting[0] if waiting else None)
        line = self.query_one("#pending-reason", Static)
        line.display = trial is not None
        if trial is not None:
            line.update(f"{trial.trial_id} waits: {trial.pending_reason}")

    def _open_run(self, trial_id: str) -> None:
        run = self._run_of(trial_id)
        if run is None:
            self.notify(NO_LEDGER, severity="warning")
            return
        screen = RunScreen(
            run.run_id, state=self._state, clock=self._clock, read_only=self._read_only
        )
        self.app.push_screen(screen)

    def _run_of(self, trial_id: str) -> TrainRun | None:
        """The trial's run: from its experiment, else from the runs of no experiment."""
        experiment = self._experiment()
        body = self._state.body
        candidates = [
            *(experiment.runs if experiment else ()),
            *(body.all_runs() if body else ()),
        ]
        return next((r for r in candidates if r.trial_id == trial_id), None)

    def _experiment(self) -> Experiment | None:
        experiments = self._experiments()
        return experiments[self._selected_index(experiments)] if experiments else None

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
        self.query_one(StallLine).show(state.body.findings if state.body else ())
        self._show_age()
        experiments = self._experiments()
        index = self._selected_index(experiments)
        experiment = experiments[index] if experiments else None
        self._experiment_name = experiment.name if experiment else None
        self.query_one(ExperimentHeader).show(experiment, index + 1, len(experiments))
        self.query_one(TrialTable).show_experiment(experiment)
        self._show_pending_reason()
        body = state.body
        self.query_one(FindingsList).show(body.findings if body else ())
        self.refresh_bindings()

    def _show_age(self) -> None:
        self.query_one(ClusterBar).show_age(self._age_text())
