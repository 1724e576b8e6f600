"""The terminal the TUI draws on: whether there is one (``tui_unavailable``), what it
can show (``wants_ascii``, ``no_color``), and fd 2 kept clear of what Ray's native code
writes while the TUI draws (``native_stderr_to_log``). docs/TERMINALS.md."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO, TextIO

from raytop.home import raytop_home

# Said after the plain status when there is no terminal for the TUI.
NO_TUI_HINT = (
    "for the TUI, give raytop a terminal: `kubectl exec -it <head-pod> -- raytop`, "
    "`ssh -t <host> raytop` (docs/TERMINALS.md)"
)
BLOCKS = "\u2588\u2026"  # "█…": a stream that cannot encode these gets the ASCII pictures


def tui_unavailable() -> str | None:
    """Why the TUI cannot draw here (``TERM=dumb``, stdin or stdout not a terminal), or
    None: both ends are a terminal that can be drawn on."""
    if os.environ.get("TERM", "").strip() == "dumb":
        return "TERM=dumb"
    if not sys.stdin.isatty():
        return "stdin is not a terminal"
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    return None


def wants_ascii(stream: TextIO | None = None) -> bool:
    """``stream`` (default stdout) cannot encode the block characters pictures use: an
    ASCII or Latin-1 locale (``LANG=C`` on an old system, a bare container)."""
    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None)
    try:
        BLOCKS.encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def no_color() -> bool:
    """``NO_COLOR`` is set to a non-empty value (https://no-color.org)."""
    return bool(os.environ.get("NO_COLOR"))


MONO_THEME = "raytop-mono"
# What TEXTUAL_COLOR_SYSTEM may say (Textual hands it to Rich's Console; another value
# would end the TUI with a KeyError as it opens).
COLOR_SYSTEMS = ("auto", "standard", "256", "truecolor", "windows")


def color_system_problem() -> str | None:
    """One line when ``TEXTUAL_COLOR_SYSTEM`` is set to a value Textual cannot use."""
    value = os.environ.get("TEXTUAL_COLOR_SYSTEM")
    if value is None or value in COLOR_SYSTEMS:
        return None
    return f"TEXTUAL_COLOR_SYSTEM={value!r}: use one of {', '.join(COLOR_SYSTEMS)}"


def tui_look(theme: str | None, ascii_only: bool) -> dict[str, object]:
    """``RaytopApp``'s keywords for how it draws here: ``--ascii``, or a stdout that cannot
    encode blocks; the theme asked for, else under ``NO_COLOR`` the grey one (Textual
    itself turns every colour grey when NO_COLOR is set). An empty NO_COLOR means unset
    (no-color.org) but Textual reads any NO_COLOR as set: it is dropped first."""
    if os.environ.get("NO_COLOR") == "":
        del os.environ["NO_COLOR"]
    look: dict[str, object] = {"ascii_only": ascii_only or wants_ascii()}
    if theme is None and no_color():
        theme = MONO_THEME
    if theme is not None:
        look["theme"] = theme
    return look


def _stderr_sink(read_only: bool) -> BinaryIO:
    """Where fd 2 goes while the TUI runs: ``$RAYTOP_HOME/tui.log`` (the folder created if
    need be); ``/dev/null`` under read-only (it writes no file) or when the home cannot
    be written (the TUI must still open)."""
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
