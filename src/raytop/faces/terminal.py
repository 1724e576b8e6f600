"""The terminal the TUI draws on, kept clear of what Ray's native code writes to fd 2."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO


def has_terminal() -> bool:
    """Both ends are a terminal: the TUI can read keys and draw."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _stderr_sink(read_only: bool) -> BinaryIO:
    """Where fd 2 goes while the TUI runs: ``$RAYTOP_HOME/tui.log`` (the folder created if
    need be); ``/dev/null`` under read-only (it writes no file) or when the home cannot
    be written (the TUI must still open)."""
    from raytop.home import raytop_home

    if not read_only:
        try:
            home = raytop_home()
            home.mkdir(parents=True, exist_ok=True)
            return open(home / "tui.log", "ab")  # noqa: SIM115 (the caller closes it)
        except OSError:
            pass
    return open(os.devnull, "ab")  # noqa: SIM115


@contextlib.contextmanager
def native_stderr_to_log(read_only: bool = False) -> Iterator[None]:
    """Ray's C++ GCS client logs straight to fd 2 ("Failed to connect to GCS…"), and fd 2
    is the terminal Textual draws on. While the TUI runs, Textual gets a duplicate of the
    terminal and fd 2 goes to ``_stderr_sink``."""
    terminal_fd = os.dup(2)
    original = sys.__stderr__
    sys.__stderr__ = os.fdopen(terminal_fd, "w", buffering=1, closefd=False)
    with _stderr_sink(read_only) as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(terminal_fd, 2)
            os.close(terminal_fd)
            sys.__stderr__ = original
