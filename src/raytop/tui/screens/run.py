"""One Ray Train run: who is behind at the report barrier, by how much, for how long.

Pushed from the overview for a trial's run. Like the overview it renders only while on
view and catches up on resume. ``s`` asks the collector for every rank's Python stack, in
a daemon thread (``background.run_in_background``: ``request_stacks`` blocks up to its
timeout), and shows them side by side.
The request is written to the cluster's KV store, so read-only refuses it (``s`` only says
why), as it refuses the stops.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from raytop.model import Finding, LedgerStatus, Snapshot, TrainRun
from raytop.model.format import fmt_duration
from raytop.model.ports import Collector
from raytop.tui.background import run_in_background
from raytop.tui.messages import StacksFailed, StacksReady
from raytop.tui.screens.base import SnapshotScreen, mark_bindings
from raytop.tui.screens.stacks import StacksScreen
from raytop.tui.state import ViewState
from raytop.tui.widgets.checkpoint_table import CHECKPOINT_KINDS, CheckpointPanel
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.stall_banner import (
    RUN_KINDS,
    STALL,
    RunFindings,
    StallBanner,
    missing_ranks,
)
from raytop.tui.widgets.worker_table import WorkerTable

STACKS_TIMEOUT_S = 5.0
STACKS_IDS = frozenset({"raytop.stacks"})
READ_ONLY = "read-only: asking for stacks is disabled (it writes to the cluster's KV store)"


def find_run(snapshot: Snapshot | None, run_id: str) -> TrainRun | None:
    if snapshot is None:
        return None
    return next((r for r in snapshot.all_runs() if r.run_id == run_id), None)


def run_findings(
    snapshot: Snapshot | None, run: TrainRun, kinds: tuple[str, ...] = RUN_KINDS
) -> list[Finding]:
    """The findings of ``kinds`` about this attempt of ``run``, in the order of ``kinds``
    (by default the ledger's, stall first)."""
    if snapshot is None:
        return []
    found = [
        f
        for f in snapshot.findings
        if f.kind in kinds
        and f.evidence.get("run_id") == run.run_id
        and f.evidence.get("attempt_id", run.attempt_id) == run.attempt_id
    ]
    return sorted(found, key=lambda f: kinds.index(f.kind))


def describe_run(run: TrainRun) -> Content:
    parts: list[Content | str] = [
        "run ",
        Content.styled(run.run_name, "bold"),
        f" · attempt {run.attempt_index} · world size {run.world_size}",
    ]
    if run.trial_id:
        parts.append(f" · trial {run.trial_id}")
    if run.finished:
        parts.append(Content.styled(" · finished", "$text-success"))
    return Content.assemble(*parts)


def describe_ledger(ledger: LedgerStatus | None, now: float) -> str | None:
    if ledger is None:
        return None
    if not ledger.available:
        why = f": {ledger.error}" if ledger.error else ""
        return f"report ledger unavailable{why}; these counts may be stale"
    if ledger.restarted_at is not None:
        gap = f" (gap {fmt_duration(ledger.gap_s)})" if ledger.gap_s is not None else ""
        ago = fmt_duration(now - ledger.restarted_at)
        return f"ledger restarted {ago} ago{gap}: counts resumed from the probes"
    return None


class RunScreen(SnapshotScreen):
    """Renders the run ``run_id`` of each new ``ViewState``, only while visible."""

    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
        Binding(
            "s",
            "stacks",
            "stacks",
            id="raytop.stacks",
            tooltip="Ask every rank for its Python stack (a request in the cluster's KV store).",
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
        super().__init__(state=state, clock=clock, read_only=read_only)
        self.run_id = run_id
        self._collector = collector
        self._run = find_run(state.body, run_id)
        self._gone = False
        self._fetching = False
        if read_only:
            mark_bindings(self, STACKS_IDS, "read-only")

    @property
    def run(self) -> TrainRun | None:
        """The attempt on screen (the last one seen, if it left the snapshot)."""
        return self._run

    def compose(self) -> ComposeResult:
        with Horizontal(id="run-title-line"):
            yield Static(id="run-title")
            yield Static(id="run-age")
        yield Static(id="run-notes")
        yield StallBanner()
        yield RunFindings(id="run-findings")
        yield WorkerTable()
        yield CheckpointPanel()
        yield KeyFooter()

    def action_back(self) -> None:
        self.dismiss()

    def _stall(self) -> Finding | None:
        if self._run is None:
            return None
        found = run_findings(self._state.body, self._run)
        return found[0] if found and found[0].kind == STALL else None

    def _redraw(self) -> None:
        body = self._state.body
        run = find_run(body, self.run_id)
        self._gone = run is None and self._run is not None
        if run is not None:
            self._run = run
        self._show_age()
        title = self.query_one("#run-title", Static)
        if self._run is None:
            title.update(Content.styled(f"run {self.run_id}: not in the snapshot", "$text-muted"))
            self.query_one(StallBanner).show(None)
            self.query_one("#run-findings", RunFindings).show(())
            self.query_one(WorkerTable).show_run(None)
            self.query_one(CheckpointPanel).show(None, (), self._clock())
            return
        title.update(describe_run(self._run))
        findings = run_findings(body, self._run) if not self._gone else []
        stall = findings[0] if findings and findings[0].kind == STALL else None
        self.query_one(StallBanner).show(stall)
        self.query_one("#run-findings", RunFindings).show([f for f in findings if f is not stall])
        self.query_one(WorkerTable).show_run(self._run, missing_ranks(stall))
        checkpoints = run_findings(body, self._run, CHECKPOINT_KINDS) if not self._gone else []
        self.query_one(CheckpointPanel).show(self._run, checkpoints, self._clock())

    def _show_age(self) -> None:
        self.query_one("#run-age", Static).update(Content(self._age_text()))
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
        widget = self.query_one("#run-notes", Static)
        widget.display = bool(notes)
        widget.update(Content("\n".join(notes)))

    # -- stacks -------------------------------------------------------------------------

    def action_stacks(self) -> None:
        if self._read_only:
            self.notify(READ_ONLY, severity="warning")
            return
        collector = self._collector
        if not isinstance(collector, Collector):  # a poll-only source: no request_stacks
            self.notify("stacks aren't available from this source", severity="warning")
            return
        if self._fetching:
            self.notify("still fetching stacks…")
            return
        self._fetching = True
        self.notify(f"fetching stacks… (up to {STACKS_TIMEOUT_S:.0f}s)")
        run_id = self.run_id
        run_in_background(
            self,
            lambda: StacksReady(
                run_id, collector.request_stacks(run_id, timeout_s=STACKS_TIMEOUT_S)
            ),
            lambda exc: StacksFailed(run_id, f"{type(exc).__name__}: {exc}"),
            name="raytop-stacks",
        )

    def on_stacks_failed(self, message: StacksFailed) -> None:
        self._fetching = False
        self.notify(message.error, title="stacks failed", severity="error")

    def on_stacks_ready(self, message: StacksReady) -> None:
        self._fetching = False
        run = find_run(message.snapshot, self.run_id) or self._run
        if run is None:
            self.notify("the run is gone: no stacks to show", severity="warning")
            return
        stall = (
            next((f for f in run_findings(message.snapshot, run) if f.kind == STALL), None)
            or self._stall()
        )
        self.app.push_screen(StacksScreen(run, missing=missing_ranks(stall)))
