"""A trial its scheduler stopped early reads EARLY-STOP in the trials table, and the
line under the table gives the scheduler's rule for the highlighted trial; at 80×24."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static

from raytop.model import Trial
from raytop.tui.widgets.trial_table import STOPPED_EARLY, TrialTable

from .helpers import cells_of, show

RULE = (
    "stopped at iteration 1: score -9 below the cutoff -0.5 of the rung at 1 "
    "(ASHA keeps the top 1/2 at each rung)"
)


def _with_trials(sweep, *trials: Trial):
    experiment = replace(sweep.experiments[0], trials=trials)
    return replace(sweep, experiments=(experiment,))


async def test_an_early_stopped_trial_and_its_rule(make_app, sweep) -> None:
    trials = (
        Trial("best", "TERMINATED", iterations=8, max_iterations=8),
        Trial("worse", "TERMINATED", iterations=1, max_iterations=8, scheduler_decision=RULE),
        Trial("waits", "PAUSED", iterations=3, scheduler_decision="paused at iteration 3 to "
              "let waiting trials run (fewer than 3 other trials to compare with)"),
    )  # fmt: skip
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, _with_trials(sweep, *trials))
        table = app.screen.query_one(TrialTable)
        assert cells_of(table, "best")["status"] == "TERMINATED"
        assert cells_of(table, "worse")["status"] == STOPPED_EARLY
        assert cells_of(table, "waits")["status"] == "PAUSED"
        line = app.screen.query_one("#pending-reason", Static)
        table.move_cursor(row=table.get_row_index("worse"))
        await pilot.pause()
        shown = str(line.render())
        assert line.display and shown.startswith("worse stopped at iteration 1: score -9")
        assert line.size.height == 1  # one line, cut to the width (no wrap)
        table.move_cursor(row=table.get_row_index("best"))
        await pilot.pause()
        assert not line.display  # ran its budget: nothing to explain
