"""Train runs outside raytop's experiments: ``n`` on the overview lists them (offered only
when there are some), Enter opens one; a run with no probe says what needs it."""

from __future__ import annotations

from dataclasses import replace

from raytop.model import Attempt
from raytop.tui.screens.run import NO_PROBE_NOTE, NO_PROBE_STATE_NOTE, RunScreen
from raytop.tui.screens.runs import PROBE_HINT, RunsScreen
from raytop.tui.widgets.runs_table import RunsTable
from raytop.tui.widgets.worker_table import NEEDS_PROBE, WorkerTable

from .conftest import NO_PROBE_WHY, NOW, OTHER_RUNS
from .helpers import cell, row_keys, show, text_of, wait_until


async def test_n_lists_the_other_runs_and_enter_opens_one_with_no_probe(make_app, placement):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, placement)
        assert "n" in app.screen.active_bindings
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.pause()
        table = app.screen.query_one(RunsTable)
        assert row_keys(table) == ["9f3e2a", "actor-c0ffee"]  # probed first
        assert [cell(table, "9f3e2a", c) for c in ("ranks", "reports", "state")] == [
            "2", "11-12", "running"
        ]  # fmt: skip
        assert [cell(table, "actor-c0ffee", c) for c in ("reports", "state")] == ["-", "no probe"]
        assert text_of(app, "#runs-summary").endswith("2 · 1 with no probe")
        assert text_of(app, "#runs-hint") == PROBE_HINT
        await pilot.press("tab", "down", "enter")  # from the list of every run to these
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await pilot.pause()
        assert app.screen.run_id == "actor-c0ffee"
        assert NO_PROBE_NOTE in text_of(app, "#run-notes")
        assert f"why no counts: {NO_PROBE_WHY}" in text_of(app, "#run-notes")
        workers = app.screen.query_one(WorkerTable)
        assert cell(workers, "0", "entered") == NEEDS_PROBE  # not a count of 0
        assert cell(workers, "1", "pid") == "81002"
        assert cell(workers, "1", "state") == "no probe"
        await pilot.press("escape", "escape")
        assert not isinstance(app.screen, (RunScreen, RunsScreen))


async def test_n_is_not_offered_without_other_runs(make_app, sweep):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        assert "n" not in {k for k, b in app.screen.active_bindings.items() if b.enabled}
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, RunsScreen)


async def test_a_run_from_trains_own_state_says_so_with_its_attempts(make_app, placement):
    """No probe, but its driver turned Train's state tracking on: its attempt number and
    attempts are Train's, and the note says where its ranks come from."""
    attempts = (
        Attempt(1, "errored", NOW - 90, attempt_id="a1", ended_at=NOW - 70, duration_s=20.0,
                error_class="RuntimeError", error="injected failure at step 1"),
        Attempt(2, "running", NOW - 60, attempt_id="a2"),
    )  # fmt: skip
    run = replace(OTHER_RUNS[1], run_name="state-tracked-run", attempt_id="a2",
                  attempt_index=2, attempts=attempts, source="train_state")  # fmt: skip
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, replace(placement, runs=(OTHER_RUNS[0], run)))
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.pause()
        table = app.screen.query_one(RunsTable)
        assert [cell(table, "actor-c0ffee", c) for c in ("attempt", "state")] == ["2", "no probe"]
        await pilot.press("tab", "down", "enter")  # from the list of every run to these
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await pilot.pause()
        notes = text_of(app, "#run-notes")
        assert NO_PROBE_STATE_NOTE in notes and NO_PROBE_NOTE not in notes
        assert "RuntimeError: injected failure at step 1" in text_of(app, "#run-attempts")
        assert "attempt 2 · world size 2" in text_of(app, "#run-title")
