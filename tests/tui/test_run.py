"""Pilot tests of the Run screen (ranks at the report barrier) and the stacks screen."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from raytop.diagnose.ledger import run_findings
from raytop.model import (
    Finding,
    LedgerStatus,
    Severity,
    Snapshot,
    StacksCapture,
    TrainRun,
    Worker,
)
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import NO_LEDGER, OverviewScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.stacks import NO_ANSWER, StacksScreen, order_ranks
from raytop.tui.widgets.findings_list import FindingsList
from raytop.tui.widgets.stall_banner import StallBanner, StallLine
from raytop.tui.widgets.table_cells import StyledCell
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.worker_table import WorkerTable

from .conftest import RUN_ID, FakeCollector, StackCollector
from .helpers import (
    cell,
    cursor_key,
    record_notifications,
    row_keys,
    show,
    text_of,
    wait_until,
)


def with_run(snapshot: Snapshot, run: TrainRun, *, dt: float = 1.0) -> Snapshot:
    """The next snapshot: ``run`` replaces the first experiment's run, its rank states
    derived and its findings diagnosed again, as the collector does."""
    taken_at = snapshot.taken_at + dt
    run = with_rank_states(run, Thresholds(), taken_at)
    experiment = replace(snapshot.experiments[0], runs=(run,))
    others = tuple(f for f in snapshot.findings if f.run_id != run.run_id)
    return replace(
        snapshot,
        taken_at=taken_at,
        experiments=(experiment,),
        findings=(*run_findings(run, Thresholds(), taken_at), *others),
    )


def set_workers(run: TrainRun, **changes: dict[str, object]) -> TrainRun:
    """``rank0={...}, rank1={...}``: field changes per rank."""
    workers = tuple(replace(w, **changes.get(f"rank{w.rank}", {})) for w in run.workers)
    return replace(run, workers=workers)


async def open_run(app, pilot, snapshot: Snapshot, *keys: str) -> RunScreen:
    await show(pilot, snapshot)
    await pilot.press(*(keys or ("enter",)))
    await pilot.pause()
    assert isinstance(app.screen, RunScreen)
    return app.screen


# -- opening and leaving ------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_enter_on_a_trial_opens_its_run_with_one_row_per_rank(
    make_app, stalled, size
) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await open_run(app, pilot, stalled)
        assert screen.run_id == RUN_ID
        table = screen.query_one(WorkerTable)
        assert row_keys(table) == ["0", "1"]
        # Rank 0 waits inside report 5; rank 1 has not entered it: 1 behind.
        assert [cell(table, "0", c) for c in ("rank", "pid", "entered", "exited")] == [
            "0",
            "51234",
            "5",
            "4",
        ]
        assert [cell(table, "1", c) for c in ("entered", "exited")] == ["4", "4"]
        assert cell(table, "0", "behind") == ""
        assert cell(table, "1", "behind") == "1"
        assert cell(table, "0", "last_report") == "1m15s"
        assert cell(table, "1", "last_report") == "1m24s"
        assert cell(table, "0", "state") == "waiting"
        assert cell(table, "1", "state") == "behind"
        # Fixed widths that fit: no horizontal scrolling at either size.
        assert table.virtual_size.width <= table.scrollable_content_region.width


async def test_wide_terminal_shows_node_memory_cpu_and_heartbeat(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        table = (await open_run(app, pilot, stalled)).query_one(WorkerTable)
        assert table.columns_shown == (
            "rank",
            "node",
            "pid",
            "entered",
            "exited",
            "behind",
            "last_report",
            "rate",
            "heartbeat",
            "cpu",
            "rss",
            "state",
        )
        assert cell(table, "0", "node") == "a3f9c2d1"
        # A minute over the median of each rank's intervals, 8.3 s and 8.1 s (conftest's
        # report_times): the rate the dashboard and the rank screen show too.
        assert [cell(table, r, "rate") for r in ("0", "1")] == ["7.2/m", "7.4/m"]
        assert [cell(table, "0", c) for c in ("heartbeat", "cpu", "rss")] == ["0s", "1", "1.8G"]
        assert [cell(table, "1", c) for c in ("heartbeat", "cpu", "rss")] == ["0s", "99", "2.1G"]


async def test_80_columns_drop_the_node_and_memory_columns(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = (await open_run(app, pilot, stalled)).query_one(WorkerTable)
        shown = table.columns_shown
        assert "node" not in shown and "rss" not in shown
        for key in ("rank", "pid", "entered", "exited", "behind", "last_report", "rate", "state"):
            assert key in shown


async def test_stall_banner_names_the_missing_rank(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run(app, pilot, stalled)
        assert screen.query_one(StallBanner).display
        assert text_of(app, "#stall-label") == "MISSING RANK"
        assert screen.query_one("#stall-ranks").value == "1"
        message = text_of(app, "#stall-message")
        assert "BARRIER STALL · report 5 · waiting 1m15s" in message
        assert "rank 1 is 1 report behind: rank 0 has waited in report 5 for 75s" in message
        title = text_of(app, "#run-title")
        for part in ("TorchTrainer_7d2a1_00000", "attempt 1", "world size 2", "trial 7d2a1_00000"):
            assert part in title
        # The missing rank's state cell is drawn as "stalled"; the waiting one is not.
        table = screen.query_one(WorkerTable)
        state_1, state_0 = table.get_cell("1", "state"), table.get_cell("0", "state")
        assert isinstance(state_1, StyledCell) and state_1.component == "worker-table--stalled"
        assert isinstance(state_0, StyledCell) and state_0.component == "worker-table--waiting"


async def test_w_opens_the_highlighted_trials_run_and_escape_returns(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run(app, pilot, stalled, "w")
        assert screen.run_id == RUN_ID
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("w")
        assert isinstance(app.screen, RunScreen)
        await pilot.press("backspace")
        assert isinstance(app.screen, OverviewScreen)
        # The overview is where it was: the cursor still on the stalled trial.
        assert cursor_key(app.screen.query_one(TrialTable)) == "7d2a1_00000"


@pytest.mark.parametrize("key", ["enter", "w"])
async def test_a_trial_without_a_run_notifies(make_app, stalled, key) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        notes = record_notifications(app)
        await show(pilot, stalled)
        await pilot.press("down", key)
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        assert notes == [(NO_LEDGER, "warning")]
        assert "ReportProbe" in NO_LEDGER


async def test_w_is_only_offered_when_the_ledger_knows_a_run(make_app, sweep, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        assert "w" not in app.screen.active_bindings
        await show(pilot, stalled)
        assert "w" in app.screen.active_bindings


# -- live updates -------------------------------------------------------------------------


async def test_run_screen_updates_in_place_and_keeps_the_cursor(
    make_app, stalled, stall_run
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run(app, pilot, stalled)
        table = screen.query_one(WorkerTable)
        await pilot.press("down")
        assert cursor_key(table) == "1"

        # Rank 1 reaches report 5: the barrier opens, both ranks leave it.
        released = set_workers(
            stall_run,
            rank0={"reports_exited": 5, "last_enter_at": stalled.taken_at},
            rank1={"reports_entered": 5, "reports_exited": 5, "last_enter_at": stalled.taken_at},
        )
        await show(pilot, with_run(stalled, released))
        assert [cell(table, "1", c) for c in ("entered", "exited", "behind")] == ["5", "5", ""]
        assert cell(table, "0", "exited") == "5"
        assert [cell(table, r, "state") for r in ("0", "1")] == ["training", "training"]
        assert not screen.query_one(StallBanner).display
        assert table.row_count == 2
        assert table.cursor_row == 1
        assert cursor_key(table) == "1"
        assert text_of(app, "#run-age") == "updated 1s ago"


async def test_widening_the_terminal_adds_columns_and_keeps_the_cursor(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = (await open_run(app, pilot, stalled)).query_one(WorkerTable)
        await pilot.press("down")
        assert "node" not in table.columns_shown
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert "node" in table.columns_shown
        assert row_keys(table) == ["0", "1"]
        assert cursor_key(table) == "1"


async def test_run_screen_catches_up_after_the_help_screen(make_app, stalled, stall_run) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run(app, pilot, stalled)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        moved = set_workers(stall_run, rank1={"reports_entered": 5})
        await show(pilot, with_run(stalled, moved))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert cell(app.screen.query_one(WorkerTable), "1", "entered") == "5"


async def test_overview_catches_up_after_the_run_screen(make_app, stalled, stall_run) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run(app, pilot, stalled)
        released = set_workers(stall_run, rank1={"reports_entered": 5})
        await show(pilot, with_run(stalled, released))
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.query_one(StallLine).display


async def test_a_covered_overview_is_not_redrawn_until_it_shows(
    make_app, stalled, stall_run
) -> None:
    """Under a Run screen (opaque) the overview is not drawn on each snapshot, only on
    its return; under the help (a modal it shows through) it is."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        overview = app.screen
        drawn = []
        redraw = overview._redraw
        overview._redraw = lambda: (drawn.append(app.screen), redraw())
        await open_run(app, pilot, stalled)
        drawn.clear()
        await show(pilot, with_run(stalled, set_workers(stall_run, rank1={"reports_entered": 5})))
        await show(pilot, with_run(stalled, stall_run, dt=2.0))
        assert drawn == []
        await pilot.press("escape")
        await pilot.pause()
        assert drawn == [overview]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await show(pilot, with_run(stalled, stall_run, dt=3.0))
        assert len(drawn) == 2 and isinstance(drawn[1], HelpScreen)


async def test_run_that_leaves_the_snapshot_keeps_its_last_counts(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run(app, pilot, stalled)
        gone = replace(
            stalled,
            experiments=(replace(stalled.experiments[0], runs=()),),
            findings=(),
        )
        await show(pilot, gone)
        assert screen.query_one(WorkerTable).row_count == 2
        assert "left the snapshot" in text_of(app, "#run-notes")
        assert not screen.query_one(StallBanner).display


async def test_other_findings_of_the_run_are_listed_under_the_banner(make_app, stalled) -> None:
    dead = Finding(
        kind="rank_dead",
        severity=Severity.ERROR,
        subject="run TorchTrainer_7d2a1_00000 attempt 1 rank 3",
        message="rank 3 (pid 51237) sent no heartbeat for 40s; its process is gone or frozen",
        run_id=RUN_ID,
        attempt_id="attempt-9c41e",
        ranks=(3,),
    )
    elsewhere = replace(dead, message="another run's rank", run_id="other", attempt_id=None)
    old_attempt = replace(dead, message="an older attempt", attempt_id="attempt-0")
    snap = replace(stalled, findings=(*stalled.findings, dead, elsewhere, old_attempt))
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_run(app, pilot, snap)
        findings = text_of(app, "RunFindings")
        assert findings.startswith("ERROR   rank 3 (pid 51237) sent no heartbeat")
        assert "another run" not in findings
        assert "older attempt" not in findings


async def test_a_run_with_many_findings_lists_what_fits_and_how_many_more(
    make_app, stalled
) -> None:
    """50 dead ranks: five lines of them, then how many more (the rank table below says
    each rank's state), not 50 lines of which six show."""
    dead = tuple(
        Finding(kind="rank_dead", severity=Severity.ERROR, subject=f"rank {r}",
                message=f"rank {r} sent no heartbeat for 40s", run_id=RUN_ID,
                attempt_id="attempt-9c41e", ranks=(r,))
        for r in range(50)
    )  # fmt: skip
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_run(app, pilot, replace(stalled, findings=(*stalled.findings, *dead)))
        lines = text_of(app, "RunFindings").splitlines()
        assert len(lines) == 6
        assert [line.split()[2] for line in lines[:5]] == ["0", "1", "2", "3", "4"]
        assert lines[5] == "… and 45 more"


@pytest.mark.parametrize(
    ("ledger", "expected"),
    [
        (
            LedgerStatus(available=True, restarted_at=1_767_225_588.0, gap_s=3.0),
            "ledger restarted 12s ago (gap 3s): counts resumed from the probes",
        ),
        (
            LedgerStatus(available=False, error="actor raytop_ledger not found"),
            "report ledger unavailable: actor raytop_ledger not found; these counts may be stale",
        ),
    ],
)
async def test_ledger_line(make_app, stalled, ledger, expected) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run(app, pilot, replace(stalled, ledger=ledger))
        assert screen.query_one("#run-notes").display
        assert text_of(app, "#run-notes") == expected


async def test_no_ledger_line_when_the_ledger_is_healthy(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        healthy = replace(stalled, ledger=LedgerStatus(available=True, started_at=1.0))
        screen = await open_run(app, pilot, healthy)
        assert not screen.query_one("#run-notes").display


# -- the overview ---------------------------------------------------------------------------


async def test_overview_shows_the_stall_first_and_unmissable(make_app, sweep, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        line = app.screen.query_one(StallLine)
        assert not line.display

        await show(pilot, stalled)
        assert line.display
        text = text_of(app, "StallLine")
        assert text.startswith(
            "BARRIER STALL run TorchTrainer_7d2a1_00000 attempt 1 (trial 7d2a1_00000): "
            "rank 1 is 1 report behind"
        )
        assert "w on the trial" in text
        # Listed first among the findings, before the (older) trial error.
        assert app.screen.query_one(FindingsList).display
        first = text_of(app, "FindingsList").splitlines()[0]
        assert first.split()[:3] == ["ERROR", "run", "TorchTrainer_7d2a1_00000"]


# -- help -----------------------------------------------------------------------------------


async def test_help_lists_the_new_keys(make_app, stalled) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, stalled)
        await pilot.press("question_mark")
        assert "w  ranks: The ranks of" in text_of(app, "#help-keys")
        await pilot.press("escape", "enter", "question_mark")
        keys = text_of(app, "#help-keys")
        assert "s  stacks: Ask every rank for its Python stack" in keys
        assert "esc  back" in keys


def test_bindings_have_raytop_ids() -> None:
    bindings = [*RunScreen.BINDINGS, *StacksScreen.BINDINGS, *OverviewScreen.BINDINGS]
    assert all(b.id and b.id.startswith("raytop.") for b in bindings)


# -- stacks ---------------------------------------------------------------------------------


async def test_s_fetches_stacks_off_the_ui_thread_missing_rank_first(
    make_app, stalled, with_stacks
) -> None:
    collector = StackCollector(stalled, stacks=with_stacks)
    app = make_app(collector=collector)
    async with app.run_test(size=(120, 36)) as pilot:
        notes = record_notifications(app)
        await open_run(app, pilot, stalled)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))
        assert notes[0][0].startswith("fetching stacks…")
        assert collector.stack_calls == [(RUN_ID, 5.0)]
        assert collector.stack_threads[0] is not threading.main_thread()

        screen = app.screen
        panels = list(screen.query(".stack-panel"))
        assert [p.id for p in panels] == ["stack-1", "stack-0"]
        assert str(panels[0].border_title) == "rank 1 · pid 51235 · behind"
        assert str(panels[1].border_title) == "rank 0 · pid 51234 · waiting"
        assert panels[0].has_class("-missing")
        assert panels[1].has_class("-waiting")
        first = str(panels[0].query_one(".stack-text").visual)
        assert "val_loss = evaluate(model, val_loader)" in first
        assert "ray.train.report" in str(panels[1].query_one(".stack-text").visual)
        assert "2/2 ranks answered" in text_of(app, "#stacks-title")

        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)


async def test_ranks_that_did_not_answer_say_so(make_app, stalled, with_stacks) -> None:
    experiment = with_stacks.experiments[0]
    (run,) = experiment.runs
    # Rank 0 did not answer, and a third rank never reached the ledger at all.
    partial = replace(set_workers(run, rank0={"stack": None, "stack_request": None}), world_size=3)
    answer = replace(with_stacks, experiments=(replace(experiment, runs=(partial,)),))
    app = make_app(collector=StackCollector(stalled, stacks=answer))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run(app, pilot, stalled)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))
        panel = app.screen.query_one("#stack-0")
        assert panel.has_class("-no-answer")
        assert str(panel.query_one(".stack-text").visual) == NO_ANSWER
        never = app.screen.query_one("#stack-2")
        assert str(never.border_title) == "rank 2 · never reported"
        assert str(never.query_one(".stack-text").visual) == NO_ANSWER
        assert "1/3 ranks answered" in text_of(app, "#stacks-title")
        # Three side by side do not fit 80 columns: each stays readable, the row scrolls.
        assert all(p.outer_size.width >= 38 for p in app.screen.query(".stack-panel"))
        assert app.screen.query_one("#stacks").max_scroll_x > 0


async def test_stacks_from_a_collector_without_them_notify(make_app, stalled) -> None:
    app = make_app(collector=FakeCollector(stalled))
    async with app.run_test(size=(80, 24)) as pilot:
        notes = record_notifications(app)
        await open_run(app, pilot, stalled)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert notes == [("stacks aren't available from this source", "warning")]


async def test_a_failing_stack_request_notifies_an_error(make_app, stalled, with_stacks) -> None:
    collector = StackCollector(stalled, stacks=TimeoutError("ranks did not answer in 5s"))
    app = make_app(collector=collector)
    async with app.run_test(size=(80, 24)) as pilot:
        notes = record_notifications(app)
        await open_run(app, pilot, stalled)
        await pilot.press("s")
        await wait_until(pilot, lambda: len(notes) == 2)
        assert notes[1] == ("TimeoutError: ranks did not answer in 5s", "error")
        assert isinstance(app.screen, RunScreen)
        assert app.is_running
        # The failure is over: asking again works.
        collector.stacks = with_stacks
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))


async def test_n_on_the_stacks_screen_asks_again_for_native_stacks_and_redraws(
    make_app, stalled, with_stacks
) -> None:
    experiment = with_stacks.experiments[0]
    (run,) = experiment.runs
    native = {
        0: 'Thread 51300 (idle): "train"\n    pthread_cond_wait (libc.so.6)',
        1: "py-spy not installed on the workers (pip install py-spy on the image)",
    }
    workers = tuple(replace(w, native_stack=native[w.rank], native_stack_request="req-1")
                    for w in run.workers)  # fmt: skip
    answer = replace(
        with_stacks,
        experiments=(replace(experiment, runs=(replace(run, workers=workers),)),),
        stacks_capture=StacksCapture(("/x/.raytop/captures/20260101T000000Z",),
                                     "stacks saved to /x/.raytop/captures/20260101T000000Z"),
    )  # fmt: skip
    collector = StackCollector(stalled, stacks=with_stacks)
    app = make_app(collector=collector)
    async with app.run_test(size=(120, 36)) as pilot:
        notes = record_notifications(app)
        await open_run(app, pilot, stalled)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))
        screen = app.screen
        assert not screen.query(".native-text")
        shown = {b.binding.action for b in screen.active_bindings.values() if b.binding.show}
        assert "native" in shown  # in the footer (tests/tui/test_keys.py checks it fits)
        await pilot.press("question_mark")
        assert "n  native: Ask every rank again, for its native stack too" in text_of(
            app, "#help-keys"
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen)
        collector.stacks = answer
        await pilot.press("n")
        await wait_until(pilot, lambda: bool(screen.query(".native-text")))
        assert app.screen is screen  # redrawn in place, not a second screen on top
        assert collector.native_calls == [False, True]
        assert collector.stack_calls[1] == (RUN_ID, 12.0)
        assert notes[-2][0].startswith("fetching native stacks (py-spy)")
        assert notes[-1] == ("stacks saved to /x/.raytop/captures/20260101T000000Z", "information")
        panel0 = screen.query_one("#stack-0")
        text0 = str(panel0.query_one(".native-text").visual)
        assert text0.startswith("native (py-spy)") and "pthread_cond_wait" in text0
        text1 = str(screen.query_one("#stack-1").query_one(".native-text").visual)
        assert "py-spy not installed on the workers" in text1
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)


# Read-only refuses ``s`` (it writes a request to the cluster's KV store):
# tests/tui/test_read_only.py, with every other entry of cli.READ_ONLY_REFUSES.


def test_order_ranks_missing_then_waiting_then_the_rest() -> None:
    workers = (
        Worker(rank=0, reports_entered=5, reports_exited=5),
        Worker(rank=1, reports_entered=5, reports_exited=4),
        Worker(rank=2, reports_entered=4, reports_exited=4),
        Worker(rank=3, reports_entered=5, reports_exited=4),
    )
    run = with_rank_states(
        TrainRun("r", "r", "a", world_size=6, workers=workers), Thresholds(), 0.0
    )
    # 5 is in no finding yet, but the ledger never saw it: it is missing too.
    assert order_ranks(run, missing=[4, 2]) == [2, 4, 5, 1, 3, 0]
