"""Every run on the cluster, then the Train runs outside raytop's experiments: what a
plain script or a colleague started.

Pushed from the overview with ``n`` (offered when the cluster runs more than the
experiment on view). The one list (``Snapshot.workloads``) says where each run comes from
and how it ended; Enter on a Train run's row opens its ranks. Runs whose
workers carry raytop's probe (``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe``) have report
counts; runs without it are known from the actor table only, and the screen says how to add
the probe. Enter opens a run's Run screen.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import DataTable, Static

from raytop.model.ports import Collector
from raytop.model.workloads import KIND_TRAIN_RUN
from raytop.tui.screens.base import SnapshotScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.state import ViewState
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.runs_table import RunsTable
from raytop.tui.widgets.workload_table import WorkloadTable

PROBE_HINT = (
    "runs marked 'no probe' are known from the actor table only: their report counts need "
    "raytop's probe in the workers, e.g. RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe "
    "python train.py (raytop installed where the workers run)"
)
NONE = "no Train runs outside raytop's experiments"


class RunsScreen(SnapshotScreen):
    """Renders the snapshot's runs of no experiment, only while visible."""

    AUTO_FOCUS = "WorkloadTable"
    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
        Binding(
            "w",
            "open_run",
            "ranks",
            id="raytop.open-run",
            tooltip="The ranks of the highlighted run (Enter does the same).",
        ),
    ]

    def __init__(
        self,
        *,
        collector: Collector,
        state: ViewState,
        clock: Callable[[], float],
        read_only: bool,
    ) -> None:
        super().__init__(state=state, clock=clock, read_only=read_only)
        self._collector = collector

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Static(id="workloads-summary")
        yield WorkloadTable()
        yield Static(id="runs-summary")
        yield RunsTable()
        yield Static(id="runs-hint")
        yield KeyFooter()

    def action_back(self) -> None:
        self.dismiss()

    def action_open_run(self) -> None:
        if isinstance(self.focused, WorkloadTable):
            row = self.focused.selected
            run_id = row.key if row is not None and row.kind == KIND_TRAIN_RUN else None
        else:
            run_id = self.query_one(RunsTable).selected_run_id
        if run_id is None:
            return
        self.app.push_screen(
            RunScreen(
                run_id,
                collector=self._collector,
                state=self._state,
                clock=self._clock,
                read_only=self._read_only,
            )
        )

    @on(DataTable.RowSelected, "RunsTable, WorkloadTable")
    def _run_chosen(self) -> None:
        self.action_open_run()

    def _redraw(self) -> None:
        state = self._state
        self.query_one(ClusterBar).show(state.cluster, state.problem)
        self._show_age()
        rows = state.body.workloads if state.body else ()
        live = sum(w.live for w in rows)
        self.query_one("#workloads-summary", Static).update(
            Content.styled(f"runs on the cluster: {len(rows)}, {live} live", "bold")
        )
        self.query_one(WorkloadTable).show_workloads(rows)
        runs = state.body.runs if state.body else ()
        without = sum(1 for r in runs if not r.instrumented)
        summary = f"Train runs outside raytop's experiments: {len(runs)}"
        if without:
            summary += f" · {without} with no probe"
        self.query_one("#runs-summary", Static).update(
            Content.styled(summary if runs else NONE, "bold" if runs else "$text-muted")
        )
        self.query_one(RunsTable).show_runs(runs)
        hint = self.query_one("#runs-hint", Static)
        hint.display = bool(without)
        hint.update(Content.styled(PROBE_HINT, "$text-muted"))

    def _show_age(self) -> None:
        self.query_one(ClusterBar).show_age(self._age_text())
