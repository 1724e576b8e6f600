"""The TUI with ``--storage`` and no cluster (issue 11): the real collector over a real
finished sweep's files (tests/data/history), polling as ``raytop --storage PATH`` does.
The cluster line says history, with no DISCONNECTED banner; Enter on a trial opens its
Train run "from storage" with its checkpoints; nothing crashes without GCS or ledger."""

from __future__ import annotations

import shutil
from pathlib import Path

from raytop.pipeline.collect import HISTORY_ONLY, SnapshotCollector
from raytop.tui.screens.run import FROM_STORAGE_NOTE, RunScreen
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.run_dashboard import RunDashboard
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import row_keys, text_of, wait_until

DATA = Path(__file__).resolve().parents[1] / "data" / "history" / "torch_sweep"


async def test_history_from_storage_overview_and_run(make_app, tmp_path) -> None:
    shutil.copytree(DATA, tmp_path / "results" / "torch_sweep")
    collector = SnapshotCollector(
        None, experiments=[], storage_roots=[str(tmp_path / "results")], watch=True
    )
    app = make_app(collector=collector, autostart=True, refresh_s=0.2, read_only=True)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            table = app.screen.query_one(TrialTable)
            await wait_until(pilot, lambda: table.row_count == 2)
            assert row_keys(table) == ["38fb7_00000", "38fb7_00001"]
            bar = app.screen.query_one(ClusterBar)
            assert not bar.has_class("-disconnected")
            assert text_of(app, "#cluster") == HISTORY_ONLY
            dashboard = str(app.screen.query_one(RunDashboard).query_one("#dash-phase").visual)
            assert "finished" in dashboard and "from storage · 2 checkpoint(s)" in dashboard

            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
            screen = app.screen
            assert isinstance(screen, RunScreen) and screen.run is not None
            assert screen.run.from_storage and screen.run.trial_id == "38fb7_00000"
            assert "from storage" in text_of(app, "#run-title")
            assert FROM_STORAGE_NOTE in text_of(app, "#run-notes")
            assert [c.state for c in screen.run.checkpoints] == ["committed", "committed"]
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, RunScreen))
    finally:
        collector.close()
