"""The options for any terminal: ``--theme`` (and RAYTOP_THEME), ``--ascii``, NO_COLOR and
``--refresh`` reach the TUI, a bad value is one line before any cluster work; without a
terminal for the TUI (``raytop | cat``, ``TERM=dumb``) ``raytop`` prints the status and
says how to get the TUI, exit 0. No cluster is started: no address (an empty
RAYTOP_HOME), or one on a port nothing listens on."""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import raytop.cli as cli
from raytop.cli import main
from raytop.tui.app import RaytopApp
from raytop.tui.glyphs import ASCII, UNICODE
from raytop.tui.theming import available_themes

THEMES = [c.theme.name for c in available_themes()[0]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("RAY_ADDRESS", "RAYTOP_READ_ONLY", "RAYTOP_THEME", "NO_COLOR", "RAYTOP_DEBUG"):
        monkeypatch.delenv(name, raising=False)


def invoke(args, env=None):
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("raytop: error: ")
    return lines[0]


# -- --theme -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["--theme", "nope"], ["status", "--theme", "nope"], ["run", "x.toml", "--theme", "nope"],
     ["--theme", "", "status"]],
    ids=lambda a: " ".join(a),
)  # fmt: skip
def test_an_unknown_theme_is_one_line_listing_the_themes(args) -> None:
    """Refused before any cluster work: the address, unreachable, is never tried."""
    result = invoke(["--address", f"127.0.0.1:{free_port()}", *args])
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "--theme" in line and "unknown theme" in line
    assert all(name in line for name in THEMES), line
    assert "cannot reach" not in line and result.stdout == ""


def test_raytop_theme_in_the_environment_is_checked_too() -> None:
    result = invoke(["status"], env={"RAYTOP_THEME": "nope"})
    assert result.exit_code == 2
    assert "--theme" in one_line_error(result)


class Opened:
    """``raytop`` as if on a terminal; the app is made for real, ``run`` is recorded."""

    def __init__(self, monkeypatch) -> None:
        self.apps: list[RaytopApp] = []
        monkeypatch.setattr(cli, "tui_unavailable", lambda: None)
        monkeypatch.setattr(RaytopApp, "run", lambda app, *a, **k: self.apps.append(app))

    @property
    def app(self) -> RaytopApp:
        (app,) = self.apps
        return app


@pytest.mark.parametrize(
    ("args", "env", "theme"),
    [([], {}, "raytop-dark"), (["--theme", "raytop-light"], {}, "raytop-light"),
     ([], {"RAYTOP_THEME": "raytop-high-contrast"}, "raytop-high-contrast"),
     (["--theme", "raytop-light"], {"RAYTOP_THEME": "raytop-mono"}, "raytop-light"),
     ([], {"NO_COLOR": "1"}, "raytop-mono"),
     (["--theme", "raytop-light"], {"NO_COLOR": "1"}, "raytop-light")],
)  # fmt: skip
def test_the_theme_reaches_the_tui(monkeypatch, args, env, theme) -> None:
    opened = Opened(monkeypatch)
    result = invoke(["--read-only", *args], env=env)
    assert result.exit_code == 0, result.output
    assert opened.app._requested_theme == theme


@pytest.mark.parametrize("args", [["--ascii"]], ids=["--ascii"])
def test_ascii_reaches_the_tui(monkeypatch, args) -> None:
    opened = Opened(monkeypatch)
    invoke(["--read-only", *args])
    assert opened.app.glyphs is ASCII


def test_unicode_by_default_on_a_utf8_terminal(monkeypatch) -> None:
    opened = Opened(monkeypatch)
    monkeypatch.setattr(cli, "tui_look", lambda theme, ascii_only: {"ascii_only": ascii_only})
    invoke(["--read-only"])
    assert opened.app.glyphs is UNICODE


def test_refresh_reaches_the_tui(monkeypatch) -> None:
    opened = Opened(monkeypatch)
    invoke(["--read-only", "--refresh", "5"])
    assert opened.app.refresh_s == 5.0


@pytest.mark.parametrize("value", ["0", "-1", "0.05", "nan", "inf", "fast"])
def test_refresh_must_be_a_positive_number(value) -> None:
    result = invoke(["--refresh", value])
    assert result.exit_code == 2
    assert "--refresh" in one_line_error(result)


def test_refresh_help_says_it_is_for_slow_links() -> None:
    help_text = " ".join(invoke(["--help"]).stdout.split())
    assert "--refresh 5 over a slow ssh" in help_text
    assert "--theme NAME" in help_text and "RAYTOP_THEME" in help_text
    assert "--ascii" in help_text


# -- no terminal for the TUI ------------------------------------------------------------


def raytop_env(tmp_path, **more: str) -> dict[str, str]:
    """No cluster to be found: no address, and a Ray temp dir of its own (Ray's "latest
    cluster on this host" file is there: the worker's, beside the suite's shared cluster,
    made ``raytop`` attach to that cluster, and two reads of a live run differed)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "NO_COLOR", "RAYTOP_THEME", "RAYTOP_READ_ONLY")}  # fmt: skip
    return {**env, "RAYTOP_HOME": str(tmp_path / "home"), "RAY_TMPDIR": str(tmp_path / "ray"),
            **more}  # fmt: skip


def test_without_a_tty_raytop_prints_the_status_and_a_hint(tmp_path) -> None:
    """``raytop | cat``: stdout a pipe. The same text as ``raytop status``, then one
    line on stderr saying how to get the TUI; exit 0."""
    env = raytop_env(tmp_path, TERM="xterm-256color")
    started = time.monotonic()
    bare = subprocess.run([sys.executable, "-m", "raytop"], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)  # fmt: skip
    took = time.monotonic() - started
    status = subprocess.run([sys.executable, "-m", "raytop", "status"], capture_output=True,
                            text=True, timeout=60, env=env)  # fmt: skip
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout == status.stdout and bare.stdout.startswith("cluster ")
    hint = bare.stderr.strip().splitlines()
    assert len(hint) == 1 and "not a terminal" in hint[0]
    assert "kubectl exec -it" in hint[0] and "ssh -t" in hint[0]
    assert took < 20, f"a disconnected status took {took:.1f} s"


def test_without_a_tty_an_unreachable_address_is_the_status_error(tmp_path) -> None:
    address = f"127.0.0.1:{free_port()}"
    env = raytop_env(tmp_path)
    started = time.monotonic()
    bare = subprocess.run([sys.executable, "-m", "raytop", "--address", address],
                          capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert time.monotonic() - started < 20
    status = subprocess.run([sys.executable, "-m", "raytop", "--address", address, "status"],
                            capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert bare.returncode == status.returncode == 2
    assert bare.stderr == status.stderr and address in bare.stderr


def run_in_pty(args: list[str], env: dict[str, str], timeout_s: float = 30.0) -> tuple[int, str]:
    """Run raytop with stdin, stdout and stderr a real terminal; (exit code, all it wrote)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "raytop", *args], stdin=follower,
                            stdout=follower, stderr=follower, env=env, close_fds=True)  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the terminal closed: the process ended
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            tail = b"".join(chunks)[-300:]
            raise AssertionError(f"raytop {args} did not end in {timeout_s} s: ...{tail!r}")
        return proc.wait(timeout=10), b"".join(chunks).decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(leader)


def test_term_dumb_on_a_terminal_prints_the_status(tmp_path) -> None:
    """Both ends are a terminal, but TERM=dumb: no TUI (it would never end here)."""
    code, out = run_in_pty([], raytop_env(tmp_path, TERM="dumb"))
    assert code == 0, out
    assert out.startswith("cluster ")
    assert "raytop: TERM=dumb: the status, once; for the TUI" in out


@pytest.mark.parametrize("command", [["status"], ["check"], []])
def test_no_color_text_on_a_terminal_has_no_escapes(tmp_path, command) -> None:
    """On a real terminal (where colour could be drawn) under NO_COLOR: not one escape.
    The bare command gets TERM=dumb so it prints instead of opening the TUI."""
    env = raytop_env(tmp_path, NO_COLOR="1", TERM="dumb" if not command else "xterm-256color")
    _code, out = run_in_pty(command, env)
    assert out.strip(), "no output at all"
    assert "\x1b" not in out, repr(out)


def test_a_bad_textual_color_system_is_one_line_before_the_tui(monkeypatch) -> None:
    opened = Opened(monkeypatch)
    result = invoke(["--read-only"], env={"TEXTUAL_COLOR_SYSTEM": "16"})
    assert result.exit_code == 2
    assert "TEXTUAL_COLOR_SYSTEM='16'" in one_line_error(result)
    assert opened.apps == []


@pytest.mark.parametrize("value", ["auto", "standard", "256", "truecolor"])
def test_a_good_textual_color_system_opens_the_tui(monkeypatch, value) -> None:
    opened = Opened(monkeypatch)
    result = invoke(["--read-only"], env={"TEXTUAL_COLOR_SYSTEM": value})
    assert result.exit_code == 0, result.output
    assert len(opened.apps) == 1
