"""The first screen: cluster line, every run on the cluster, one experiment with its
trials, and the findings.

Above the experiment, every other run of the cluster (``WorkloadPanel``): the one list
under plain ``raytop`` (Enter on a row shows that experiment, or that Train run's ranks),
one line under ``raytop run`` (its own experiment first); ``n`` opens the whole list.

Enter (or ``w``) on a trial opens the Run screen of its Train run: the ranks at the
``ray.train.report`` barrier, from the report ledger. ``p`` opens the Placement screen:
nodes, GPUs and placement groups, and why a group waits. ``u`` opens the Resume screen:
the experiments under this one's storage folder, and the resume of one, after a yes.

``x`` and ``t`` stop the experiment or the trial, after a yes (``overview_stops``).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.widgets import DataTable, Static

from raytop.model import Experiment, TrainRun, Trial
from raytop.model.dashboard import PhaseClock, groups_of, run_phase
from raytop.model.hangs import HANG_KINDS
from raytop.model.paths import split_path
from raytop.model.ports import Collector
from raytop.model.visible import visible
from raytop.tui.controls import Controls
from raytop.tui.format import shown
from raytop.tui.glyphs import glyphs_of
from raytop.tui.screens.base import SnapshotScreen, mark_bindings
from raytop.tui.screens.overview_layout import first_trial_rows, side_by_side, table_height
from raytop.tui.screens.overview_runs import RunsActions
from raytop.tui.screens.overview_stops import (
    NO_CONTROLS,
    READ_ONLY,
    STOP_BINDINGS,
    STOP_IDS,
    StopActions,
)
from raytop.tui.screens.placement import PlacementScreen
from raytop.tui.screens.resume import ResumeScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.run_data import run_findings
from raytop.tui.state import ViewState
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.experiment_header import ExperimentHeader
from raytop.tui.widgets.findings_list import FindingsList, lines_taken
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.run_dashboard import RunDashboard
from raytop.tui.widgets.stall_banner import (
    StallLine,
    describe_stall_line,
    stalls,
)
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.workload_panel import WorkloadPanel

NO_LEDGER = "no report ledger for this trial yet (is the ReportProbe installed?)"


def parent_folder(path: str) -> str:
    """``/home/ray/ray_results/torch_sweep`` → ``/home/ray/ray_results``; a URI keeps its
    scheme (``s3://bucket/exp`` → ``s3://bucket``); no folder in it → ``""``."""
    head, _ = split_path(path)
    if not head:
        return "/" if path.rstrip("/").startswith("/") else ""
    return head + "/" if head.endswith(":/") else head


class OverviewScreen(RunsActions, StopActions, SnapshotScreen):
    """Renders a ``ViewState``; only while visible, catching up when it becomes visible."""

    AUTO_FOCUS = "TrialTable"
    BINDINGS = [
        Binding(
            "e",
            "next_experiment",
            "next exp",
            id="raytop.next-experiment",
            tooltip="Show the next experiment's trials.",
        ),
        Binding(
            "w",
            "open_run",
            "ranks",
            id="raytop.open-run",
            tooltip="The ranks of the highlighted trial's Train run (Enter does the same).",
        ),
        Binding(
            "n",
            "open_runs",
            "all runs",
            id="raytop.other-runs",
            tooltip="Every run on the cluster, where each comes from, and the Train runs "
            "outside raytop's experiments.",
        ),
        Binding(
            "h",
            "show_older",
            "older",
            id="raytop.older-experiments",
            tooltip="Read the older experiment folders of Tune's default storage too (only "
            "live and recent ones are read at first).",
        ),
        Binding(
            "p",
            "open_placement",
            "place",
            id="raytop.placement",
            tooltip="Nodes, GPUs and placement groups: why a trial or worker group waits.",
        ),
        Binding(
            "u",
            "open_resume",
            "resume",
            id="raytop.resume",
            tooltip="The experiments under this storage path: preview a resume, then do it.",
        ),
        *STOP_BINDINGS,
    ]

    def __init__(
        self,
        *,
        collector: Collector,
        clock: Callable[[], float],
        read_only: bool,
        controls: Controls | None = None,
        own_first: bool = False,
    ) -> None:
        super().__init__(state=ViewState(), clock=clock, read_only=read_only)
        # ``raytop run``: its own experiment is the screen, the other runs one line away.
        self._own_first = own_first
        self._workload_lines = 0  # lines the other runs take, at the last redraw
        self._older_shown = False  # h: the older experiment folders are read too
        self._collector = collector  # for the Run screen's stacks
        self._experiment_name: str | None = None
        self._controls = controls
        self._resume_screen: ResumeScreen | None = None  # one for the session, see u
        self._stopping: set[str] = set()  # targets whose stop is in flight
        self._phase_clock = PhaseClock()  # how long each trial's run is in its phase
        self._stop_refusal = READ_ONLY if read_only else NO_CONTROLS if controls is None else None
        if self._stop_refusal is not None:
            mark_bindings(self, STOP_IDS, "read-only" if read_only else "no controls")

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield StallLine()
        yield WorkloadPanel()
        yield ExperimentHeader()
        with Container(id="overview-body"):
            with Vertical(id="trials-column"):
                yield TrialTable()
                yield Static(id="pending-reason")
            yield RunDashboard()
        yield FindingsList()
        yield KeyFooter()

    def on_resize(self) -> None:
        if self.on_view:  # the layout follows the size (``_side_by_side``)
            self._redraw()

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

    def action_open_resume(self) -> None:
        """The Resume screen, suggesting the storage folder of the experiment on view.

        One instance, installed so it outlives each visit: the user finds their list and
        choices again, and a resume in flight reports back (and is not sent twice)."""
        experiment = self._experiment()
        storage = parent_folder(experiment.path) if experiment else ""
        if visible(storage) != storage:  # an odd or credentialed path: typed, not shown
            storage = ""
        if self._resume_screen is None:
            self._resume_screen = ResumeScreen(
                storage=storage, read_only=self._read_only, controls=self._controls
            )
            self.app.install_screen(self._resume_screen, name="raytop-resume")
        else:
            self._resume_screen.suggest_storage(storage)
        self.app.push_screen(self._resume_screen)

    @on(DataTable.RowSelected, "WorkloadTable")
    def _workload_chosen(self) -> None:
        self._choose_workload()

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
        if action in ("open_runs", "show_older"):
            return self._runs_offered(action)
        # Only offer "placement" once the cluster has placement groups to explain.
        if action == "open_placement":
            snapshot = self._state.cluster_snapshot
            return snapshot is not None and bool(snapshot.placement_groups)
        if action in ("stop_experiment", "stop_trial"):
            return self._stop_offered(action)
        return True

    @on(DataTable.RowHighlighted, "TrialTable")
    def _trial_highlighted(self) -> None:
        self._show_pending_reason()
        self._show_dashboard()
        self.offer_keys()  # "stop trial" depends on the highlighted trial

    def _highlighted_trial(self) -> Trial | None:
        experiment = self._experiment()
        trial_id = self.query_one(TrialTable).selected_trial_id
        if experiment is None or trial_id is None:
            return None
        return next((t for t in experiment.trials if t.trial_id == trial_id), None)

    def _show_pending_reason(self) -> None:
        """Why the highlighted trial (else the first waiting one) cannot place yet; or,
        for a highlighted trial its scheduler stopped or paused, the scheduler's rule."""
        experiment = self._experiment()
        trials = experiment.trials if experiment else ()
        chosen = self.query_one(TrialTable).selected_trial_id
        line = self.query_one("#pending-reason", Static)
        decided = next((t for t in trials if t.trial_id == chosen and t.scheduler_decision), None)
        if decided is not None and not decided.pending_reason:
            now = decided.status in ("TERMINATED", "PAUSED")
            said = decided.scheduler_decision if now else f"earlier: {decided.scheduler_decision}"
            line.display = True
            line.styles.text_wrap, line.styles.text_overflow = "nowrap", "ellipsis"
            line.update(shown(Text(f"{decided.trial_id} {said}")))
            return
        line.styles.text_wrap, line.styles.text_overflow = "wrap", "fold"
        waiting = [t for t in trials if t.pending_reason]
        trial = next((t for t in waiting if t.trial_id == chosen), waiting[0] if waiting else None)
        line.display = trial is not None
        if trial is not None:
            line.update(shown(f"{trial.trial_id} waits: {trial.pending_reason}"))

    def _open_run(self, trial_id: str) -> None:
        run = self._run_of(trial_id)
        if run is None:
            self.notify(NO_LEDGER, severity="warning")
            return
        self._push_run(run.run_id)

    def _push_run(self, run_id: str) -> None:
        screen = RunScreen(
            run_id,
            collector=self._collector,
            state=self._state,
            clock=self._clock,
            read_only=self._read_only,
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
        home_warnings = state.body.warnings if state.body else ()
        about = experiments if self._own_first else experiments[index : index + 1]
        self._workload_lines = self.query_one(WorkloadPanel).show(
            state.body.workloads if state.body else (), frozenset(e.path for e in about),
            own_first=self._own_first, height=self.size.height,
        )  # fmt: skip
        self.query_one(ExperimentHeader).show(
            experiment, index + 1, len(experiments), home_warnings
        )
        self.query_one(TrialTable).show_experiment(experiment)
        self._show_pending_reason()
        body = state.body
        self.query_one(FindingsList).show(body.findings if body else ())
        self._show_dashboard()
        self.offer_keys()

    def _show_dashboard(self) -> None:
        """The highlighted trial's run, in the lines the rest of the screen leaves; then,
        under it, the trials table gets the rows it needs of the lines the run did not
        fill (so no blank band lies between the two)."""
        experiment = self._experiment()
        trial = self._highlighted_trial()
        dashboard = self.query_one(RunDashboard)
        self.set_class(self._side_by_side(experiment), "-wide")
        if experiment is None or trial is None:
            dashboard.show(None, None, (), None, "", lines=0)
            self._fit_trials(experiment, 0)
            return
        run = self._run_of(trial.trial_id)
        snapshot = self._state.cluster_snapshot
        groups = groups_of(trial, run, snapshot.placement_groups if snapshot else ())
        phase = run_phase(trial, run, groups)
        now = self._state.latest.taken_at if self._state.latest else self._clock()
        subject = f"{experiment.name}/{trial.trial_id}"
        since = self._phase_clock.seen(subject, phase.name, now, glyphs_of(self).at_least)
        found = run_findings(self._state.body, run, HANG_KINDS) if run else []
        body = self._body_lines()
        if not self.has_class("-wide"):  # the trials' header and rows, the dashboard's rule
            body -= first_trial_rows(len(experiment.trials), body) + 1
        filled = dashboard.show(
            trial, run, groups, phase, since, lines=max(0, body),
            stalled=found[0].ranks if found else (), metric=experiment.metric,
            ages_at=self._state.body.ages_at if self._state.body else now,
        )  # fmt: skip
        self._fit_trials(experiment, filled + 1 if filled else 0)  # its lines and rule

    def _side_by_side(self, experiment: Experiment | None) -> bool:
        trials = len(experiment.trials) if experiment else 0
        return side_by_side(self.size.width, trials, self._body_lines())

    def _fit_trials(self, experiment: Experiment | None, dashboard: int) -> None:
        """The table's rows (``overview_layout.table_height``), under the dashboard's
        ``dashboard`` lines, or beside it."""
        trials = len(experiment.trials) if experiment else 0
        under = 0 if self.has_class("-wide") else dashboard
        self.query_one(TrialTable).styles.height = table_height(trials, self._body_lines(), under)

    def _body_lines(self) -> int:
        """The screen's height less every panel's but the trials' and the dashboard's:
        the lines of the body the two share."""
        state = self._state
        findings = state.body.findings if state.body else ()
        used = 1 + (state.problem is not None)  # cluster line, its banner
        width = max(1, self.size.width - 2)
        stall_text = describe_stall_line(stalls(findings)).plain.splitlines()
        used += sum(-(-len(line) // width) for line in stall_text)  # wrapped lines
        used += self._workload_lines  # every other run
        used += self.query_one(ExperimentHeader).lines_shown  # with its constants, warnings
        used += lines_taken(findings) + 1  # findings (with their rule) and the footer
        used += bool(self.query_one("#pending-reason", Static).display)
        return max(0, self.size.height - used)

    def _show_age(self) -> None:
        self.query_one(ClusterBar).show_age(self._age_text())
