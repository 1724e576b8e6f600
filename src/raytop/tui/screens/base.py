"""What the overview and the Run screen share: they render the latest ``ViewState``, but
only while on view; a state that arrives under another screen is drawn on resume."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from textual.dom import DOMNode
from textual.screen import Screen

from raytop.model.format import fmt_duration
from raytop.tui.state import ViewState


def mark_bindings(node: DOMNode, ids: Collection[str], why: str) -> None:
    """Say in their descriptions why the bindings ``ids`` of ``node`` do nothing
    (``Stop trial (read-only)``): the footer and the help screen show it. This instance
    only: the class's bindings are shared."""
    table = node._bindings.key_to_bindings
    for key, bindings in table.items():
        table[key] = [
            replace(b, description=f"{b.description} ({why})") if b.id in ids else b
            for b in bindings
        ]


class SnapshotScreen(Screen[None]):
    """Draws ``self._state`` with ``_redraw``; ticks "updated … ago" with ``_show_age``."""

    def __init__(self, *, state: ViewState, clock: Callable[[], float], read_only: bool) -> None:
        super().__init__()
        self._state = state
        self._clock = clock
        self._read_only = read_only
        self._keys_offered: tuple | None = None  # the footer's keys at the last refresh

    def _keys_now(self) -> tuple:
        """What the footer shows: each active key, its action, words and whether it acts
        (``check_action`` asked for each, as Textual's footer does)."""
        return tuple(
            (key, active.binding.action, active.binding.description, active.enabled)
            for key, active in self.active_bindings.items()
        )

    def refresh_bindings(self) -> None:
        self._keys_offered = self._keys_now()  # Textual's own calls (focus, screen stack) too
        super().refresh_bindings()

    def offer_keys(self) -> None:
        """``refresh_bindings`` only when the footer's keys changed. Textual's Footer builds
        all of its keys anew (each a widget, styled anew) on every ``refresh_bindings``:
        asked on each snapshot, that was about a sixth of the Textual tests' CPU (a
        profile of tests/tui/test_keys.py: 1,241 footer recomposes, 31 of 196 s) and the
        same share of the TUI's own CPU at a 0.25 s refresh."""
        if self._keys_now() != self._keys_offered:
            self.refresh_bindings()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def on_screen_resume(self) -> None:
        self._redraw()

    @property
    def on_view(self) -> bool:
        """Mounted, the screen the user sees, and the app not shutting down: once it is,
        Textual removes widgets (children first) while snapshots and ticks still arrive,
        and a query of a removed one would end the app with a traceback (seen on quit
        under load, and in CI at the end of a Pilot test). The app stops running as its
        shutdown begins, before any widget goes."""
        if not (self.app.is_running and self.is_mounted and self.is_attached):
            return False
        return self._uncovered()

    def _uncovered(self) -> bool:
        """No opaque screen above this one: on top, or under modals only (a help or a
        confirmation dialog lets it show through). Not Textual's ``is_current``: that
        counts the screen just under the top one as a background screen whatever the
        top one is, so the overview, under a Run screen of 2,000 ranks, was redrawn
        unseen on every snapshot (35 ms of each refresh's 240)."""
        stack = self.app.screen_stack
        if self not in stack:
            return False
        above = stack[stack.index(self) + 1 :]
        return all(screen.styles.background.a < 1 for screen in above)

    def show(self, state: ViewState) -> None:
        """Take a new state; draw it now if this screen is on view, else on resume."""
        self._state = state
        if self.on_view:
            self._redraw()

    def _tick(self) -> None:
        if self.on_view:
            self._show_age()

    def _redraw(self) -> None:
        raise NotImplementedError

    def _show_age(self) -> None:
        raise NotImplementedError

    def _age_text(self) -> str:
        """``read-only · updated 2s ago``: how stale the data is, by the app's clock."""
        parts = ["read-only"] if self._read_only else []
        latest = self._state.latest
        if latest is not None:
            parts.append(f"updated {fmt_duration(self._clock() - latest.taken_at)} ago")
        if self._state.slow:
            parts.append(self._state.slow)
        return " · ".join(parts)
