"""Pilot tests of the overview, fed by posting messages directly (no polling, no sleeps)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from raytop.model import Experiment, ExperimentStatus, Finding, Severity, Snapshot, Trial
from raytop.model.format import fmt_value
from raytop.tui.app import RaytopApp
from raytop.tui.messages import SnapshotReady, SourceFailed
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import OverviewScreen
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.findings_list import FindingsList
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import cells_of, cursor_key, row_keys, row_of, show, text_of


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_trials_appear_with_their_cells(make_app, sweep, size) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        assert row_keys(table) == [f"7d2a1_0000{i}" for i in range(5)]
        expected = {
            "trial": "7d2a1_00000", "status": "RUNNING", "params": "hidden=64 lr=0.01",
            "metric": "0.4213", "trend": "█▆▅▄▃▂▁▁", "iter": "███░░ 12/20", "elapsed": "1m35s",
            "fail": "0",
        }  # fmt: skip
        shown = table.columns_shown
        # At 80 columns the pictures push out fail, then elapsed; at 120 all fit.
        assert shown == tuple(expected)[: 6 if size == (80, 24) else 8]
        assert cells_of(table, "7d2a1_00000") == {k: expected[k] for k in shown}
        pending = cells_of(table, "7d2a1_00002")
        assert (pending["metric"], pending["trend"], pending["iter"]) == ("-", "", "░░░░░ 0/20")
        assert cells_of(table, "7d2a1_00004")["status"] == "ERROR"
        assert str(table.columns["metric"].label) == "loss"
        assert str(table.columns["iter"].label) == "progress"
        # Fixed widths that fit: no horizontal scrolling at either size.
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert app.latest is sweep


async def test_cluster_and_experiment_lines(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        cluster = text_of(app, "#cluster")
        for part in ("10.42.0.17:6379", "1 node alive", "CPU 2/4", "GPU 0/0", "ray 2.58.1"):
            assert part in cluster
        assert "embedded" not in cluster
        assert text_of(app, "#age") == "updated 2s ago"
        header = text_of(app, "ExperimentHeader")
        for part in ("torch_sweep", "RUNNING", "loss (min)", "driver 4242 alive"):
            assert part in header
        assert "2 RUNNING · 1 PENDING · 1 TERMINATED · 1 ERROR" in header


async def test_embedded_cluster_dead_driver_and_warnings(make_app, sweep) -> None:
    experiment = replace(
        sweep.experiments[0],
        status=ExperimentStatus.INTERRUPTED,
        driver_alive=False,
        warnings=("experiment state unreadable; showing last good copy",),
    )
    snap = replace(
        sweep,
        cluster=replace(sweep.cluster, embedded=True),
        experiments=(experiment,),
    )
    app = make_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, snap)
        assert "embedded" in text_of(app, "#cluster")
        assert text_of(app, "#age") == "read-only · updated 2s ago"
        header = text_of(app, "ExperimentHeader")
        assert "INTERRUPTED" in header
        assert "driver 4242 dead" in header
        assert "⚠ experiment state unreadable; showing last good copy" in header


async def test_update_in_place_keeps_the_cursor_row(make_app, sweep, next_tick) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        await pilot.press("down")
        assert cursor_key(table) == "7d2a1_00001"

        old = sweep.experiments[0].trials[1]
        newer = replace(old, metrics={"loss": 0.5012}, iterations=10, elapsed_s=97.0)
        await show(pilot, next_tick(newer))
        cells = cells_of(table, "7d2a1_00001")
        assert (cells["metric"], cells["iter"]) == ("0.5012", "██░░░ 10/20")
        assert table.cursor_row == 1
        assert cursor_key(table) == "7d2a1_00001"
        assert table.row_count == 5


async def test_resize_rebuilds_the_columns_and_keeps_the_cursor_row(make_app, sweep) -> None:
    """Rebuilding the columns (params takes the width left) empties the table: the rows
    come back, and the cursor with them on its trial."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        narrow = table.columns["params"].width
        await pilot.press("down", "down")
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert table.columns["params"].width > narrow
        assert row_keys(table) == [f"7d2a1_0000{i}" for i in range(5)]
        assert cursor_key(table) == "7d2a1_00002"


async def test_removed_trial_disappears_and_cursor_follows_its_trial(
    make_app, sweep, next_tick
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        await pilot.press("down", "down")
        assert cursor_key(table) == "7d2a1_00002"

        await show(pilot, next_tick(drop=("7d2a1_00000",)))
        assert "7d2a1_00000" not in row_keys(table)
        assert table.row_count == 4
        assert cursor_key(table) == "7d2a1_00002"


async def test_new_trial_is_appended(make_app, sweep, next_tick) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        experiment = sweep.experiments[0]
        extra = Trial("7d2a1_00005", "PENDING", config={"lr": 0.05, "hidden": 64})
        grown = replace(experiment, trials=(*experiment.trials, extra))
        await show(pilot, replace(sweep, experiments=(grown,)))
        table = app.screen.query_one(TrialTable)
        assert row_keys(table)[-1] == "7d2a1_00005"
        assert row_of(table, "7d2a1_00005")[:3] == ["7d2a1_00005", "PENDING", "hidden=64 lr=0.05"]


async def test_collector_failure_shows_disconnected_then_recovers(
    make_app, sweep, next_tick
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        bar = app.screen.query_one(ClusterBar)
        assert not bar.has_class("-disconnected")
        assert not app.screen.query_one("#banner").display

        app.post_message(SourceFailed("ConnectionError: GCS went away", 3))
        await pilot.pause()
        assert bar.has_class("-disconnected")
        assert app.screen.query_one("#banner").display
        banner = text_of(app, "#banner")
        assert banner.startswith("DISCONNECTED — ConnectionError: GCS went away")
        assert banner.endswith("retrying")
        # The last good data stays on screen.
        assert "CPU 2/4" in text_of(app, "#cluster")
        assert app.screen.query_one(TrialTable).row_count == 5

        await show(pilot, next_tick())
        assert not bar.has_class("-disconnected")
        assert not app.screen.query_one("#banner").display


async def test_disconnected_snapshot_keeps_last_good_data(make_app, sweep, disconnected) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await show(pilot, disconnected)
        bar = app.screen.query_one(ClusterBar)
        assert bar.has_class("-disconnected")
        assert "GCS at 10.42.0.17:6379 unreachable" in text_of(app, "#banner")
        assert "CPU 2/4" in text_of(app, "#cluster")
        assert app.screen.query_one(TrialTable).row_count == 5
        assert app.latest is disconnected

        await show(pilot, sweep)
        assert not bar.has_class("-disconnected")


async def test_disconnected_snapshot_with_experiments_shows_them(
    make_app, sweep, disconnected
) -> None:
    """Experiments read from storage after the cluster went away are newer: show them."""
    finished = replace(sweep.experiments[0], status=ExperimentStatus.FINISHED)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await show(pilot, replace(disconnected, experiments=(finished,)))
        assert "FINISHED" in text_of(app, "ExperimentHeader")
        assert app.screen.query_one(ClusterBar).has_class("-disconnected")


async def test_findings_render_worst_first_and_hide_when_none(make_app, sweep) -> None:
    info = Finding("slow", Severity.INFO, "trial 7d2a1_00001", "slowest trial: 9 it in 88s")
    snap = replace(sweep, findings=(info, *sweep.findings))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, snap)
        findings = app.screen.query_one(FindingsList)
        assert findings.display
        lines = text_of(app, "FindingsList").splitlines()
        assert lines[0].split()[:3] == ["ERROR", "trial", "7d2a1_00004"]
        assert "ValueError: loss became NaN" in lines[0]
        assert lines[1].startswith("INFO")

        await show(pilot, replace(sweep, findings=()))
        assert not findings.display


async def test_next_experiment_key_switches_the_table(make_app, sweep) -> None:
    other = Experiment(
        name="resnet_tune",
        path="/home/ray/ray_results/resnet_tune",
        status=ExperimentStatus.FINISHED,
        metric="accuracy",
        mode="max",
        trials=(Trial("b81c0_00000", "TERMINATED", metrics={"accuracy": 0.91}, iterations=5),),
    )
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, replace(sweep, experiments=(*sweep.experiments, other)))
        assert text_of(app, "ExperimentHeader").startswith("[1/2] torch_sweep")
        await pilot.press("e")
        table = app.screen.query_one(TrialTable)
        assert text_of(app, "ExperimentHeader").startswith("[2/2] resnet_tune")
        assert row_keys(table) == ["b81c0_00000"]
        assert str(table.columns["metric"].label) == "accuracy"
        assert row_of(table, "b81c0_00000")[3] == "0.91"


async def test_no_experiment_yet(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert text_of(app, "#cluster") == "waiting for the first snapshot…"
        await show(pilot, Snapshot(taken_at=sweep.taken_at, cluster=sweep.cluster))
        assert "No Tune/Train experiment found yet." in text_of(app, "ExperimentHeader")
        assert app.screen.query_one(TrialTable).row_count == 0


async def test_help_opens_and_escape_closes_it(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = text_of(app, "#help-keys")
        assert "q  quit: Close raytop; the Ray run is not affected." in keys
        assert "?  help" in keys
        about = text_of(app, "#help-about")
        assert "the Ray run keeps going" in about
        assert "re-attach" in about
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_snapshots_arriving_under_help_are_shown_after_it(make_app, sweep, next_tick) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(SnapshotReady(sweep))
        await pilot.press("question_mark")
        old = sweep.experiments[0].trials[0]
        app.post_message(SnapshotReady(next_tick(replace(old, iterations=13))))
        await pilot.press("escape")
        await pilot.pause()
        assert cells_of(app.screen.query_one(TrialTable), "7d2a1_00000")["iter"].endswith("13/20")


async def test_q_exits_the_app(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


def test_bindings_have_raytop_ids() -> None:
    bindings = [*RaytopApp.BINDINGS, *OverviewScreen.BINDINGS, *HelpScreen.BINDINGS]
    assert bindings
    assert all(b.id and b.id.startswith("raytop.") for b in bindings)


async def test_a_recorded_real_snapshot_renders(make_app) -> None:
    """``raytop status --json`` of the real torch sweep mid-run, fed back into the TUI."""
    data = json.loads((Path(__file__).parent / "data" / "torch_sweep_running.json").read_text())
    recorded = Snapshot.from_json(data)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, recorded)
        table = app.screen.query_one(TrialTable)
        (experiment,) = recorded.experiments
        assert row_keys(table) == [t.trial_id for t in experiment.trials]
        for trial in experiment.trials:
            row = row_of(table, trial.trial_id)
            assert row[1] == trial.status
            assert row[3] == fmt_value(trial.metrics["loss"])
            assert row[4] == str(trial.iterations)
        assert "embedded" in text_of(app, "#cluster")
        assert "CPU 4/4" in text_of(app, "#cluster")


async def test_a_waiting_trial_says_why_under_the_table(make_app, sweep) -> None:
    (experiment,) = sweep.experiments
    reason = "bundle 0 needs {GPU: 1}; no node has GPU"
    trials = tuple(
        replace(t, pending_reason=reason) if t.status == "PENDING" else t for t in experiment.trials
    )
    waiting = next(t.trial_id for t in trials if t.pending_reason)
    snapshot = replace(sweep, experiments=(replace(experiment, trials=trials),))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        assert not app.screen.query_one("#pending-reason").display
        await show(pilot, snapshot)
        line = app.screen.query_one("#pending-reason")
        assert line.display
        assert text_of(app, "#pending-reason") == f"{waiting} waits: {reason}"
