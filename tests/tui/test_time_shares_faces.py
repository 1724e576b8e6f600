"""Where the ranks' time goes, as the TUI shows it: a time-share bar per rank on the Run
screen (at 80×24 too), the run's goodput line there and in the overview's run panel, the
ASCII form, and the look (one snapshot at 80×24)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.diagnose.time_sinks import time_sink_findings
from raytop.model import Snapshot, TrainRun
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from raytop.tui.messages import SnapshotReady
from raytop.tui.screens.run import RunScreen
from raytop.tui.widgets.share_bar import bar_text, segments
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.worker_table import WorkerTable

from .helpers import cell, show, text_of
from .test_snapshots import feed

LINEAR = {"compute": 6.0, "report_wait": 30.0, "report_barrier": 2.0, "report_upload": 2.0}
SLOW = {"compute": 34.0, "data_loader": 6.0}


def with_shares(run: TrainRun, seconds: dict[int, dict[str, float]], now: float) -> TrainRun:
    workers = tuple(
        replace(
            w, activity=replace(w.activity, time_s=seconds[w.rank], recent_time_s=seconds[w.rank])
        )  # fmt: skip
        if w.activity is not None
        else w
        for w in run.workers
    )
    return with_rank_states(replace(run, workers=workers, controller_poll_s=2.0), Thresholds(), now)


@pytest.fixture
def timed(collective_hung: Snapshot) -> Snapshot:
    """The 3-rank run of ``collective_hung`` with time shares: ranks 0 and 2 mostly wait for
    the controller in train.report, rank 1 computes."""
    experiment = collective_hung.experiments[0]
    (run,) = experiment.runs
    run = with_shares(run, {0: LINEAR, 1: SLOW, 2: LINEAR}, collective_hung.taken_at)
    findings = (*time_sink_findings(run), *collective_hung.findings)
    return replace(collective_hung, experiments=(replace(experiment, runs=(run,)),),
                   findings=findings)  # fmt: skip


def test_a_bar_has_its_width_and_every_kind_its_share_rounded_fairly():
    shares = {"compute": 0.15, "report_wait": 0.75, "report_barrier": 0.05,
              "report_upload": 0.05}  # fmt: skip
    assert sum(n for _, n in segments(shares, 10)) == 10
    assert bar_text(shares, 10) == "ccbwwwwwww"  # ties: the kinds' order takes the rest
    assert dict(segments(shares, 20)) == {"compute": 3, "report_barrier": 1,
                                          "report_upload": 1, "report_wait": 15}  # fmt: skip
    assert bar_text(None, 10) == "" and bar_text({"compute": 1.0}, 4) == "cccc"


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_each_rank_has_its_bar_and_the_run_its_goodput(make_app, timed, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await show(pilot, timed)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        table = app.screen.query_one(WorkerTable)
        assert "time" in table.columns_shown
        assert cell(table, "1", "time") == bar_text(SLOW_SHARES, 10)
        assert cell(table, "0", "time") == "ccbwwwwwww"  # 75 % waiting for the controller
        line = text_of(app, "#run-time")
        assert line.startswith(GOODPUT) and "controller wait" in line, line


SLOW_SHARES = {"compute": 0.85, "data_loader": 0.15}
GOODPUT = f"goodput {(6 + 34 + 6) / 120:.0%} "  # the ranks' compute seconds of all


async def test_the_bar_spells_its_kinds_in_ascii(make_app, timed):
    app = make_app(ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, timed)
        await pilot.press("enter")
        await pilot.pause()
        line = text_of(app, "#run-time")
        assert "█" not in line and "w controller wait" in line, line


async def test_the_overview_run_panel_has_the_goodput_line(make_app, timed):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await show(pilot, timed)
        line = text_of(app, "#dash-time")
        assert line.startswith("time") and GOODPUT in line, line


async def test_without_shares_there_is_no_time_column_nor_line(make_app, collective_hung):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await show(pilot, collective_hung)
        await pilot.press("enter")
        await pilot.pause()
        assert "time" not in app.screen.query_one(WorkerTable).columns_shown
        assert not app.screen.query_one("#run-time").display


def test_run_time_shares_80x24(snap_compare, make_app, timed) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(timed), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_a_gpu_ranks_utilisation_stands_beside_its_bar(make_app, timed):
    """GPU only: NVML's figures (simulated: a stand-in source filled them) show as a
    ``gpu%`` column beside the time bars, and on the rank's own screen."""
    experiment = timed.experiments[0]
    (run,) = experiment.runs
    workers = tuple(
        replace(
            w,
            gpu_ids=(str(w.rank),),
            gpu_util_percent=90.0 - 40 * w.rank,
            gpu_memory_used_bytes=(3 + w.rank) << 30,
        )  # fmt: skip
        for w in run.workers
    )
    gpu = replace(timed, experiments=(replace(experiment, runs=(replace(run, workers=workers),)),))
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await show(pilot, gpu)
        await pilot.press("enter")
        await pilot.pause()
        table = app.screen.query_one(WorkerTable)
        assert {"gpu", "time"} <= set(table.columns_shown)
        assert [cell(table, str(r), "gpu") for r in range(3)] == ["90", "50", "10"]
        await pilot.press("enter")  # the rank's own screen
        await pilot.pause()
        summary = "\n".join(str(s.visual) for s in app.screen.query("Static"))
        assert "busy 90%" in summary and "3.0G in use on the device" in summary, summary


async def test_the_trials_table_has_each_trials_goodput(make_app, timed, collective_hung):
    (run,) = timed.experiments[0].runs
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await show(pilot, timed)
        table = app.screen.query_one(TrialTable)
        assert "good" in table.columns_shown
        assert cell(table, run.trial_id, "good") == GOODPUT.split()[1]
        others = [t.trial_id for t in timed.experiments[0].trials if t.trial_id != run.trial_id]
        assert {cell(table, t, "good") for t in others} == {"-"}
        await show(pilot, collective_hung)  # no run with shares: no column
        assert "good" not in table.columns_shown


async def test_the_run_panels_rank_rows_carry_each_ranks_bar(make_app, timed):
    app = make_app(ascii_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(pilot, timed)
        rows = text_of(app, "#dash-ranks").splitlines()
        assert "time" in rows[0], rows
        assert any(row.startswith("    r0") and "ccbwwwwwww" in row for row in rows), rows
        assert any(row.startswith("    r1") and bar_text(SLOW_SHARES, 10) in row for row in rows)
