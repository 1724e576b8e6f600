"""The real poller thread, driven by a scripted collector (bounded waits, no long sleeps)."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from textual.widgets import Static

from raytop.model.refresh import paced_delay
from raytop.tui.app import MAX_BACKOFF_S, backoff_delay
from raytop.tui.messages import SnapshotReady, SourceFailed
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import cells_of, show, wait_until


async def test_poller_delivers_new_snapshots_to_the_table(make_app, sweep, next_tick) -> None:
    old = sweep.experiments[0].trials[0]
    later = next_tick(replace(old, metrics={"loss": 0.3999}, iterations=13))
    app = make_app(sweep, later, autostart=True, refresh_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(TrialTable)
        await wait_until(
            pilot, lambda: table.row_count and cells_of(table, "7d2a1_00000")["metric"] == "0.3999"
        )
        assert cells_of(table, "7d2a1_00000")["iter"] == "███░░ 13/20"
        assert app.collector.calls >= 2


async def test_poller_reports_failures_and_recovers(make_app, sweep) -> None:
    seen: list[object] = []
    app = make_app(RuntimeError("GCS timeout"), sweep, autostart=True, refresh_s=0.05)
    # What the poller thread posts, recorded where it posts it (a ``message_hook`` sees a
    # message only if it is dispatched in the hook's context, which CI once missed).
    post = app.post_message
    app.post_message = lambda message: seen.append(message) or post(message)  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(TrialTable)
        await wait_until(pilot, lambda: table.row_count == 5)
        assert not app.screen.query_one(ClusterBar).has_class("-disconnected")
    failures = [m for m in seen if isinstance(m, SourceFailed)]
    assert failures[0].error == "RuntimeError: GCS timeout"
    assert failures[0].consecutive == 1


class MalformedThenGood:
    """A collector whose source raises on a malformed ledger page until ``fixed`` is set
    (the message as big and many-lined as such a page makes it), then collects again."""

    PAGE_ERROR = "ledger page 3 of run 5f0c: expected a list, got dict\n" + "{'x': 1} " * 2000

    def __init__(self, good) -> None:
        self.good = good
        self.fixed = threading.Event()
        self.calls = 0

    def collect(self):
        self.calls += 1
        if self.calls > 1 and not self.fixed.is_set():
            raise ValueError(self.PAGE_ERROR)
        return self.good


async def test_a_source_error_degrades_the_view_and_polling_goes_on(make_app, sweep) -> None:
    collector = MalformedThenGood(sweep)
    app = make_app(collector=collector, autostart=True, refresh_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.screen.query_one(ClusterBar)
        table = app.screen.query_one(TrialTable)
        await wait_until(pilot, lambda: bar.has_class("-disconnected"))
        assert table.row_count == 5  # the last good snapshot stays on view
        banner = str(bar.query_one("#banner").render())
        assert "ValueError: ledger page 3 of run 5f0c: expected a list, got dict" in banner
        assert "\n" not in app.state.problem and len(app.state.problem) < 330  # + " (n attempts)"
        failing_since = collector.calls
        collector.fixed.set()
        await wait_until(pilot, lambda: not bar.has_class("-disconnected"))
        assert collector.calls > failing_since and app._poller.is_alive()


async def test_refresh_key_starts_polling_when_not_autostarted(make_app, sweep) -> None:
    app = make_app(sweep)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.collector.calls == 0
        await pilot.press("r")
        table = app.screen.query_one(TrialTable)
        await wait_until(pilot, lambda: table.row_count == 5)


async def test_refresh_key_wakes_a_sleeping_poller(make_app, sweep) -> None:
    app = make_app(sweep, autostart=True, refresh_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.collector.calls == 1)
        await pilot.press("r")
        await wait_until(pilot, lambda: app.collector.calls == 2)


async def test_quitting_ends_the_poller_thread(make_app, sweep) -> None:
    """A poller asleep for 60 s must not keep the process alive after quit."""
    app = make_app(sweep, autostart=True, refresh_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.collector.calls == 1)
        await pilot.press("q")
    app._poller.join(timeout=3)
    assert not app._poller.is_alive()


async def test_a_stuck_collect_cannot_keep_the_process_alive(make_app, sweep) -> None:
    """collect() blocked on an unreachable cluster: the poller is a daemon thread."""
    release = threading.Event()
    app = make_app(sweep, autostart=True)
    app.collector.collect = lambda: release.wait(30)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("q")
    assert app._poller.is_alive() and app._poller.daemon
    release.set()


def test_backoff_doubles_then_caps() -> None:
    assert backoff_delay(0.5, 0) == 0.5
    assert [backoff_delay(0.5, n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert backoff_delay(0.5, 20) == MAX_BACKOFF_S
    assert backoff_delay(60.0, 3) == 60.0  # a slow refresh is never made faster
    # Hours of failures: 2**n would overflow a float and end the poller.
    assert backoff_delay(0.5, 100_000) == MAX_BACKOFF_S


@pytest.mark.parametrize("older", [SnapshotReady, SourceFailed])
def test_newer_news_replaces_queued_messages(sweep, older) -> None:
    queued = SnapshotReady(sweep) if older is SnapshotReady else SourceFailed("x", 1)
    assert queued.can_replace(SnapshotReady(sweep))
    assert not SnapshotReady(sweep).can_replace(SourceFailed("x", 1))


async def test_a_snapshot_or_tick_during_shutdown_is_not_drawn(make_app, sweep) -> None:
    """On quit Textual removes widgets while the poller's messages and the age tick still
    arrive; drawing then would query a removed widget and end in a traceback."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        screen = app.screen
        await screen.query_one(ClusterBar).query_one("#cluster").remove()  # as teardown does
        app.exit()
        screen.show(app.state.with_snapshot(sweep))
        screen._tick()


@pytest.mark.parametrize("freeze_gc", [True, False])
async def test_raytop_freezes_what_it_holds_after_the_first_snapshot(
    make_app, sweep, freeze_gc
) -> None:
    """``raytop`` (``freeze_gc``, as the CLI builds it) takes what its app holds out of the
    collector's generations once the first snapshot is on screen; an app in a test, one
    of many in the process, does not."""
    import gc

    gc.unfreeze()
    app = make_app(sweep, autostart=True, refresh_s=0.05, freeze_gc=freeze_gc)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one(TrialTable)
            await wait_until(pilot, lambda: table.row_count == 5)
            await pilot.pause()
            if freeze_gc:
                await wait_until(pilot, lambda: gc.get_freeze_count() > 0)
            else:
                assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()


def test_a_slow_read_stretches_the_wait_and_says_so() -> None:
    assert paced_delay(0.25, 0.1) == (0.25, None)
    assert paced_delay(0.25, 0.6) == (0.6, "slow cluster: refresh 1.2s")


async def test_the_tui_waits_longer_for_a_slow_cluster_and_says_so(make_app, sweep) -> None:
    """A collect longer than the refresh asked: the poller waits as long as it took (the
    cluster is asked at most half the time), and the bar beside the data's age says so."""
    import time

    class Slow:
        def collect(self):
            time.sleep(0.3)
            return sweep

    app = make_app(collector=Slow(), refresh_s=0.05, autostart=True)
    asked: list[float] = []
    sleep = app._sleep
    app._sleep = lambda seconds: (asked.append(seconds), sleep(seconds))[1]
    async with app.run_test(size=(120, 36)) as pilot:
        age = app.screen.query_one("#age", Static)
        await wait_until(pilot, lambda: "slow cluster: refresh" in str(age.visual), tries=400)
    assert asked and min(asked) >= 0.3
