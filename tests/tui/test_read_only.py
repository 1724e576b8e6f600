"""Read-only in the TUI: every TUI entry of ``cli.READ_ONLY_REFUSES`` (the one list of
what read-only refuses) is pressed with and without read-only, through the real screens
and fake controls: without, the change is asked for (so each test can fail); with, the
key only says why and nothing is asked. An entry with no recipe here fails its test."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from raytop.cli import READ_ONLY_REFUSES, _native_stderr_to_log
from raytop.model import Snapshot
from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.screens.resume import ResumeScreen
from raytop.tui.screens.run import RunScreen
from tests.conftest import environ

from .conftest import FakeResumeControls, StackCollector
from .helpers import record_notifications, show, wait_until

TUI_ENTRIES = [m for m in READ_ONLY_REFUSES if m.surface == "tui"]


class Case:
    """What a recipe needs: the app factory, the snapshots, a temporary folder."""

    def __init__(self, make_app, sweep: Snapshot, stalled: Snapshot, with_stacks: Snapshot,
                 tmp_path: Path) -> None:  # fmt: skip
        self.make_app = make_app
        self.sweep = sweep
        self.stalled = stalled
        self.with_stacks = with_stacks
        self.tmp_path = tmp_path


# A recipe presses its key read-only or not and returns (what it changed, the warnings).
Recipe = Callable[[Case, bool], Awaitable[tuple[list[object], list[str]]]]


async def _stop(case: Case, read_only: bool, key: str, method: str):
    controls = FakeResumeControls()
    app = case.make_app(controls=controls, read_only=read_only)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, case.sweep)
        notes = record_notifications(app)
        await pilot.press(key)
        await pilot.pause()
        if not read_only:
            assert isinstance(app.screen, ConfirmModal)
            await pilot.press("y")
            await wait_until(pilot, lambda: controls.called(method))
        return controls.called(method), [m for m, severity in notes if severity == "warning"]


async def _x(case: Case, read_only: bool):
    return await _stop(case, read_only, "x", "stop_experiment")


async def _t(case: Case, read_only: bool):
    return await _stop(case, read_only, "t", "stop_trial")


async def _a(case: Case, read_only: bool):
    """``a``: the resume of the previewed experiment."""
    controls = FakeResumeControls()
    app = case.make_app(controls=controls, read_only=read_only)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, case.sweep)
        await pilot.press("u")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await wait_until(pilot, lambda: controls.called("resume_preview"))
        await pilot.pause(0.1)
        notes = record_notifications(app)
        await pilot.press("a")
        await pilot.pause()
        if not read_only:
            assert isinstance(app.screen, ConfirmModal)
            await pilot.press("y")
            await wait_until(pilot, lambda: controls.called("resume"))
        await pilot.pause()
        warnings = [m for m, severity in notes if severity == "warning"]
        if read_only:
            assert controls.called("resume_preview")  # the preview is a read: it still works
        return controls.called("resume"), warnings


async def _s(case: Case, read_only: bool):
    collector = StackCollector(case.stalled, stacks=case.with_stacks)
    app = case.make_app(collector=collector, read_only=read_only)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, case.stalled)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        notes = record_notifications(app)
        await pilot.press("s")
        if not read_only:
            await wait_until(pilot, lambda: collector.stack_calls)
        await pilot.pause()
        if read_only:
            binding = app.screen.active_bindings["s"].binding
            assert binding.description == "stacks (read-only)"
        return list(collector.stack_calls), [m for m, sev in notes if sev == "warning"]


async def _tui_log(case: Case, read_only: bool):
    """While the TUI runs fd 2 goes to $RAYTOP_HOME/tui.log, which the CLI creates;
    read-only it goes to /dev/null and no file or folder is made."""
    home = case.tmp_path / "home"
    # This process's own home back after (an xdist worker's: its shared cluster's record)
    with environ(RAYTOP_HOME=str(home)), _native_stderr_to_log(read_only):
        os.write(2, b"Failed to connect to GCS\n")
    written = sorted(str(p.relative_to(case.tmp_path)) for p in case.tmp_path.rglob("*"))
    return written, []


RECIPES: dict[str, Recipe] = {"x": _x, "t": _t, "a": _a, "s": _s, "tui.log": _tui_log}


@pytest.fixture
def case(make_app, sweep, stalled, with_stacks, tmp_path) -> Case:
    return Case(make_app, sweep, stalled, with_stacks, tmp_path)


@pytest.mark.parametrize("mutation", TUI_ENTRIES, ids=lambda m: m.spelled)
async def test_without_read_only_the_key_changes_something(case, mutation) -> None:
    changed, warnings = await RECIPES[mutation.spelled](case, False)
    assert changed, f"{mutation.spelled}: nothing changed, so the read-only test proves nothing"
    assert warnings == []


@pytest.mark.parametrize("mutation", TUI_ENTRIES, ids=lambda m: m.spelled)
async def test_read_only_refuses_it_and_says_why(case, mutation) -> None:
    changed, warnings = await RECIPES[mutation.spelled](case, True)
    assert changed == []
    if mutation.spelled != "tui.log":  # a file not written has nobody to tell
        assert warnings and all(w.startswith("read-only: ") for w in warnings)


def test_every_tui_entry_has_a_recipe() -> None:
    assert {m.spelled for m in TUI_ENTRIES} == set(RECIPES)


def test_an_unwritable_home_does_not_stop_the_tui(tmp_path, monkeypatch) -> None:
    """$RAYTOP_HOME a file (or unwritable): fd 2 goes to /dev/null, the TUI still opens."""
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("RAYTOP_HOME", str(home))
    with _native_stderr_to_log(False):
        os.write(2, b"lost, harmlessly\n")
    assert home.read_text() == "not a folder"
