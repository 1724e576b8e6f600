"""SVG snapshots of the screens (pytest-textual-snapshot); the clock is frozen in make_app.

Regenerate deliberately with ``pytest tests/tui --snapshot-update`` after a Textual bump.
"""

from __future__ import annotations

from raytop.tui.messages import SnapshotReady, SourceFailed
from raytop.tui.screens.stacks import StacksScreen

from .conftest import FakeResumeControls, StackCollector
from .helpers import wait_until


def feed(*messages, keys: tuple[str, ...] = ()):
    async def run_before(pilot) -> None:
        for message in messages:
            pilot.app.post_message(message)
            await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()

    return run_before


def test_overview_80x24(snap_compare, make_app, sweep) -> None:
    app = make_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(sweep)))


def test_overview_120x36(snap_compare, make_app, sweep) -> None:
    app = make_app()
    assert snap_compare(app, terminal_size=(120, 36), run_before=feed(SnapshotReady(sweep)))


def test_overview_disconnected_80x24(snap_compare, make_app, sweep) -> None:
    app = make_app()
    messages = (SnapshotReady(sweep), SourceFailed("ConnectionError: GCS went away", 3))
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(*messages))


def test_overview_stall_80x24(snap_compare, make_app, stalled) -> None:
    app = make_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(stalled)))


def test_run_stall_80x24(snap_compare, make_app, stalled) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(stalled), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_run_stall_120x36(snap_compare, make_app, stalled) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(stalled), keys=("enter",))
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_run_retries_80x24(snap_compare, make_app, retrying) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(retrying), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_run_retries_120x36(snap_compare, make_app, retrying) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(retrying), keys=("enter",))
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_overview_retries_120x36(snap_compare, make_app, retrying) -> None:
    """The trials' ``fail`` column (used/max; at 80 columns it is the first to go)."""
    app = make_app()
    assert snap_compare(app, terminal_size=(120, 36), run_before=feed(SnapshotReady(retrying)))


def test_run_ray_detector_80x24(snap_compare, make_app, detector_watched) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(detector_watched), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_run_checkpoints_80x24(snap_compare, make_app, checkpointed) -> None:
    """The ranks, then the checkpoints newest first: a collision, one still uploading."""
    app = make_app()
    run_before = feed(SnapshotReady(checkpointed), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_run_checkpoints_120x36(snap_compare, make_app, checkpointed) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(checkpointed), keys=("enter",))
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_rank_missing_80x24(snap_compare, make_app, stalled) -> None:
    """Rank 1, the one its run waits for: its reports, the open interval towering."""
    app = make_app()
    run_before = feed(SnapshotReady(stalled), keys=("enter", "down", "enter"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def stacks_case(make_app, stalled, with_stacks):
    """The Stacks screen of the stalled run, its "fetching stacks…" toast gone."""
    app = make_app(collector=StackCollector(stalled, stacks=with_stacks))

    async def run_before(pilot) -> None:
        await feed(SnapshotReady(stalled), keys=("enter", "s"))(pilot)
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, StacksScreen))
        pilot.app.clear_notifications()  # the "fetching stacks…" toast
        await pilot.pause()

    return app, run_before


def test_stacks_120x36(snap_compare, make_app, stalled, with_stacks) -> None:
    app, run_before = stacks_case(make_app, stalled, with_stacks)
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_placement_80x24(snap_compare, make_app, placement) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(placement), keys=("p",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_placement_infeasible_120x36(snap_compare, make_app, placement) -> None:
    """The infeasible group highlighted: its reason in the error colours."""
    app = make_app()
    run_before = feed(SnapshotReady(placement), keys=("p", "down"))
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def resume_case(make_app, sweep):
    """lr_search's preview with its errored trial restarted: the max_concurrent_trials
    warning, and the highlighted errored trial in full under the table."""
    app = make_app(controls=FakeResumeControls())

    def restart_previewed() -> bool:
        screen = app.screen
        return "restart" in str(screen.query_one("#resume-detail").visual) and bool(
            screen.query_one("#resume-warnings").display
        )

    async def run_before(pilot) -> None:
        await feed(SnapshotReady(sweep), keys=("u",))(pilot)
        await wait_until(
            pilot, lambda: "a91c3_00000" in str(app.screen.query_one("#resume-detail").visual)
        )
        await pilot.press("enter", "down", "down", "down", "e", "e")
        await wait_until(pilot, restart_previewed)
        await pilot.pause()

    return app, run_before


def test_resume_80x24(snap_compare, make_app, sweep) -> None:
    app, run_before = resume_case(make_app, sweep)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
