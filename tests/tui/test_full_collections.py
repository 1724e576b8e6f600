"""``raytop`` runs Python's full collections itself, in its poller between refreshes, at
most every ``FULL_EVERY_S``; Python's own are off while it does, and given back when it is
done."""

from __future__ import annotations

import gc
import threading

from raytop.tui.full_collections import FullCollections

from .helpers import wait_until


def full_collections_during(action) -> int:
    seen: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(note)
    try:
        action()
    finally:
        gc.callbacks.remove(note)
    return len(seen)


def test_full_collections_between_refreshes_every_so_often_and_none_of_pythons_own() -> None:
    before = gc.get_threshold()
    now = [100.0]
    full = FullCollections(clock=lambda: now[0], every_s=10.0)
    try:
        full.take_over()
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**6
        # Python's counts alone start no full collection any more.
        allocate = lambda: [[[] for _ in range(50)] for _ in range(20_000)]  # noqa: E731
        assert full_collections_during(allocate) == 0
        now[0] = 105.0
        assert full_collections_during(full.between_refreshes) == 0  # the last is 5 s old
        now[0] = 110.0
        assert full_collections_during(full.between_refreshes) == 1
        assert full_collections_during(full.between_refreshes) == 0
    finally:
        full.give_back()
    assert gc.get_threshold() == before
    full.between_refreshes()  # given back: nothing


async def test_raytop_takes_the_full_collections_after_its_first_snapshot(make_app, sweep) -> None:
    before = gc.get_threshold()
    gc.unfreeze()
    app = make_app(sweep, autostart=True, refresh_s=0.05, freeze_gc=True)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app._full.taken)
            assert gc.get_threshold()[2] > 10**6
        assert gc.get_threshold() == before  # the app is gone: Python's again
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


async def test_the_poller_runs_them_before_it_collects(make_app, sweep) -> None:
    """Never in the UI thread (from there, Textual's after-refresh call could land inside
    the next snapshot's frame): in the poller, before a collect, when one is due."""
    before = gc.get_threshold()
    threads: list[str] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            threads.append(threading.current_thread().name)

    gc.unfreeze()
    app = make_app(sweep, autostart=True, refresh_s=0.05, freeze_gc=True)
    app._full = FullCollections(every_s=0.0)  # one before each collect
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app._full.taken)
            gc.callbacks.append(note)
            try:
                await wait_until(pilot, lambda: len(threads) >= 3)
            finally:
                gc.callbacks.remove(note)
        assert set(threads) == {"raytop-poll"}
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
