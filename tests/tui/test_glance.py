"""The overview answers at a glance: the params that vary in the table and the constant
ones once above it, "5 of 8 trials" when the sweep's total is known, the best trial
starred (and the star moves), and no blank band between the trials and the run panel,
at 80×24, 100×30, 120×40 and 200×60 (SVG snapshots)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.model.snapshot import best_trial
from raytop.tui.messages import SnapshotReady
from raytop.tui.screens.overview_layout import first_trial_rows, side_by_side, table_height
from raytop.tui.widgets.run_dashboard import RunDashboard
from raytop.tui.widgets.trial_table import TrialTable

from .glance_data import glance
from .helpers import cells_of, show, text_of
from .test_snapshots import feed

SIZES = [(80, 24), (100, 30), (120, 40), (200, 60)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_overview_at_a_glance(snap_compare, make_app, sweep, size) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(glance(sweep)))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_the_constants_are_said_once_above_the_table(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, glance(sweep))
        header = text_of(app, "ExperimentHeader").splitlines()
        assert header[1].startswith("5 of 8 trials: 2 RUNNING")
        assert header[2] == "constants: batch_size=32 · epochs=8 · optimizer=adamw · seed=7"
        table = app.screen.query_one(TrialTable)
        assert cells_of(table, "7d2a1_00000")["params"] == "hidden=64 lr=0.01"
        # The trial's every param, full, in the run panel of the highlighted trial.
        params = text_of(app, "#dash-params")
        assert params == "params batch_size=32 epochs=8 hidden=64 lr=0.01 optimizer=adamw seed=7"


async def test_the_constants_line_is_cut_to_the_width(make_app, sweep) -> None:
    snapshot = glance(sweep)
    experiment = snapshot.experiments[0]
    long = {f"setting_{i:02d}": "x" * 8 for i in range(12)}
    trials = tuple(replace(t, config={**long, **t.config}) for t in experiment.trials)
    snapshot = replace(snapshot, experiments=(replace(experiment, trials=trials),))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, snapshot)
        line = text_of(app, "ExperimentHeader").splitlines()[2]
        assert line.startswith("constants: batch_size=32 · ") and line.endswith("…")
        assert len(line) <= 78


async def test_without_a_total_the_header_says_just_the_count(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, sweep)  # trials_total unknown (not launched by raytop)
        assert text_of(app, "ExperimentHeader").splitlines()[1].startswith("5 trials: ")


async def test_the_best_trial_is_starred_and_the_star_moves(make_app, sweep) -> None:
    snapshot = glance(sweep)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await show(pilot, snapshot)
        table = app.screen.query_one(TrialTable)
        assert cells_of(table, "7d2a1_00003")["metric"] == "★ 0.2954"  # min loss
        assert cells_of(table, "7d2a1_00000")["metric"] == "0.4213"
        # Trial 0 reports a lower loss: the pipeline names it best; the star follows.
        experiment = snapshot.experiments[0]
        better = replace(experiment.trials[0], metrics={"loss": 0.1})
        trials = (better, *experiment.trials[1:])
        moved = replace(experiment, trials=trials, best_trial=best_trial(trials, "loss", "min"))
        await show(pilot, replace(snapshot, taken_at=snapshot.taken_at + 1,
                                  experiments=(moved,)))  # fmt: skip
        assert cells_of(table, "7d2a1_00000")["metric"] == "★ 0.1"
        assert cells_of(table, "7d2a1_00003")["metric"] == "0.2954"


async def test_the_best_trial_star_is_ascii_under_ascii(make_app, sweep) -> None:
    app = make_app(ascii_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(pilot, glance(sweep))
        table = app.screen.query_one(TrialTable)
        assert cells_of(table, "7d2a1_00003")["metric"] == "* 0.2954"


@pytest.mark.parametrize("size", SIZES[:3], ids=[f"{w}x{h}" for w, h in SIZES[:3]])
async def test_no_blank_band_between_the_trials_and_the_run(make_app, sweep, size) -> None:
    """Under 140 columns the run panel sits right under the table's last row."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await show(pilot, glance(sweep))
        table = app.screen.query_one(TrialTable)
        dashboard = app.screen.query_one(RunDashboard)
        assert table.region.height == 1 + table.row_count  # every trial, no more
        assert dashboard.region.y == table.region.bottom


async def test_the_run_stands_beside_the_trials_only_when_they_do_not_fit_over_it(
    make_app, sweep
) -> None:
    """From 140 columns: 5 trials stand over the run panel; 80 trials, beside it."""
    snapshot = glance(sweep)
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await show(pilot, snapshot)
        assert not app.screen.has_class("-wide")
        experiment = snapshot.experiments[0]
        many = tuple(replace(experiment.trials[1], trial_id=f"7d2a1_{i:05d}") for i in range(5, 85))
        bigger = replace(experiment, trials=(*experiment.trials, *many))
        await show(pilot, replace(snapshot, experiments=(bigger,)))
        assert app.screen.has_class("-wide")
        table = app.screen.query_one(TrialTable)
        dashboard = app.screen.query_one(RunDashboard)
        assert dashboard.region.x >= table.region.right
        assert table.region.height > 40  # the trials take the body's height


async def test_a_hostile_constant_is_shown_escaped(make_app, sweep) -> None:
    snapshot = glance(sweep)
    experiment = snapshot.experiments[0]
    hostile = {"\x1b]0;owned\x07tag": "a\u202eb"}
    trials = tuple(replace(t, config={**hostile, **t.config}) for t in experiment.trials)
    snapshot = replace(snapshot, experiments=(replace(experiment, trials=trials),))
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await show(pilot, snapshot)
        line = text_of(app, "ExperimentHeader").splitlines()[2]
        assert "\x1b" not in line and "\u202e" not in line
        assert "\\x1b]0;owned\\x07tag=a\\u202eb" in line


def test_the_layout_arithmetic() -> None:
    # 5 trials in a body of 18 lines: all 5 rows over a dashboard of 11 lines.
    assert first_trial_rows(5, 18) == 6
    # 100 trials: the table keeps the dashboard its 6 lines (and its rule).
    assert first_trial_rows(100, 30) == 23
    # A short body: at least the header and 4 rows.
    assert first_trial_rows(100, 8) == 5
    assert not side_by_side(200, 5, 52) and side_by_side(200, 80, 52)
    assert not side_by_side(139, 80, 52)  # too narrow to stand beside
    # The table: its rows, at most what the dashboard leaves; never below one line.
    assert table_height(5, 24, 12) == 6
    assert table_height(50, 24, 12) == 12
    assert table_height(5, 3, 12) == 1
