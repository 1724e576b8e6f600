"""The Resume screen (``u``): list the experiments under a storage path, preview what a
resume does to each trial, cycle the errored choice, resume after a yes, through fake
controls (the TUI's contract is ``tui.controls.ResumeControls``; the backend is tested
on its own). Read-only, or without controls, resuming only says why it does nothing."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from textual.widgets import Input

from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import OverviewScreen, parent_folder
from raytop.tui.screens.resume import ResumeScreen
from raytop.tui.widgets.resume_tables import ResumePreviewTable, StoredExperimentTable
from raytop.tui.widgets.trial_table import TrialTable

from .conftest import (
    CONCURRENCY_WARNING,
    LR_SEARCH,
    NOT_OURS,
    RESULTS,
    RUNNING_SWEEP,
    FakeResumeControls,
)
from .helpers import cell, cursor_key, record_notifications, row_keys, show, text_of, wait_until

QUESTION = (
    "Resume experiment lr_search with errored trials: skip? A detached driver runs "
    "Tuner.restore with the spec saved at launch. Nothing is deleted."
)


def actions(app) -> dict[str, str]:
    table = app.screen.query_one(ResumePreviewTable)
    return {key: cell(table, key, "action") for key in row_keys(table)}


def previewed(app, errored: str = "skip") -> bool:
    """The preview of lr_search with ``errored`` is on screen."""
    shown = actions(app)
    return (
        len(shown) == 4
        and f" {errored} " in text_of(app, "#resume-errored")
        and (errored != "restart" or "restart" in shown["a91c3_00003"])
    )


def offered(app, key: str) -> bool:
    return key in app.screen.active_bindings


async def open_resume(pilot, sweep, errored: str = "skip") -> None:
    """Show the sweep, press ``u``, wait for the list and lr_search's preview."""
    await show(pilot, sweep)
    await pilot.press("u")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
    await wait_until(pilot, lambda: previewed(pilot.app, errored))


async def test_u_lists_the_experiments_under_the_overviews_folder(make_app, sweep) -> None:
    controls = FakeResumeControls(hold=frozenset({"experiments_under"}))
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await pilot.press("u")
        assert isinstance(app.screen, ResumeScreen)
        assert app.screen.query_one(Input).value == RESULTS  # the sweep's parent folder
        await wait_until(pilot, lambda: controls.calls)
        assert text_of(app, "#resume-list-note") == f"listing {RESULTS} …"
        controls.release.set()
        await wait_until(pilot, lambda: previewed(app))
        table = app.screen.query_one(StoredExperimentTable)
        assert row_keys(table) == [RUNNING_SWEEP, LR_SEARCH, NOT_OURS]  # as given: newest first
        assert [cell(table, LR_SEARCH, c) for c in ("name", "status", "trials", "restore")] == [
            "lr_search",
            "INTERRUPTED",
            "4",
            "yes",
        ]
        assert cell(table, RUNNING_SWEEP, "note") == "running"
        assert cell(table, LR_SEARCH, "note") == "resumable"
        assert cell(table, NOT_OURS, "note") == "not launched by raytop"
        assert text_of(app, "#resume-list-note") == f"3 experiments in {RESULTS}, newest first"
        # The cursor starts on the newest one raytop can resume, not the running one.
        assert cursor_key(table) == LR_SEARCH
        assert controls.called("experiments_under") == [(RESULTS,)]
        assert all(t is not threading.main_thread() and t.daemon for t in controls.threads)


async def test_the_preview_shows_each_trial_and_the_errored_choice(make_app, sweep) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        assert controls.called("resume_preview") == [(LR_SEARCH, "skip")]  # the CLI default
        assert actions(app) == {
            "a91c3_00000": "skip (finished)",
            "a91c3_00001": "resume from checkpoint_000004, epoch 4",
            "a91c3_00002": "start from scratch (no checkpoint)",
            "a91c3_00003": "skip (stays ERROR)",
        }
        preview = app.screen.query_one(ResumePreviewTable)
        assert cell(preview, "a91c3_00001", "status") == "RUNNING"
        assert text_of(app, "#resume-heading") == "lr_search · INTERRUPTED"
        assert text_of(app, "#resume-errored") == "errored trials (e):  resume   restart   skip "
        assert not app.screen.query_one("#resume-warnings").display
        # At 80 columns the checkpoint column gives way; the highlighted row says it all.
        assert "checkpoint" not in preview.columns_shown
        assert text_of(app, "#resume-detail") == (
            "a91c3_00000 TERMINATED: skip (finished) · latest checkpoint_000009 (epoch 9)"
        )
        assert offered(app, "a")


async def test_the_checkpoint_column_is_there_when_wide(make_app, sweep) -> None:
    app = make_app(controls=FakeResumeControls())
    async with app.run_test(size=(120, 36)) as pilot:
        await open_resume(pilot, sweep)
        preview = app.screen.query_one(ResumePreviewTable)
        assert preview.columns_shown == ("trial", "status", "action", "checkpoint")
        assert cell(preview, "a91c3_00001", "checkpoint") == "000004 (epoch 4)"
        assert preview.virtual_size.width <= preview.scrollable_content_region.width


async def test_e_cycles_the_errored_choice_and_fetches_again(make_app, sweep) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        await pilot.press("e")
        await wait_until(pilot, lambda: previewed(app, "resume"))
        assert actions(app)["a91c3_00003"] == "resume from checkpoint_000002, epoch 2"
        await pilot.press("e")
        await wait_until(pilot, lambda: previewed(app, "restart"))
        assert actions(app)["a91c3_00003"].startswith("restart from scratch under a new trial id")
        warnings = app.screen.query_one("#resume-warnings")
        assert warnings.display
        assert text_of(app, "#resume-warnings") == f"⚠ {CONCURRENCY_WARNING}"
        await pilot.press("e")
        await wait_until(pilot, lambda: previewed(app, "skip"))
        assert not warnings.display
        assert controls.called("resume_preview") == [
            (LR_SEARCH, "skip"),
            (LR_SEARCH, "resume"),
            (LR_SEARCH, "restart"),
            (LR_SEARCH, "skip"),
        ]


async def test_moving_the_cursor_previews_that_experiment(make_app, sweep) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        await pilot.press("up")  # the running one: raytop cannot resume it, and says why
        await wait_until(pilot, lambda: app.screen.query_one("#resume-warnings").display)
        assert controls.called("resume_preview")[-1] == (RUNNING_SWEEP, "skip")
        assert text_of(app, "#resume-warnings") == (
            "⚠ torch_sweep is still running (driver pid 4242): nothing to resume"
        )
        assert app.screen.query_one("#resume-warnings").has_class("-error")
        assert actions(app) == {}
        assert not offered(app, "a")
        await pilot.press("a")
        assert isinstance(app.screen, ResumeScreen)  # nothing to confirm
        # Enter on an experiment chooses it at once and goes to its preview.
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: previewed(app))
        assert app.focused is app.screen.query_one(ResumePreviewTable)
        assert not app.screen.query_one("#resume-warnings").display
        assert controls.called("resume") == []


@pytest.mark.parametrize("keys", [("a", "y"), ("a", "enter"), ("enter", "enter", "y")])
async def test_resume_asks_then_calls_resume_once_in_a_thread(make_app, sweep, keys) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        seen = record_notifications(app)
        *before, yes = keys  # "enter", "enter": choose lr_search, then Enter on its preview
        await pilot.press(*before)
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert text_of(app, "#confirm-question") == QUESTION
        assert controls.called("resume") == []  # nothing before the yes
        await pilot.press(yes)
        await wait_until(pilot, lambda: any("resumed" in m for m, _ in seen))
        assert isinstance(app.screen, ResumeScreen)
        assert controls.called("resume") == [(LR_SEARCH, "skip")]
        thread = controls.threads[controls.calls.index(("resume", LR_SEARCH, "skip"))]
        assert thread is not threading.main_thread() and thread.daemon
        assert seen == [
            ("resuming lr_search…", "information"),
            ("resumed 'lr_search' (driver pid 5151)", "information"),
        ]
        # It runs now: the list is read again.
        await wait_until(pilot, lambda: len(controls.called("experiments_under")) == 2)


async def test_the_question_names_the_choice_and_carries_the_warnings(make_app, sweep) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        await pilot.press("e", "e")
        await wait_until(pilot, lambda: previewed(app, "restart"))
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmModal)
        question = text_of(app, "#confirm-question")
        assert "Resume experiment lr_search with errored trials: restart?" in question
        assert f"⚠ {CONCURRENCY_WARNING}" in question
        await pilot.press("y")
        await wait_until(pilot, lambda: controls.called("resume"))
        assert controls.called("resume") == [(LR_SEARCH, "restart")]


@pytest.mark.parametrize("no", ["n", "escape"])
async def test_no_does_not_resume(make_app, sweep, no) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press(no)
        assert isinstance(app.screen, ResumeScreen)
        for _ in range(5):
            await pilot.pause(0.02)
        assert controls.called("resume") == []
        assert seen == []


async def test_a_resume_in_flight_is_not_sent_twice(make_app, sweep) -> None:
    controls = FakeResumeControls(hold=frozenset({"resume"}))
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("a", "y")
        await wait_until(pilot, lambda: controls.called("resume"))
        assert text_of(app, "#resume-heading") == "lr_search · INTERRUPTED · resuming …"
        # Still blocked: the UI answers keys, and a second resume is refused with a word.
        await pilot.press("a")
        assert isinstance(app.screen, ResumeScreen)
        assert ("already resuming lr_search…", "information") in seen
        # Leaving and coming back finds the same screen, still resuming.
        screen = app.screen
        await pilot.press("escape", "u")
        assert app.screen is screen
        await pilot.press("a")
        assert isinstance(app.screen, ResumeScreen)
        controls.release.set()
        await wait_until(pilot, lambda: any("resumed" in m for m, _ in seen))
        assert controls.called("resume") == [(LR_SEARCH, "skip")]
        assert text_of(app, "#resume-heading") == "lr_search · INTERRUPTED"


async def test_a_failed_resume_says_why_and_can_be_tried_again(make_app, sweep) -> None:
    error = RuntimeError("'lr_search' is already running (driver pid 77)\nTraceback …")
    controls = FakeResumeControls(errors={"resume": error})
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("a", "y")
        await wait_until(pilot, lambda: any(s == "error" for _, s in seen))
        assert ("'lr_search' is already running (driver pid 77)", "error") in seen
        assert app.is_running
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmModal)  # nothing left in flight
        await pilot.press("n")


@pytest.mark.parametrize(
    ("kwargs", "suffix", "message"),
    [
        ({"read_only": True}, "read-only", "read-only: resuming is disabled"),
        ({}, "no controls", "no controls in this session: resuming is disabled"),
    ],
)
async def test_read_only_or_no_controls_refuses_to_resume(
    make_app, sweep, kwargs, suffix, message
) -> None:
    controls = FakeResumeControls() if kwargs else None
    app = make_app(controls=controls, **kwargs)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await pilot.press("u")
        assert isinstance(app.screen, ResumeScreen)
        if controls is not None:  # listing and previewing are reads: they still work
            await wait_until(pilot, lambda: previewed(app))
            await pilot.press("enter")  # Enter on the preview: the same refusal
        else:
            await pilot.pause()
            assert text_of(app, "#resume-list-note") == (
                "no controls in this session: cannot list experiments"
            )
        seen = record_notifications(app)
        assert offered(app, "a")
        assert app.screen.active_bindings["a"].binding.description == f"resume… ({suffix})"
        await pilot.press("a")
        assert isinstance(app.screen, ResumeScreen)  # no modal
        await pilot.pause()
        assert (message, "warning") in seen
        if controls is not None:
            assert controls.called("resume") == []


async def test_a_listing_error_is_one_line_and_the_screen_stays_usable(make_app, sweep) -> None:
    error = RuntimeError("/home/ray/ray_results: cannot be listed (Permission denied)\nTrace…")
    controls = FakeResumeControls(errors={"experiments_under": error})
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await pilot.press("u")
        await wait_until(pilot, lambda: "cannot be listed" in text_of(app, "#resume-list-note"))
        note = app.screen.query_one("#resume-list-note")
        assert text_of(app, "#resume-list-note") == (
            "/home/ray/ray_results: cannot be listed (Permission denied)"
        )
        assert note.has_class("-error")
        assert app.screen.query_one(StoredExperimentTable).row_count == 0
        assert not offered(app, "a")
        # Fixed on disk: r lists again.
        controls.errors.clear()
        await pilot.press("r")
        await wait_until(pilot, lambda: previewed(app))
        assert not note.has_class("-error")


async def test_another_path_typed_in_the_input_is_listed(make_app, sweep) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        await pilot.press("shift+tab")
        path = app.screen.query_one(Input)
        assert app.focused is path
        # Letters that are keys elsewhere (e, a, r, backspace) edit the path here.
        await pilot.press("ctrl+u", *"/data/area", "backspace", "enter")
        assert path.value == "/data/are"
        await wait_until(pilot, lambda: "no such folder" in text_of(app, "#resume-list-note"))
        assert text_of(app, "#resume-list-note") == "/data/are: no such folder"
        assert app.screen.query_one(ResumePreviewTable).row_count == 0
        assert text_of(app, "#resume-heading") == "no experiment chosen"
        # An empty path asks for one, instead of listing.
        await pilot.press("shift+tab", "ctrl+u", "enter")
        assert text_of(app, "#resume-list-note") == (
            "type a storage path (a folder of experiments), then Enter"
        )
        assert controls.called("experiments_under") == [(RESULTS,), ("/data/are",)]
        assert controls.called("resume") == []


async def test_back_to_the_overview_which_caught_up(make_app, sweep, next_tick) -> None:
    controls = FakeResumeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, sweep)
        # A snapshot under the Resume screen: the overview draws it once back on view.
        await show(pilot, next_tick(drop=("7d2a1_00004",)))
        await pilot.press("backspace")
        assert isinstance(app.screen, OverviewScreen)
        assert "7d2a1_00004" not in row_keys(app.screen.query_one(TrialTable))
        # Coming back lists afresh, keeping the choices made.
        await pilot.press("u")
        await wait_until(pilot, lambda: len(controls.called("experiments_under")) == 2)
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_the_folder_follows_the_overview_unless_the_user_typed_one(make_app, sweep) -> None:
    other = replace(sweep.experiments[0], name="exp2", path="/mnt/other/exp2")
    two = replace(sweep, experiments=(*sweep.experiments, other))
    app = make_app(controls=FakeResumeControls())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_resume(pilot, two)
        screen = app.screen
        await pilot.press("escape", "e", "u")  # the overview's next experiment
        assert app.screen is screen
        assert screen.query_one(Input).value == "/mnt/other"
        await pilot.press("shift+tab", "ctrl+u", *"/data", "enter", "escape", "e", "u")
        assert screen.query_one(Input).value == "/data"  # typed: kept


async def test_help_lists_u_and_the_resume_screens_keys(make_app, sweep) -> None:
    app = make_app(controls=FakeResumeControls())
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        footer = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert "u" in footer
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        lines = text_of(app, "#help-keys").splitlines()
        assert any(line.startswith("u  resume: ") for line in lines)
        assert "or a resume (u)" in text_of(app, "#help-about")
        await pilot.press("escape", "u")
        await wait_until(pilot, lambda: previewed(app))
        await pilot.press("question_mark")
        keys = [line.strip() for line in text_of(app, "#help-keys").splitlines()]
        assert "a  resume…: Resume the previewed experiment, after a yes." in keys
        assert "e  errored: Errored trials: resume them, restart them, or skip them." in keys
        assert "r  list again: Read the storage path's experiments again." in keys


def test_resume_bindings_have_raytop_ids() -> None:
    assert all(b.id and b.id.startswith("raytop.") for b in ResumeScreen.BINDINGS)
    assert "raytop.resume" in {b.id for b in OverviewScreen.BINDINGS}


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("/home/ray/ray_results/torch_sweep", "/home/ray/ray_results"),
        ("/home/ray/ray_results/torch_sweep/", "/home/ray/ray_results"),
        ("s3://bucket/runs/exp", "s3://bucket/runs"),
        ("/exp", "/"),
        ("exp", ""),
    ],
)
def test_parent_folder(path, parent) -> None:
    assert parent_folder(path) == parent
