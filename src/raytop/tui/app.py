"""``RaytopApp``: polls one collector in a thread and shows its snapshots.

Threading contract: the poller thread only calls ``collector.collect()`` and
``post_message``; everything that touches widgets happens on the UI thread in the
message handlers. Quitting only closes the UI; the Ray run is not touched. The only
changes raytop makes are the confirmed stops and resumes, through the injected
``controls``.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from raytop.model import Snapshot
from raytop.model.ports import Collector
from raytop.model.refresh import DEFAULT_REFRESH_S, paced_delay
from raytop.model.visible import visible, visible_lines
from raytop.tui.commands import REPLACED_SYSTEM_TITLES, key_commands
from raytop.tui.controls import Controls
from raytop.tui.full_collections import FullCollections
from raytop.tui.glyphs import ASCII, UNICODE, Glyphs
from raytop.tui.messages import SnapshotReady, SourceFailed
from raytop.tui.screens.base import SnapshotScreen
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import OverviewScreen
from raytop.tui.state import ViewState
from raytop.tui.theming import DEFAULT_THEME, install_themes, next_theme, variable_defaults

MAX_BACKOFF_S = 30.0
_WAKE_CHECK_S = 0.1  # how often a sleeping poller checks for "refresh now"
_MAX_ERROR_CHARS = 300  # a source's error as shown: one line, at most this long


def backoff_delay(refresh_s: float, failures: int) -> float:
    """Seconds to wait before the next poll: doubles per consecutive failure, capped."""
    if failures == 0:
        return refresh_s
    # The exponent is capped first: 2**1100 seconds would overflow a float, and an error
    # here (outside the poll's try) would end the poller after hours of failures.
    return min(refresh_s * 2 ** min(failures, 32), max(refresh_s, MAX_BACKOFF_S))


def _describe(exc: Exception) -> str:
    """``Type: first line`` of what a source raised, bounded: a malformed ledger page or
    KV value can make a message of any size or shape, and the bar shows one line."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not end the poller either
        text = "(no message)"
    first = text.strip().splitlines()[0] if text.strip() else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= _MAX_ERROR_CHARS else line[: _MAX_ERROR_CHARS - 1] + "…"


class RaytopApp(App[None]):
    CSS_PATH = ["raytop.tcss", "ascii.tcss"]  # ascii.tcss: rules only under the -ascii class
    TITLE = "raytop"
    BINDINGS = [
        Binding(
            "q",
            "quit",
            "quit",
            id="raytop.quit",
            tooltip="Close raytop; the Ray run is not affected.",
        ),
        Binding(
            "r",
            "refresh_now",
            "refresh",
            id="raytop.refresh",
            tooltip="Poll the cluster now instead of at the next tick.",
        ),
        Binding("c", "cycle_theme", "theme", id="raytop.theme", tooltip="The next colour theme."),
        Binding(
            "question_mark",
            "help",
            "help",
            key_display="?",
            id="raytop.help",
            tooltip="Every key of this screen, in a sentence each.",
        ),
    ]

    def __init__(
        self,
        collector: Collector,
        *,
        refresh_s: float = DEFAULT_REFRESH_S,
        autostart: bool = True,
        read_only: bool = False,
        theme: str = DEFAULT_THEME,
        controls: Controls | None = None,
        ascii_only: bool = False,
        freeze_gc: bool = False,
        own_first: bool = False,
    ) -> None:
        super().__init__()
        self.collector: Collector = collector
        self.refresh_s = refresh_s
        self.read_only = read_only
        # Stops and resume (``controls.Controls``); None, or read-only: the keys say so.
        self.controls = controls
        # ``raytop run``: the overview is its own experiment's, the rest one line away.
        self.own_first = own_first
        # Wall clock for "updated Ns ago"; tests replace it to freeze the display.
        self.clock = time.time
        self.state = ViewState()
        # ``--ascii``: pictures in plain ASCII (``tui.glyphs``), for terminals without blocks.
        self.glyphs: Glyphs = ASCII if ascii_only else UNICODE
        self._autostart = autostart
        self._requested_theme = theme
        self._theme_names: list[str] = []  # raytop's themes, in the order `c` cycles them
        self._refresh_now = threading.Event()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        # ``raytop`` itself (one app a process) freezes the collector's view of what the
        # app holds after its first snapshot (``on_snapshot_ready``); tests, with many
        # apps in one process, do not.
        self._frozen = not freeze_gc
        # And then runs Python's full collections itself, in the poller between refreshes
        # (``full_collections``).
        self._full = FullCollections()

    @property
    def latest(self) -> Snapshot | None:
        """The newest snapshot the collector produced, if any."""
        return self.state.latest

    def get_default_screen(self) -> OverviewScreen:
        return OverviewScreen(
            collector=self.collector,
            clock=lambda: self.clock(),
            read_only=self.read_only,
            controls=self.controls,
            own_first=self.own_first,
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return variable_defaults(self.current_theme)

    def on_mount(self) -> None:
        self.set_class(self.glyphs is ASCII, "-ascii")  # ascii.tcss: ASCII borders
        self._theme_names, problems = install_themes(self, self._requested_theme)
        if problems:
            self.notify("\n".join(problems), title="Themes", severity="error")
        if self._autostart:
            self.start_polling()

    def start_polling(self) -> None:
        """Start the single long-lived poller (a no-op while one is running).

        A daemon thread, not a Textual worker: a ``collect()`` stuck on an unreachable
        cluster must never keep the process alive after quit (threads cannot be killed,
        and the executor behind thread workers is joined at exit)."""
        if self._poller is not None and self._poller.is_alive():
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll_loop, name="raytop-poll", daemon=True)
        self._poller.start()

    def on_unmount(self) -> None:
        self._stop.set()
        self._full.give_back()

    def _poll_loop(self) -> None:
        """Runs in the poller thread: collect, post, sleep; never touches widgets."""
        failures = 0
        while not self._stop.is_set():
            self._refresh_now.clear()
            started = time.monotonic()
            self._full.between_refreshes()  # the last frame drawn, the next not on its way
            try:
                snapshot = self.collector.collect()
            except Exception as exc:  # the poller must survive anything a source does
                failures += 1
                self.post_message(SourceFailed(_describe(exc), failures))
                self._sleep(backoff_delay(self.refresh_s, failures))
            else:
                failures = 0
                delay, slow = paced_delay(self.refresh_s, time.monotonic() - started)
                self.post_message(SnapshotReady(snapshot, slow))
                self._sleep(delay)

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, waking at once on quit or on "refresh now"."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if self._stop.wait(min(remaining, _WAKE_CHECK_S)):
                return
            if self._refresh_now.is_set():
                return

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self._show(self.state.with_snapshot(message.snapshot, message.slow))
        if not self._frozen:
            # Once the first snapshot is on screen, what the app holds for its life (its
            # modules, widgets, the first table's rows) leaves the collector's generations:
            # at 10,000 trials a full collection walked ~600,000 such objects every refresh
            # or two, a 0.3-0.7 s pause of the UI (docs/PERFORMANCE.md, "Synthetic scale").
            # Objects made later are collected as before.
            self._frozen = True
            self.call_after_refresh(gc.freeze)
            self.call_after_refresh(self._full.take_over)

    def on_source_failed(self, message: SourceFailed) -> None:
        self._show(self.state.with_failure(message.error, message.consecutive))

    def _show(self, state: ViewState) -> None:
        self.state = state
        for screen in self.screen_stack:
            # Each draws only if it is on view; the others catch up on resume.
            if isinstance(screen, SnapshotScreen):
                screen.show(state)

    def notify(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information",
        timeout: float | None = None, markup: bool = True,
    ) -> None:  # fmt: skip
        """Every notice (screens' and widgets' ``notify`` come here) may carry a trial id,
        a folder or an error's text: each of its lines is made visible and none is read as
        markup, whatever the caller asked (``markup`` is accepted, and ignored)."""
        del markup
        lines = visible_lines(str(message).split("\n"))
        kwargs = {} if timeout is None else {"timeout": timeout}
        super().notify(
            "\n".join(lines), title=visible(title), severity=severity, markup=False, **kwargs
        )

    def action_cycle_theme(self) -> None:
        """The next of raytop's themes (``raytop themes`` lists them), said in a notice."""
        self.theme = next_theme(self._theme_names, self.theme)
        self.notify(f"theme {self.theme}", timeout=2)

    def action_refresh_now(self) -> None:
        """Poll now instead of at the next tick (and start polling if it wasn't)."""
        self._refresh_now.set()
        self.start_polling()

    def get_system_commands(self, screen: Screen[object]) -> Iterator[SystemCommand]:
        """The palette: the screen's keys as commands first, then Textual's own."""
        yield from key_commands(self, screen)
        for command in super().get_system_commands(screen):
            if command.title not in REPLACED_SYSTEM_TITLES:
                yield command

    def action_help(self) -> None:
        """Every key of the screen: the footer's, each with what it does in a sentence."""
        keys: dict[str, tuple[str, str]] = {}
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if binding.show and binding.description and binding.description not in keys:
                text = binding.description
                if binding.tooltip:
                    text += f": {binding.tooltip}"
                keys[binding.description] = (self.get_key_display(binding), text)
        can_stop = self.controls is not None and not self.read_only
        help_screen = HelpScreen(list(keys.values()), read_only=self.read_only, can_stop=can_stop)
        self.push_screen(help_screen)
