"""Asking a run's ranks for their Python stacks, from any screen about that run.

The Run screen shows the answer side by side (``StacksScreen``), the Rank screen shows
one rank's in place; the asking is the same and lives here. ``request_stacks`` blocks up
to its timeout, so it runs in a daemon thread (``background.run_in_background``) that
answers with ``StacksReady`` or ``StacksFailed``; one request at a time per screen.
The request is written to the cluster's KV store, so read-only refuses it (``s`` only
says why), as it refuses the stops. ``_ask(native=True)`` asks for native stacks too
(py-spy in each worker: the stacks screen's ``n``), with a longer timeout. The answer
says where the collector saved it (``Snapshot.stacks_capture``): one notice.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.binding import Binding

from raytop.model.ports import NATIVE_STACKS_TIMEOUT_S, STACKS_TIMEOUT_S, Collector
from raytop.tui.background import run_in_background
from raytop.tui.messages import StacksFailed, StacksReady
from raytop.tui.screens.base import SnapshotScreen, mark_bindings
from raytop.tui.state import ViewState

STACKS_IDS = frozenset({"raytop.stacks"})
READ_ONLY = "read-only: asking for stacks is disabled (it writes to the cluster's KV store)"
NOT_AVAILABLE = "stacks aren't available from this source"


def stacks_binding(tooltip: str) -> Binding:
    """``s``, with the sentence its screen's help gives."""
    return Binding("s", "stacks", "stacks", id="raytop.stacks", tooltip=tooltip)


class StacksRequestScreen(SnapshotScreen):
    """A screen about the run ``run_id`` whose ``s`` asks its ranks for their stacks;
    a subclass says what to do with the answer in ``_stacks_arrived``."""

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
        self._fetching = False
        if read_only:
            mark_bindings(self, STACKS_IDS, "read-only")

    def action_stacks(self) -> None:
        self._ask(native=False)

    def _ask(self, *, native: bool) -> None:
        if self._read_only:
            self.notify(READ_ONLY, severity="warning")
            return
        collector = self._collector
        if not isinstance(collector, Collector):  # a poll-only source: no request_stacks
            self.notify(NOT_AVAILABLE, severity="warning")
            return
        if self._fetching:
            self.notify("still fetching stacks…")
            return
        self._fetching = True
        timeout_s = NATIVE_STACKS_TIMEOUT_S if native else STACKS_TIMEOUT_S
        what = "native stacks (py-spy)" if native else "stacks"
        self.notify(f"fetching {what}… (up to {timeout_s:.0f}s)")
        run_id = self.run_id

        def ask():
            if native:
                return collector.request_stacks(run_id, timeout_s=timeout_s, native=True)
            return collector.request_stacks(run_id, timeout_s=timeout_s)

        run_in_background(
            self,
            lambda: StacksReady(run_id, ask()),
            lambda exc: StacksFailed(run_id, f"{type(exc).__name__}: {exc}"),
            name="raytop-stacks",
        )

    def on_stacks_failed(self, message: StacksFailed) -> None:
        self._fetching = False
        self.notify(message.error, title="stacks failed", severity="error")

    def on_stacks_ready(self, message: StacksReady) -> None:
        self._fetching = False
        capture = message.snapshot.stacks_capture
        if capture is not None and capture.note:
            self.notify(capture.note, title="capture")
        self._stacks_arrived(message)

    def _stacks_arrived(self, message: StacksReady) -> None:
        raise NotImplementedError
