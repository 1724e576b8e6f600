"""The overview's dashboard, as a user meets it: the highlighted trial's run, its phase
while the worker group starts, the rank strip at 80×24 and beside the trials when wide."""

from __future__ import annotations

import raytop.tui.format
from raytop.tui.format import fit_words
from raytop.tui.widgets import run_dashboard
from raytop.tui.widgets.run_dashboard import RunDashboard
from raytop.tui.widgets.trial_table import TrialTable

from . import dashboard_data
from .helpers import show, text_of


def dashboard_text(app) -> str:
    parts = app.screen.query(f"{RunDashboard.__name__} Static")
    return "\n".join(str(p.visual) for p in parts if p.display)


async def test_the_phase_while_the_worker_group_is_placed_then_starts(make_app, sweep):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, dashboard_data.scheduling(sweep))
        phase = " ".join(text_of(app, "#dash-phase").split())
        assert "scheduling" in phase and "every node's CPUs are taken" in phase
        assert "b0" in dashboard_text(app) and "unplaced" in dashboard_text(app)
        await show(pilot, dashboard_data.starting(sweep))
        phase = " ".join(text_of(app, "#dash-phase").split())  # it may fold at a word
        assert "starting" in phase and "worker group starting 1/2" in phase
        assert "r0" in text_of(app, "#dash-ranks")


async def test_the_dashboard_follows_the_highlighted_trial(make_app, sweep):
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, dashboard_data.starting(sweep))
        assert dashboard_data.TRIAL in text_of(app, "#dash-phase")
        await pilot.press("down", "down")  # the PENDING trial
        assert app.screen.query_one(TrialTable).selected_trial_id == "7d2a1_00002"
        phase = text_of(app, "#dash-phase")
        assert "7d2a1_00002" in phase and "waiting" in phase


async def test_a_stall_names_the_rank_behind_in_the_strip(make_app, stalled):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, stalled)
        ranks = text_of(app, "#dash-ranks")
        assert "stalled" in ranks and "r1" in ranks


async def test_many_ranks_collapse_to_counts_and_the_laggards_at_80x24(make_app, sweep):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, dashboard_data.many_ranks(sweep))
        ranks = text_of(app, "#dash-ranks")
        assert "41 reports" in ranks and "62 ranks" in ranks
        assert "40 reports" in ranks and "2 ranks" in ranks
        assert "r17" in ranks and "r45" in ranks
        for line in ranks.splitlines():
            assert len(line) <= 78


async def test_every_panel_fits_its_lines_and_no_word_is_cut(make_app, checkpointed, monkeypatch):
    fitted: list[tuple[str, str]] = []  # (a panel's line, as shown)

    def recorded(line, width, ellipsis):
        shown = fit_words(line, width, ellipsis)
        fitted.append((line.plain, shown.plain))
        return shown

    for module in (run_dashboard, raytop.tui.format):  # the panels' lines, the phase's last
        monkeypatch.setattr(module, "fit_words", recorded)
    for size in ((80, 24), (160, 48)):
        fitted.clear()
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await show(pilot, checkpointed)
            dashboard = app.screen.query_one(RunDashboard)
            for line in dashboard_text(app).splitlines():
                assert len(line) <= dashboard.size.width - 2
            cut = {(full, shown) for full, shown in fitted if shown != full}
            for full, shown in cut:  # a whole word, then the ellipsis
                kept = shown.removesuffix("…")
                assert kept != shown and full.startswith(kept), (full, shown)
                assert full[len(kept)] == " " and kept[-1:] not in ("", " "), (full, shown)
            # 80 columns cut the checkpoints' line ("… #3 committed 96M…"), 160 cut nothing
            assert len(cut) == (size[0] == 80), cut
            # 5 trials stand over the dashboard whole: stacked at both sizes.
            assert not app.screen.has_class("-wide")
            # The trials keep their rows: every trial visible at both sizes.
            table = app.screen.query_one(TrialTable)
            assert table.size.height >= 1 + table.row_count


async def test_the_dashboard_draws_the_highlighted_trials_metric_over_its_iterations(
    make_app, sweep
):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await show(pilot, sweep)
        trend, *chart = text_of(app, "#dash-trend").splitlines()
        # 12 losses, one cell each (up to 32), first → last, and the iterations done
        assert trend == "trend  █▇▆▅▄▃▃▃▂▂▁▁ loss 2.3→0.4213 · 12/20"
        # The lines nothing else needs: the same losses as a chart, highest to lowest.
        assert 3 <= len(chart) <= 20 and chart[0].endswith(" 2.3") and chart[-1].endswith(" 0.4213")
        bottom = chart[-1].split()[0]  # each loss a column or a few, each in the bottom row
        assert len(bottom) >= 12 and len(bottom) % 12 == 0, chart
        await pilot.press("down", "down")  # the PENDING trial: no history, no trend line
        assert not app.screen.query_one("#dash-trend").display


async def test_the_dashboard_trend_is_ascii_under_ascii(make_app, sweep):
    app = make_app(ascii_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await show(pilot, sweep)
        trend, *chart = text_of(app, "#dash-trend").splitlines()
        assert trend == "trend  #*+=:---..__ loss 2.3>0.4213 · 12/20"  # "·" is not a box
        assert chart and all(set(row) <= set("_.-:=+*# 0123456789.") for row in chart)
