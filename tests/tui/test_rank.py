"""Pilot tests of the Rank screen (one rank of a run: health, report history, stack) and
unit tests of the pieces it draws with. The stalled run's report times are conftest's:
rank 1 entered reports 1-4 at 108.3, 100.4, 92.1 and 84.0 s before the snapshot (taken
2 s before the frozen clock), the barrier let both ranks out at 107.9, 100.0, 91.7, 83.0;
rank 0 entered at 108.9, 101.2, 93.0, 84.6 and is inside report 5 since 75.0."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from raytop.model import Snapshot, TrainRun, Worker
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from raytop.tui.glyphs import ASCII, UNICODE
from raytop.tui.screens.rank import ASK, ASK_READ_ONLY, GONE, RankScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.stacks import StacksScreen
from raytop.tui.screens.stacks_request import READ_ONLY
from raytop.tui.widgets.report_history import (
    NO_INTERVALS,
    ReportRow,
    ReportTable,
    bar_rows,
    describe_intervals,
    report_rows,
)
from raytop.tui.widgets.worker_table import WorkerTable

from .conftest import RANK1_STACK, RUN_ID, StackCollector
from .helpers import cell, cursor_key, record_notifications, row_keys, show, text_of, wait_until
from .test_run import set_workers, with_run


async def open_rank(app, pilot, snapshot: Snapshot, rank: int, key: str = "enter") -> RankScreen:
    """Overview → the run (Enter on its trial) → the rank (``key`` on its row)."""
    await show(pilot, snapshot)
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
    await pilot.press(*(["down"] * rank), key)
    await wait_until(pilot, lambda: isinstance(app.screen, RankScreen))
    await pilot.pause()
    return app.screen


def history(screen: RankScreen) -> dict[str, list[str]]:
    table = screen.query_one(ReportTable)
    columns = ("entered", "inside", "gap")
    return {key: [cell(table, key, c) for c in columns] for key in row_keys(table)}


# -- opening, what it shows, leaving ----------------------------------------------------


async def test_enter_on_rank_1_shows_its_counts_history_and_intervals(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_rank(app, pilot, stalled, 1)
        assert (screen.run_id, screen.rank) == (RUN_ID, 1)
        assert text_of(app, "#rank-title") == "rank 1 of run TorchTrainer_7d2a1_00000"
        assert text_of(app, "#rank-state") == "behind · 1 behind"
        assert screen.query_one("#rank-state").has_class("-stalled")  # the missing rank
        where = text_of(app, "#rank-where")
        assert (
            where == "attempt 1 · node a3f9c2d1 · pid 51235 · local rank 1 · node rank 0 · no GPU"
        )
        assert text_of(app, "#rank-finding").startswith("MISSING RANK: rank 1 is 1 report behind")
        assert text_of(app, "#rank-health") == "heartbeat 2s ago · cpu 99% · rss 2.1G · no GPU"
        assert text_of(app, "#rank-reports").splitlines() == [
            "reports entered 4 · exited 4 · not in report (out 1m25s)",
            # Its one interval, the median of its gaps (7.9, 8.1, 8.3 s), and a minute over it.
            "last entered 1m26s ago · usual interval 8.1s · rate 7.4/m",
        ]
        # Newest first; ages from the frozen clock; inside = exit - enter; gap = since the
        # previous entry.
        assert history(screen) == {
            "4": ["1m26s ago", "1.0s", "8.1s"],
            "3": ["1m34s ago", "0.4s", "8.3s"],
            "2": ["1m42s ago", "0.4s", "7.9s"],
            "1": ["1m50s ago", "0.4s", "-"],
        }
        # One line of bars at 80x24: three usual intervals, then the one still open (86 s)
        # towering over them.
        caption, bars = text_of(app, "#rank-intervals").splitlines()
        assert caption == "report to report: median 8.1s · longest 8.3s · open 1m26s"
        assert bars == "▁▁▁ ▁▁▁ ▁▁▁ ███"
        assert ASK in text_of(app, "#rank-stack-text")


async def test_cpu_beside_the_logical_resources_it_declared(make_app, stalled) -> None:
    """Logical resources are not OS limits: 190 % on 1 declared CPU is said, and marked in
    the Run screen's table; within its CPUs it is not."""
    run = set_workers(
        stalled.experiments[0].runs[0],
        rank0={
            "cpu_percent": 190.0,
            "declared_resources": {"CPU": 1.0, "node:__internal_head__": 0.001},
        },
        rank1={"cpu_percent": 180.0, "declared_resources": {"CPU": 2.0, "memory": 2**30}},
    )
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_rank(app, pilot, with_run(stalled, run, dt=0.0), 0)
        health = text_of(app, "#rank-health")
        assert "cpu 190% (declared 1 CPU)" in health
        table = app.screen_stack[-2].query_one(WorkerTable)
        over, within = (table.get_cell(key, "cpu") for key in ("0", "1"))
        assert (str(over), "underline" in str(over.cell.style)) == ("190", True)
        assert (str(within), "underline" in str(within.cell.style)) == ("180", False)
        assert (over.key, within.key) == (190.0, 180.0)  # sorted by the figure
        await pilot.press("escape", "down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RankScreen) and app.screen.rank == 1)
        assert "cpu 180% (declared 2 CPU, 1.0G memory)" in text_of(app, "#rank-health")


async def test_the_waiting_rank_is_inside_its_report(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_rank(app, pilot, stalled, 0)
        assert text_of(app, "#rank-state") == "waiting"
        assert screen.query_one("#rank-state").has_class("-waiting")
        assert text_of(app, "#rank-finding").startswith("WAITING: rank 1 is 1 report behind")
        assert "inside report 5 for 1m17s" in text_of(app, "#rank-reports")
        rows = history(screen)
        assert list(rows) == ["5", "4", "3", "2", "1"]
        assert rows["5"] == ["1m17s ago", "inside 1m17s", "9.6s"]
        assert rows["4"] == ["1m26s ago", "1.6s", "8.4s"]


async def test_w_opens_the_rank_and_escape_returns_with_the_cursor_kept(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_rank(app, pilot, stalled, 1, key="w")
        assert screen.rank == 1
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)
        assert cursor_key(app.screen.query_one(WorkerTable)) == "1"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RankScreen))
        assert app.screen.rank == 1
        await pilot.press("backspace")
        assert isinstance(app.screen, RunScreen)


async def test_the_rank_screen_follows_new_snapshots(make_app, stalled, stall_run) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_rank(app, pilot, stalled, 1)
        # Rank 1 reaches report 5, 85 s after report 4: the barrier opens.
        rank1 = next(w for w in stall_run.workers if w.rank == 1)
        entered = stalled.taken_at - 1.0
        moved = set_workers(
            stall_run,
            rank0={"reports_exited": 5, "report_exits": (*rank1.report_exits, entered + 0.5)},
            rank1={
                "reports_entered": 5,
                "reports_exited": 5,
                "last_enter_at": entered,
                "report_times": (*rank1.report_times, entered),
                "report_exits": (*rank1.report_exits, entered + 0.5),
            },
        )
        await show(pilot, with_run(stalled, moved))
        assert "reports entered 5 · exited 5" in text_of(app, "#rank-reports")
        assert history(screen)["5"] == ["3s ago", "0.5s", "83.0s"]
        assert row_keys(screen.query_one(ReportTable))[0] == "5"
        assert not screen.query_one("#rank-finding").display
        assert text_of(app, "#rank-state") == "training"


async def test_a_rank_that_leaves_the_snapshot_keeps_its_last_figures(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_rank(app, pilot, stalled, 1)
        experiment = stalled.experiments[0]
        (run,) = experiment.runs
        only_0 = replace(run, workers=tuple(w for w in run.workers if w.rank == 0))
        gone = replace(stalled, experiments=(replace(experiment, runs=(only_0,)),), findings=())
        await show(pilot, gone)
        assert screen.worker is not None and screen.worker.rank == 1
        assert GONE in text_of(app, "#rank-notes")
        assert "reports entered 4 · exited 4" in text_of(app, "#rank-reports")
        assert list(history(screen)) == ["4", "3", "2", "1"]
        assert not screen.query_one("#rank-finding").display
        assert not screen.query_one("#rank-state").has_class("-stalled")


async def test_wide_terminal_puts_the_stack_beside_the_reports(make_app, with_stacks) -> None:
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_rank(app, pilot, with_stacks, 1)
        assert screen.has_class("-wide")
        facts, stack = screen.query_one("#rank-facts"), screen.query_one("#rank-stack")
        assert stack.region.x >= facts.region.right
        # The snapshot already carries the rank's last stack: shown, no need to ask.
        assert "val_loss = evaluate(model, val_loader)" in text_of(app, "#rank-stack-text")
        # Several lines of bars where there is room.
        assert len(text_of(app, "#rank-intervals").splitlines()) > 4


# -- stacks -------------------------------------------------------------------------------


async def test_s_shows_this_ranks_stack_in_place(make_app, stalled, with_stacks) -> None:
    collector = StackCollector(stalled, stacks=with_stacks)
    app = make_app(collector=collector)
    async with app.run_test(size=(80, 24)) as pilot:
        notes = record_notifications(app)
        screen = await open_rank(app, pilot, stalled, 1)
        await pilot.press("s")
        await wait_until(pilot, lambda: "evaluate" in text_of(app, "#rank-stack-text"))
        assert notes[0][0].startswith("fetching stacks…")
        assert collector.stack_calls == [(RUN_ID, 5.0)]
        assert collector.stack_threads[0] is not threading.main_thread()
        assert app.screen is screen and not isinstance(app.screen, StacksScreen)
        shown = text_of(app, "#rank-stack-text")
        assert "for batch in loader:" in shown and "ray.train.report" not in shown  # rank 0's
        assert shown.splitlines()[0] == RANK1_STACK.splitlines()[0]
        # A later snapshot without stacks does not take the answer away.
        await show(pilot, replace(stalled, taken_at=stalled.taken_at + 1))
        assert "evaluate" in text_of(app, "#rank-stack-text")


async def test_a_rank_that_does_not_answer_says_so(make_app, stalled, with_stacks) -> None:
    experiment = with_stacks.experiments[0]
    (run,) = experiment.runs
    silent = set_workers(run, rank1={"stack": None, "stack_request": None})
    answer = replace(with_stacks, experiments=(replace(experiment, runs=(silent,)),))
    app = make_app(collector=StackCollector(with_stacks, stacks=answer))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_rank(app, pilot, with_stacks, 1)  # with the stack it sent before
        assert "evaluate" in text_of(app, "#rank-stack-text")
        await pilot.press("s")
        await wait_until(pilot, lambda: "did not answer" in text_of(app, "#rank-stack-text"))
        assert "evaluate" not in text_of(app, "#rank-stack-text")  # no old stack passed as new


async def test_read_only_refuses_s_and_says_why(make_app, stalled, with_stacks) -> None:
    collector = StackCollector(stalled, stacks=with_stacks)
    app = make_app(collector=collector, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_rank(app, pilot, stalled, 1)
        assert text_of(app, "#rank-stack-text") == ASK_READ_ONLY
        notes = record_notifications(app)
        await pilot.press("s")
        await pilot.pause()
        assert notes == [(READ_ONLY, "warning")]
        assert collector.stack_calls == []
        assert app.screen.active_bindings["s"].binding.description == "stacks (read-only)"


async def test_help_lists_the_rank_screens_keys(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_rank(app, pilot, stalled, 1)
        await pilot.press("question_mark")
        keys = text_of(app, "#help-keys")
        assert "s  stacks: Ask every rank for its Python stack and show this rank's" in keys
        assert "esc  back" in keys


async def test_the_run_screens_help_names_the_rank_key(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, stalled)
        await pilot.press("enter", "question_mark")
        assert "w  rank: The highlighted rank" in text_of(app, "#help-keys")


def test_bindings_have_raytop_ids() -> None:
    assert all(b.id and b.id.startswith("raytop.") for b in RankScreen.BINDINGS)


# -- the pieces ---------------------------------------------------------------------------


def test_report_numbers_count_back_from_reports_entered() -> None:
    """Only the last reports are kept: entry i is report entered - len + 1 + i."""
    worker = Worker(
        rank=2,
        reports_entered=40,
        reports_exited=39,
        report_times=(100.0, 110.0, 125.0),
        report_exits=(101.0, 112.5, None),
    )
    assert report_rows(worker, now=130.0) == [
        ReportRow(number=40, entered_ago_s=5.0, inside_s=None, gap_s=15.0),
        ReportRow(number=39, entered_ago_s=20.0, inside_s=2.5, gap_s=10.0),
        ReportRow(number=38, entered_ago_s=30.0, inside_s=1.0, gap_s=None),
    ]
    assert report_rows(Worker(rank=0), now=1.0) == []


def test_bar_rows_scale_to_the_largest_in_eighths() -> None:
    assert bar_rows([1.0, 2.0, 4.0], width=12, height=1, levels=UNICODE.spark) == [
        ["▂▂▂ ", "▄▄▄ ", "███ "]
    ]
    # Two lines: the top line first; a bar under an eighth still shows its lowest level.
    assert bar_rows([0.01, 4.0], width=2, height=2, levels=ASCII.spark) == [
        [" ", "#"],
        ["_", "#"],
    ]
    assert bar_rows([], width=10, height=3, levels=UNICODE.spark) == []


def test_a_rank_with_one_report_has_no_intervals_yet() -> None:
    worker = Worker(rank=0, reports_entered=1, report_times=(5.0,), report_exits=(None,))
    assert describe_intervals(worker, 9.0, 40, 2, UNICODE.spark).plain == NO_INTERVALS


@pytest.mark.parametrize("done", [False, True])
def test_the_open_interval_is_the_last_bar_until_the_rank_is_done(done) -> None:
    worker = Worker(rank=0, reports_entered=3, reports_exited=3, done=done,
                    report_times=(0.0, 10.0, 20.0), report_exits=(1.0, 11.0, 21.0))  # fmt: skip
    (worker,) = with_rank_states(
        TrainRun("r", "r", "a", 1, workers=(worker,)), Thresholds(), 40.0
    ).workers
    caption, bars = describe_intervals(worker, 40.0, 60, 2, UNICODE.spark).plain.splitlines()
    if done:
        assert caption == "report to report: median 10.0s · longest 10.0s"
        assert bars == "███ ███"
    else:
        assert caption.endswith("· open 20s")
        assert bars == "▄▄▄ ▄▄▄ ███"
