"""A hostile folder, opened in the TUI in a real terminal (tmux), with no cluster: a
trial id that carries an OSC 2 (retitle the pane) and a cursor-up leaves the pane's
title and raytop's lines as they were, and one with a lone surrogate is shown and ``q``
still quits. (Every screen, field by field: tests/tui/test_hostile_text.py.)"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.tmux import Pane

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
STATE = "experiment_state-2026-01-01_00-00-00.json"


def folder_with(tmp_path, trial_id: str):
    experiment = tmp_path / "store" / "exp"
    experiment.mkdir(parents=True)
    trial = {"trial_id": trial_id, "status": "TERMINATED", "config": {"lr": 0.1}}
    rows = [[json.dumps(trial), json.dumps({"last_result": {"loss": 0.5}})]]
    (experiment / STATE).write_text(json.dumps({"trial_data": rows}))
    return tmp_path / "store"


def open_tui(tmp_path, store) -> Pane:
    command = [sys.executable, "-m", "raytop", "--storage", str(store), "--address", "127.0.0.1:1"]
    return Pane(command, size=(100, 30), env={"RAYTOP_HOME": str(tmp_path / "home")})


def test_an_osc_title_and_a_cursor_move_in_a_trial_id_do_nothing(tmp_path):
    store = folder_with(tmp_path, "aa_00000\x1b]2;PWNED\x1b\\\x1b[1A")
    pane = open_tui(tmp_path, store)
    try:
        title = pane.title()
        screen = pane.wait_for(lambda s: "aa_00000" in s, 30, "the trial on the overview")
        assert "\\x1b]2;PWNED" in screen  # shown, escaped
        assert "PWNED" not in pane.title() and pane.title() == title
        first = screen.splitlines()[0]
        assert "history from storage" in first  # the top line was not written over
        pane.keys("q")
        assert "EXITED=0" in pane.wait_for(lambda s: "EXITED=" in s, 20, "raytop to quit")
    finally:
        pane.close()


def test_a_lone_surrogate_in_a_trial_id_is_shown_and_q_quits(tmp_path):
    store = folder_with(tmp_path, "aa_\ud800")
    pane = open_tui(tmp_path, store)
    try:
        pane.wait_for(lambda s: "aa_\\ud800" in s, 30, "the trial on the overview")
        pane.keys("q")
        assert "EXITED=0" in pane.wait_for(lambda s: "EXITED=" in s, 20, "raytop to quit")
    finally:
        pane.close()
