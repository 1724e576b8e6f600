"""One Ray Train run: who is behind at the report barrier, by how much, for how long.

Pushed from the overview for a trial's run. Like the overview it renders only while on
view and catches up on resume. Enter (or ``w``) on a rank opens the Rank screen: that
rank's heartbeat, report history and stack. ``s`` asks the collector for every rank's
Python stack (``stacks_request``: in a daemon thread; read-only refuses it) and shows
them side by side; ``n`` there asks again with native stacks (py-spy) and redraws them.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import DataTable, Static

from raytop.model import Attempt, Finding, RetryBudget, TrainRun
from raytop.model.format import fmt_duration
from raytop.model.hangs import HANG_KINDS
from raytop.model.nccl_ras import RayHangDetector
from raytop.model.ports import Collector
from raytop.model.train_run import RUN_FROM_TRAIN_STATE
from raytop.tui.format import shown, shown_lines
from raytop.tui.glyphs import UNICODE, glyphs_of
from raytop.tui.messages import StacksReady
from raytop.tui.screens.rank import RankScreen
from raytop.tui.screens.run_data import describe_ledger, find_run, run_findings
from raytop.tui.screens.stacks import StacksScreen
from raytop.tui.screens.stacks_request import StacksRequestScreen, stacks_binding
from raytop.tui.state import ViewState
from raytop.tui.widgets.checkpoint_table import CHECKPOINT_KINDS, CheckpointPanel
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.line import Line
from raytop.tui.widgets.share_bar import run_time_line
from raytop.tui.widgets.stall_banner import RunFindings, StallBanner
from raytop.tui.widgets.worker_table import WorkerTable

NO_PROBE_NOTE = (
    "no probe in this run's workers: its ranks (in pid order) are from the actor table; "
    "counts need RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe"
)
NO_PROBE_STATE_NOTE = (
    "no probe in this run's workers: its name, attempts and ranks are Train's own state "
    "(RAY_TRAIN_ENABLE_STATE_TRACKING); counts need RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe"
)
FROM_STORAGE_NOTE = (
    "from storage: its checkpoints as storage holds them; no rank counts (the report "
    "ledger lived in the cluster)"
)


MAX_ATTEMPT_LINES = 3  # the newest attempts listed under the title (80×24 stays usable)


def _retries(name: str, budget: RetryBudget) -> str:
    limit = "∞" if budget.unlimited else str(budget.limit)
    return f"{name} retries {budget.used}/{limit} used"


def describe_budget(run: TrainRun) -> str:
    """``worker retries 1/1 used`` (and the other classes' once one was used)."""
    parts = [
        _retries(name, budget)
        for name, budget in run.retry_budget.items()
        if name == "worker" or budget.used
    ]
    return " · ".join(parts)


def describe_attempt(attempt: Attempt, now: float) -> Content:
    """``#1 errored   12s  RuntimeError: boom`` (one line; the caller's width cuts it)."""
    style = {"errored": "$text-error", "finished": "$text-success"}.get(attempt.status, "")
    error = f"{attempt.error_class or ''}: {attempt.error or ''}".strip(": ")
    return Content.assemble(
        f"#{attempt.index} ",
        Content.styled(f"{attempt.status:<8}", style) if style else f"{attempt.status:<8}",
        f" {fmt_duration(attempt.lasted(now)):>6}",
        f"  {error}" if error else "",
    )


def describe_attempts(run: TrainRun, now: float) -> Content | None:
    """The newest ``MAX_ATTEMPT_LINES`` attempts, one a line (a running one's duration as
    of ``now``); None for a run with one attempt that did not fail (nothing to say)."""
    attempts = run.attempts
    if len(attempts) < 2 and not any(a.status == "errored" for a in attempts):
        return None
    latest = attempts[-MAX_ATTEMPT_LINES:]
    lines = [describe_attempt(a, now) for a in latest]
    if len(attempts) > len(latest):
        lines.insert(0, Content(f"({len(attempts) - len(latest)} earlier attempts)"))
    return shown_lines(lines)


def describe_detector(detector: RayHangDetector) -> Content:
    """The pipeline's line on Ray's NCCL hang detector, accented while it watches the run
    and muted when it does not (off, or not on this Ray)."""
    style = "$text-warning" if detector.disabled else "$accent" if detector.on else "$text-muted"
    return Content.styled(detector.line, style)


def describe_run(run: TrainRun) -> Content:
    parts: list[Content | str] = ["run ", Content.styled(run.run_name, "bold")]
    if run.from_storage:
        parts.append(Content.styled(" · from storage", "$accent"))
    else:
        parts.append(f" · attempt {run.attempt_index} · world size {run.world_size}")
    budget = describe_budget(run)
    if budget:
        parts.append(f" · {budget}")
    if run.trial_id:
        parts.append(f" · trial {run.trial_id}")
    if run.finished and not run.from_storage:
        parts.append(Content.styled(" · finished", "$text-success"))
    return Content.assemble(*parts)


class RunScreen(StacksRequestScreen):
    """Renders the run ``run_id`` of each new ``ViewState``, only while visible."""

    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
        Binding(
            "w",
            "open_rank",
            "rank",
            id="raytop.open-rank",
            tooltip="The highlighted rank: its heartbeat, reports and stack (Enter does the same).",
        ),
        stacks_binding(
            "Ask every rank for its Python stack (a request in the cluster's KV store)."
        ),
    ]

    def __init__(
        self,
        run_id: str,
        *,
        collector: Collector,
        state: ViewState,
        clock: Callable[[], float],
        read_only: bool,
    ) -> None:
        super().__init__(run_id, collector=collector, state=state, clock=clock, read_only=read_only)
        self._run = find_run(state.body, run_id)
        self._gone = False

    @property
    def run(self) -> TrainRun | None:
        """The attempt on screen (the last one seen, if it left the snapshot)."""
        return self._run

    def compose(self) -> ComposeResult:
        with Horizontal(id="run-title-line"):
            yield Line(id="run-title")
            yield Line(id="run-age")
        yield Line(id="run-notes")
        yield Line(id="run-attempts")
        yield Line(id="run-detector")
        yield Line(id="run-time")
        yield StallBanner()
        yield RunFindings(id="run-findings")
        yield WorkerTable()
        yield CheckpointPanel()
        yield KeyFooter()

    def action_back(self) -> None:
        self.dismiss()

    # -- one rank -----------------------------------------------------------------------

    def action_open_rank(self) -> None:
        rank = self.query_one(WorkerTable).cursor_key()
        if rank is not None:
            self._open_rank(int(rank))

    @on(DataTable.RowSelected, "WorkerTable")
    def _rank_chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self._open_rank(int(event.row_key.value))

    def _open_rank(self, rank: int) -> None:
        screen = RankScreen(
            self.run_id,
            rank,
            collector=self._collector,
            state=self._state,
            clock=self._clock,
            read_only=self._read_only,
        )
        self.app.push_screen(screen)

    def _stall(self) -> Finding | None:
        if self._run is None:
            return None
        found = run_findings(self._state.body, self._run)
        return found[0] if found and found[0].kind in HANG_KINDS else None

    def _redraw(self) -> None:
        body = self._state.body
        run = find_run(body, self.run_id)
        self._gone = run is None and self._run is not None
        if run is not None:
            self._run = run
        self._show_age()
        title = self.query_one("#run-title", Static)
        if self._run is None:
            title.update(
                shown(Content.styled(f"run {self.run_id}: not in the snapshot", "$text-muted"))
            )
            self.query_one("#run-attempts", Static).display = False
            self.query_one("#run-detector", Static).display = False
            self.query_one("#run-time", Static).display = False
            self.query_one(StallBanner).show(None)
            self.query_one("#run-findings", RunFindings).show(())
            self.query_one(WorkerTable).show_run(None)
            self.query_one(CheckpointPanel).show(None, (), self._clock())
            return
        title.update(shown(describe_run(self._run)))
        ages_at = body.ages_at_for(self._run) if body is not None else self._clock()
        attempts = describe_attempts(self._run, ages_at)
        panel = self.query_one("#run-attempts", Static)
        panel.display = attempts is not None
        panel.update(attempts or "")
        detector = self.query_one("#run-detector", Static)
        detector.display = self._run.ray_detector is not None
        if self._run.ray_detector is not None:
            detector.update(shown(describe_detector(self._run.ray_detector)))
        glyphs = glyphs_of(self)
        time_line = run_time_line(self._run, self.size.width or 80, glyphs.bar_full,
                                  glyphs.bar_full != UNICODE.bar_full)  # fmt: skip
        time_panel = self.query_one("#run-time", Static)
        time_panel.display = time_line is not None
        if time_line is not None:
            time_panel.update(shown(time_line))
        findings = run_findings(body, self._run) if not self._gone else []
        stall = findings[0] if findings and findings[0].kind in HANG_KINDS else None
        self.query_one(StallBanner).show(stall)
        self.query_one("#run-findings", RunFindings).show([f for f in findings if f is not stall])
        self.query_one(WorkerTable).show_run(self._run, stall.ranks if stall else (), ages_at)
        checkpoints = run_findings(body, self._run, CHECKPOINT_KINDS) if not self._gone else []
        self.query_one(CheckpointPanel).show(self._run, checkpoints, self._clock())

    def _show_age(self) -> None:
        self.query_one("#run-age", Static).update(shown(self._age_text()))
        self._show_notes()
        self.query_one(CheckpointPanel).tick(self._clock())

    def _show_notes(self) -> None:
        notes = []
        if self._state.problem:
            notes.append(f"DISCONNECTED — {self._state.problem} — showing the last counts")
        body = self._state.body
        ledger = describe_ledger(body.ledger if body else None, self._clock())
        if ledger:
            notes.append(ledger)
        if self._gone:
            notes.append("this run left the snapshot; showing its last known counts")
        if self._run is not None and self._run.from_storage:
            notes.append(FROM_STORAGE_NOTE)
        if self._run is not None and not self._run.instrumented:
            from_state = self._run.source == RUN_FROM_TRAIN_STATE
            notes.append(NO_PROBE_STATE_NOTE if from_state else NO_PROBE_NOTE)
            if self._run.no_probe is not None:
                notes.append(f"why no counts: {self._run.no_probe.line}")
        widget = self.query_one("#run-notes", Static)
        widget.display = bool(notes)
        widget.update(shown_lines(notes))

    # -- stacks -------------------------------------------------------------------------

    def _stacks_arrived(self, message: StacksReady) -> None:
        run = find_run(message.snapshot, self.run_id) or self._run
        if run is None:
            self.notify("the run is gone: no stacks to show", severity="warning")
            return
        stall = (
            next((f for f in run_findings(message.snapshot, run) if f.kind in HANG_KINDS), None)
            or self._stall()
        )
        ranks = stall.ranks if stall else ()
        on_top = self.app.screen
        if isinstance(on_top, StacksScreen) and on_top.run.run_id == run.run_id:
            on_top.show(run, ranks)  # the answer to its ``n``
            return
        self.app.push_screen(StacksScreen(run, missing=ranks, ask_native=self.ask_native))

    def ask_native(self) -> None:
        """The stacks screen's ``n``: every rank's stacks again, native ones too."""
        self._ask(native=True)
