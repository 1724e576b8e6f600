"""Any terminal: the progress line (in place on a terminal, a line per phase elsewhere),
what raytop reads from the terminal (TERM=dumb, no TTY, an encoding without blocks,
NO_COLOR), the wait for a launched driver, and ``--no-tui`` output free of escapes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from raytop.faces import terminal
from raytop.faces.progress import ProgressLine
from raytop.faces.text import follow
from raytop.launch.start_progress import finished_of, waiting_of
from raytop.launch.workflow import wait_for_driver
from raytop.pipeline.collect import SnapshotCollector
from raytop.probe.trial_table import TrialSegments


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the progress line -------------------------------------------------------------------


def test_on_a_terminal_one_line_is_rewritten_in_place_then_finished() -> None:
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, is_tty=True, width=200, clock=clock)
    task = "starting the embedded Ray cluster"
    for second in range(7):
        clock.now = 100.0 + second
        line.waiting(task, "waiting for the GCS")
    line.finished("cluster up in 9 s")
    text = out.getvalue()
    assert text.count("\n") == 1  # the final line only: the waits were rewritten in place
    assert text.count("\r") >= 7
    frames = [f for f in text.split("\r") if f.strip()]
    assert frames[0].rstrip() == f"raytop: {task} \u00b7 0 s \u00b7 waiting for the GCS"
    assert frames[-2].rstrip() == f"raytop: {task} \u00b7 6 s \u00b7 waiting for the GCS"
    assert frames[-1] == "raytop: cluster up in 9 s\n"
    assert "\x1b" not in text  # no escape sequence: NO_COLOR-clean, TERM=dumb-clean


def test_a_shorter_frame_blanks_what_the_longer_one_left() -> None:
    out = io.StringIO()
    line = ProgressLine(out, is_tty=True, width=200, clock=Clock())
    line.waiting("task", "waiting for something long")
    line.waiting("task", "short")
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("raytop: task \u00b7 0 s \u00b7 short")
    assert len(last) == len("raytop: task \u00b7 0 s \u00b7 waiting for something long")


def test_a_frame_never_wraps_the_terminal() -> None:
    out = io.StringIO()
    ProgressLine(out, is_tty=True, width=40, clock=Clock()).waiting("t" * 80, "w")
    assert len(out.getvalue().lstrip("\r")) == 39


def test_elsewhere_one_line_per_phase_change_never_per_poll() -> None:
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, is_tty=False, clock=clock)
    task = "starting the embedded Ray cluster"
    for second in range(30):
        clock.now = 100.0 + second
        line.waiting(task, "waiting for the GCS" if second < 20 else "waiting for the head node")
    line("a line of its own")
    line.finished("cluster up in 30 s")
    assert out.getvalue().splitlines() == [
        f"raytop: {task}: waiting for the GCS",
        f"raytop: {task}: waiting for the head node",
        "raytop: a line of its own",
        "raytop: cluster up in 30 s",
    ]


def test_a_line_said_during_a_wait_is_not_glued_to_the_progress_line() -> None:
    out = io.StringIO()
    line = ProgressLine(out, is_tty=True, width=200, clock=Clock())
    line.waiting("task", "waiting")
    line("plan: fits")
    assert out.getvalue().endswith("\r" + " " * len("raytop: task \u00b7 0 s \u00b7 waiting")
                                   + "\rraytop: plan: fits\n")  # fmt: skip


def test_close_keeps_an_open_line_and_ends_it() -> None:
    out = io.StringIO()
    line = ProgressLine(out, is_tty=True, width=200, clock=Clock())
    line.waiting("task", "waiting")
    line.close()
    assert out.getvalue().endswith("waiting\n")


def test_ascii_progress_uses_no_middle_dot() -> None:
    out = io.StringIO()
    ProgressLine(out, is_tty=True, ascii_only=True, width=200, clock=Clock()).waiting("t", "w")
    assert out.getvalue() == "\rraytop: t - 0 s - w"


def test_a_plain_callable_gets_a_line_per_phase() -> None:
    said: list[str] = []
    waiting = waiting_of(said.append)
    for what in ("a", "a", "a", "b", "b"):
        waiting("task", what)
    finished_of(said.append)("done")
    assert said == ["task: a", "task: b", "done"]


# -- what raytop reads from the terminal -------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "ascii_only"),
    [("utf-8", False), ("UTF-8", False), ("ascii", True), ("latin-1", True), (None, True)],
)
def test_ascii_when_the_stream_cannot_encode_blocks(encoding, ascii_only) -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding or "ascii")
    if encoding is None:
        stream = io.StringIO()  # .encoding is None: nothing says it can
    assert terminal.wants_ascii(stream) is ascii_only


class _Tty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_term_dumb_means_no_tui_even_on_a_terminal(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setattr(sys, "stdin", _Tty())
    monkeypatch.setattr(sys, "stdout", _Tty())
    assert terminal.tui_unavailable() == "TERM=dumb"


def test_a_terminal_on_both_ends_can_draw(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(sys, "stdin", _Tty())
    monkeypatch.setattr(sys, "stdout", _Tty())
    assert terminal.tui_unavailable() is None
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert terminal.tui_unavailable() == "stdout is not a terminal"


def test_no_tty_means_no_tui(monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert terminal.tui_unavailable() == "stdin is not a terminal"


@pytest.mark.parametrize(
    ("env", "theme", "expected"),
    [
        ({"NO_COLOR": "1"}, None, "raytop-mono"),
        ({"NO_COLOR": "yes"}, "raytop-light", "raytop-light"),  # asked for: kept
        ({"NO_COLOR": ""}, None, None),  # empty: unset (no-color.org)
        ({}, None, None),
        ({}, "raytop-high-contrast", "raytop-high-contrast"),
    ],
)
def test_the_theme_under_no_color(monkeypatch, env, theme, expected) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    look = terminal.tui_look(theme, ascii_only=False)
    assert look.get("theme") == expected
    if env.get("NO_COLOR") == "":  # Textual would read an empty NO_COLOR as set
        assert "NO_COLOR" not in os.environ


def test_ascii_is_kept_when_asked(monkeypatch) -> None:
    assert terminal.tui_look(None, ascii_only=True)["ascii_only"] is True


# -- a launched driver coming up ---------------------------------------------------------


def _write(path, data) -> None:
    path.write_text(json.dumps(data))


def test_wait_for_driver_shows_each_phase_until_the_first_trial(tmp_path) -> None:
    said: list[str] = []

    def driver() -> None:  # the files a real driver leaves, in its order
        time.sleep(0.3)
        _write(tmp_path / "job.json", {"job_id": "01000000"})
        time.sleep(0.3)
        TrialSegments(tmp_path).put([{"trial_id": "t1", "status": "PENDING"}])

    writer = threading.Thread(target=driver)
    writer.start()
    started = time.monotonic()
    up = wait_for_driver(tmp_path, said.append, timeout_s=10.0, poll_s=0.02)
    writer.join(timeout=5)
    assert up is True and time.monotonic() - started < 5
    assert said[:2] == [
        "starting the driver: waiting for the driver to connect to Ray",
        "starting the driver: waiting for the first trial",
    ]
    assert len(said) == 3 and said[2].startswith("driver up in ")


def test_wait_for_driver_ends_when_the_driver_ended(tmp_path) -> None:
    _write(tmp_path / "exit.json", {"code": 1, "error": "boom", "finished_at": 0})
    said: list[str] = []
    assert wait_for_driver(tmp_path, said.append, timeout_s=10.0, poll_s=0.02) is False
    assert said == ["the driver ended after 0 s, before any trial"]


def test_wait_for_driver_ends_when_its_process_is_gone(tmp_path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    _write(tmp_path / "driver.json", {"pid": gone.pid, "pid_create_time": time.time(),
                                      "host": os.uname().nodename})  # fmt: skip
    said: list[str] = []
    assert wait_for_driver(tmp_path, said.append, timeout_s=10.0, poll_s=0.02) is False
    assert said[-1].startswith("the driver ended after")


def test_wait_for_driver_gives_up_at_its_deadline(tmp_path) -> None:
    said: list[str] = []
    started = time.monotonic()
    assert wait_for_driver(tmp_path, said.append, timeout_s=0.2, poll_s=0.02) is False
    assert time.monotonic() - started < 3
    assert said[-1].startswith("no trial yet after")


# -- --no-tui prints no escapes ----------------------------------------------------------


def test_follow_prints_plain_lines_without_escapes(tmp_path, monkeypatch, capsys) -> None:
    """A finished experiment followed through the real readers (no cluster): its lines
    and the progress before them carry no escape sequence."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    experiment = tmp_path / "results" / "plain"
    raytop_dir = experiment / ".raytop"
    raytop_dir.mkdir(parents=True)
    rows = [{"trial_id": "a1_00000", "status": "TERMINATED"}]
    _write(raytop_dir / "trials.json", {"trials": rows})
    _write(raytop_dir / "exit.json", {"code": 0, "error": None, "finished_at": time.time()})
    (raytop_dir / "driver.log").write_text("done\n")
    collector = SnapshotCollector(None, experiments=[(str(experiment), raytop_dir)])
    progress_out = io.StringIO()
    progress = ProgressLine(progress_out, is_tty=True, width=200)
    follow(collector, 0.05, raytop_dir / "driver.log", progress)
    out = capsys.readouterr()
    assert "plain" in out.out and "1 TERMINATED" in out.out
    assert "driver up in" in progress_out.getvalue()
    for text in (out.out, out.err, progress_out.getvalue()):
        assert "\x1b" not in text
