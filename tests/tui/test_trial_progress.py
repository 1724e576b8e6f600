"""The trials table's pictures: a progress bar when a trial's count is known, a sparkline
of its metric's history; plain ``iter`` and no trend column when no trial has them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.model import Trial
from raytop.tui.widgets.trial_table import TrialTable, progress_text

from .helpers import cells_of, show
from .test_terminal_modes import boxes, rendered

BLOCKS = set("▁▂▃▄▅▆▇█░")


def _with_trials(sweep, *trials: Trial):
    experiment = replace(sweep.experiments[0], trials=trials)
    return replace(sweep, experiments=(experiment,))


async def test_the_table_draws_the_bar_and_the_sparkline(make_app, sweep) -> None:
    trials = (
        Trial("a", "RUNNING", metrics={"loss": 0.1}, iterations=3, max_iterations=5,
              metric_history=(0.9, 0.5, 0.1)),
        Trial("b", "TERMINATED", metrics={"loss": 0.2}, iterations=64, max_iterations=64,
              metric_history=tuple(1.0 - i / 64 for i in range(64))),
        Trial("c", "RUNNING", iterations=2),  # a count not known: just the number
    )  # fmt: skip
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, _with_trials(sweep, *trials))
        table = app.screen.query_one(TrialTable)
        a, b, c = (cells_of(table, t) for t in "abc")
        assert (a["iter"], a["trend"]) == ("███░░ 3/5", "█▅▁")
        assert (b["iter"], b["trend"]) == ("█████ 64/64", "█▇▆▅▄▃▂▁")  # 64 values in 8 cells
        assert (c["iter"], c["trend"]) == ("2", "")
        assert str(table.columns["iter"].label) == "progress"
        assert table.virtual_size.width <= table.scrollable_content_region.width


async def test_without_counts_or_histories_the_table_is_as_before(make_app, sweep) -> None:
    trials = tuple(
        replace(t, max_iterations=None, metric_history=()) for t in sweep.experiments[0].trials
    )
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, _with_trials(sweep, *trials))
        table = app.screen.query_one(TrialTable)
        assert "trend" not in table.columns_shown
        assert str(table.columns["iter"].label) == "iter"
        assert cells_of(table, "7d2a1_00000")["iter"] == "12"
        # the room the pictures took goes back to the other columns
        assert {"elapsed", "fail"} <= set(table.columns_shown)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_under_ascii_the_pictures_have_no_blocks(make_app, sweep, size) -> None:
    app = make_app(ascii_only=True)
    async with app.run_test(size=size) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        cells = cells_of(table, "7d2a1_00000")
        assert cells["iter"] == "###.. 12/20"
        assert cells["trend"] and set(cells["trend"]) <= set("_.-:=+*#")
        text = rendered(app)[0]
        assert boxes(text) == set() and not BLOCKS & set(text), text


def test_progress_text_fits_its_width() -> None:
    trial = Trial("t", "RUNNING", iterations=120, max_iterations=1000)
    assert progress_text(trial, 11, "#", ".") == ".. 120/1000"  # the bar shrinks
    assert progress_text(trial, 9, "#", ".") == "120/1000"  # too narrow: the count alone
    assert progress_text(replace(trial, iterations=7, max_iterations=5), 11, "#", ".") == (
        "##### 7/5"
    )  # past the expected count: a full bar, the true count
