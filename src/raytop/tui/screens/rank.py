"""One rank of a Train run: its heartbeat and process, its recent reports, its stack.

Pushed from the Run screen (Enter or ``w`` on a rank). It follows the rank across
snapshots (the run by ``run_id``, then the worker by rank) and, like the other screens,
renders only while on view; a rank that leaves the snapshot keeps its last known figures
with a note. ``s`` asks every rank for its stack (``stacks_request``: the same request
as the Run screen's, refused read-only) and shows this rank's in place.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from raytop.model import TrainRun, Worker
from raytop.model.hangs import HANG_KINDS
from raytop.model.ports import Collector
from raytop.tui.format import shown, shown_lines
from raytop.tui.messages import StacksReady
from raytop.tui.screens.run_data import describe_ledger, find_run, run_findings
from raytop.tui.screens.stacks import NO_ANSWER, describe_stack
from raytop.tui.screens.stacks_request import StacksRequestScreen, stacks_binding
from raytop.tui.state import ViewState
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.rank_summary import (
    describe_health,
    describe_reports,
    describe_where,
    rank_finding,
    state_words,
)
from raytop.tui.widgets.report_history import IntervalChart, ReportTable
from raytop.tui.widgets.worker_table import STATES

WIDE_COLUMNS = 140  # from this width the stack stands beside the reports
ASK = "no stack yet: s asks every rank for its Python stack"
ASK_READ_ONLY = "no stack: asking for one is disabled in read-only mode"
GONE = "this rank left the snapshot; showing its last known figures"


def find_worker(run: TrainRun | None, rank: int) -> Worker | None:
    if run is None:
        return None
    return next((w for w in run.workers if w.rank == rank), None)


class RankScreen(StacksRequestScreen):
    """Renders rank ``rank`` of run ``run_id`` from each new ``ViewState``."""

    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
        stacks_binding(
            "Ask every rank for its Python stack and show this rank's "
            "(a request in the cluster's KV store)."
        ),
    ]

    def __init__(
        self,
        run_id: str,
        rank: int,
        *,
        collector: Collector,
        state: ViewState,
        clock: Callable[[], float],
        read_only: bool,
    ) -> None:
        super().__init__(run_id, collector=collector, state=state, clock=clock, read_only=read_only)
        self.rank = rank
        self._run = find_run(state.body, run_id)
        self._worker = find_worker(self._run, rank)
        self._gone = False
        # The answer to this screen's ``s``: the rank's stack, "" when it did not answer.
        self._fetched: str | None = None
        self._stack_shown: str | None = None

    @property
    def worker(self) -> Worker | None:
        """The rank on screen (the last one seen, if it left the snapshot)."""
        return self._worker

    def compose(self) -> ComposeResult:
        with Horizontal(id="rank-title-line"):
            yield Static(id="rank-title")
            yield Static(id="rank-state")
            yield Static(id="rank-age")
        yield Static(id="rank-where")
        yield Static(id="rank-notes")
        yield Static(id="rank-finding")
        with Container(id="rank-body"):
            with Vertical(id="rank-facts"):
                yield Static(id="rank-health")
                yield Static(id="rank-reports")
                yield IntervalChart(id="rank-intervals")
                yield ReportTable(id="rank-history")
            with VerticalScroll(id="rank-stack") as stack:
                stack.border_title = "stack"
                yield Static(id="rank-stack-text")
        yield KeyFooter()

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE_COLUMNS, "-wide")

    def action_back(self) -> None:
        self.dismiss()

    # -- drawing ------------------------------------------------------------------------

    def _redraw(self) -> None:
        body = self._state.body
        run = find_run(body, self.run_id)
        worker = find_worker(run, self.rank)
        self._gone = worker is None and self._worker is not None
        if worker is not None:
            self._run, self._worker = run, worker
        self._show_title()
        self._show_finding()
        self._show_age()
        self._show_stack()

    def _show_title(self) -> None:
        title = self.query_one("#rank-title", Static)
        state = self.query_one("#rank-state", Static)
        where = self.query_one("#rank-where", Static)
        run, worker = self._run, self._worker
        if run is None or worker is None:
            title.update(
                shown(
                    Content.styled(
                        f"rank {self.rank} of run {self.run_id}: not in the snapshot",
                        "$text-muted",
                    )
                )
            )
            state.display = where.display = False
            return
        title.update(
            shown(
                Content.assemble(
                    Content.styled(f"rank {worker.rank}", "bold"),
                    " of run ",
                    Content.styled(run.run_name, "bold"),
                )
            )
        )
        state.display = where.display = True
        state.update(shown(state_words(worker)))
        # Coloured as in the Run screen's table (raytop.tcss gives both the same rules).
        for name in (*STATES, "stalled", "unknown"):
            state.remove_class(f"-{name}")
        state.add_class(f"-{'stalled' if self._missing() else worker.state or 'unknown'}")
        where.update(shown(describe_where(run, worker)))

    def _missing(self) -> bool:
        """Is this the rank the others wait for (a barrier stall's missing rank)?"""
        if self._run is None or self._gone:
            return False
        stall = next(
            (f for f in run_findings(self._state.body, self._run) if f.kind in HANG_KINDS), None
        )
        return stall is not None and self.rank in stall.ranks

    def _show_finding(self) -> None:
        widget = self.query_one("#rank-finding", Static)
        found = None
        if self._run is not None and not self._gone:
            found = rank_finding(run_findings(self._state.body, self._run), self.rank)
        widget.display = found is not None
        if found is not None:
            line, severity = found
            widget.set_class(severity == "warning", "-warning")
            widget.update(shown(line))

    def _show_age(self) -> None:
        """The parts that tick with the clock: the age, the notes, every "… ago"."""
        now = self._clock()
        self.query_one("#rank-age", Static).update(shown(self._age_text()))
        self._show_notes()
        worker = self._worker
        health = self.query_one("#rank-health", Static)
        reports = self.query_one("#rank-reports", Static)
        health.update(shown(describe_health(worker, now)) if worker else "")
        reports.update(describe_reports(worker, now) if worker else "")
        self.query_one(IntervalChart).show(worker, now)
        self.query_one(ReportTable).show(worker, now)

    def _show_notes(self) -> None:
        notes = []
        if self._state.problem:
            notes.append(f"DISCONNECTED — {self._state.problem} — showing the last figures")
        body = self._state.body
        ledger = describe_ledger(body.ledger if body else None, self._clock())
        if ledger:
            notes.append(ledger)
        if self._gone:
            notes.append(GONE)
        widget = self.query_one("#rank-notes", Static)
        widget.display = bool(notes)
        widget.update(shown_lines(notes))

    def _show_stack(self) -> None:
        """The answer to this screen's request (or that there was none), else the last
        stack the rank sent, else how to ask for one."""
        worker = self._worker
        if self._fetched is not None:
            stack: str | None = self._fetched
        else:
            stack = worker.stack if worker is not None else None
        text = self.query_one("#rank-stack-text", Static)
        panel = self.query_one("#rank-stack", VerticalScroll)
        panel.set_class(not stack, "-empty")
        if stack == self._stack_shown and stack is not None:
            return
        self._stack_shown = stack
        if stack:
            text.update(describe_stack(stack))
            # Where the code is now is the innermost frame, at the end.
            panel.scroll_end(animate=False, immediate=False)
        elif self._fetched == "":
            text.update(Content(f"this rank did not answer: {NO_ANSWER}"))
        else:
            text.update(Content(ASK_READ_ONLY if self._read_only else ASK))

    # -- stacks -------------------------------------------------------------------------

    def _stacks_arrived(self, message: StacksReady) -> None:
        worker = find_worker(find_run(message.snapshot, self.run_id), self.rank)
        self._fetched = (worker.stack if worker is not None else None) or ""
        self._stack_shown = None
        self._show_stack()
