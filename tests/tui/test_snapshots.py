"""SVG snapshots of the overview (pytest-textual-sweep); the clock is frozen in make_app.

Regenerate deliberately with ``pytest tests/tui --snapshot-update`` after a Textual bump.
"""

from __future__ import annotations

from raytop.tui.messages import SnapshotReady, SourceFailed


def feed(*messages):
    async def run_before(pilot) -> None:
        for message in messages:
            pilot.app.post_message(message)
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
