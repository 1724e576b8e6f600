"""Progress while something slow comes up (the embedded cluster, a launched driver).

On a terminal: one line rewritten in place (``\\r``), "starting the embedded Ray cluster
· 6 s · waiting for the GCS", ended by a final line ("cluster up in 9 s"). Elsewhere (a
log, a pipe, CI): one line per phase change, never one per poll. No escape sequences
either way (``NO_COLOR``-clean): the old line is overwritten with spaces.

``ProgressLine`` is what ``launch`` reports to (``launch.start_progress.Progress``): called with a
line (``say``), ``waiting(task, what)`` on every poll, ``finished(line)`` at the end.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from raytop.faces.terminal import wants_ascii
from raytop.model.visible import visible

PREFIX = "raytop: "


class ProgressLine:
    """Draws progress on ``stream``; ``is_tty``: rewrite one line in place, cut to
    ``width`` (default: the terminal's) so it never wraps; ``ascii_only``: "-" for "·"."""

    def __init__(
        self, stream: TextIO, is_tty: bool, *, ascii_only: bool = False,
        width: int | None = None, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.stream = stream
        self.is_tty = is_tty
        self.clock = clock
        self.sep = " - " if ascii_only else " \u00b7 "
        self.width = width if width is not None else shutil.get_terminal_size().columns
        self._task: str | None = None
        self._what: str | None = None
        self._started = 0.0
        self._drawn = 0  # characters of the line now on screen (tty only)

    def __call__(self, line: str) -> None:
        """A line of its own (kept on screen); an open progress line is redrawn below it
        at its next ``waiting``. Lines, tasks and waits name experiments and folders:
        each is made visible, so only this class's own line ends reach the stream."""
        self._clear()
        self._write(f"{PREFIX}{visible(line)}\n")

    say = __call__

    def waiting(self, task: str, what: str) -> None:
        """Still on ``task``, now waiting for ``what``: called on every poll."""
        task, what = visible(task), visible(what)
        if task != self._task:
            self._task, self._what, self._started = task, None, self.clock()
        changed = what != self._what
        self._what = what
        if self.is_tty:
            elapsed = self.clock() - self._started
            self._draw(f"{PREFIX}{task}{self.sep}{elapsed:.0f} s{self.sep}{what}")
        elif changed:
            self._write(f"{PREFIX}{task}: {what}\n")

    def elapsed(self) -> float:
        """Seconds since the current task began (0 before any)."""
        return self.clock() - self._started if self._task is not None else 0.0

    def close(self) -> None:
        """Leave an open progress line on screen as it is (something else follows)."""
        if self.is_tty and self._drawn:
            self._write("\n")
            self._drawn = 0

    def finished(self, line: str) -> None:
        """The task is over: ``line`` replaces the progress line and stays."""
        self._clear()
        self._write(f"{PREFIX}{visible(line)}\n")
        self._task = self._what = None

    def _draw(self, text: str) -> None:
        text = text[: max(self.width - 1, 10)]
        pad = " " * max(0, self._drawn - len(text))
        self._write(f"\r{text}{pad}")
        self._drawn = len(text)

    def _clear(self) -> None:
        if self.is_tty and self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def stderr_progress() -> ProgressLine:
    """Progress on stderr, in place when it is a terminal (ASCII when it cannot encode "·")."""
    return ProgressLine(sys.stderr, sys.stderr.isatty(), ascii_only=wants_ascii(sys.stderr))
