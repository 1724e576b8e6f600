"""Feed the app snapshots; read what the screens show, as plain text; wait for threads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from raytop.model import Snapshot
from raytop.tui.messages import SnapshotReady
from raytop.tui.widgets.trial_table import TrialTable


def text_of(app: App[None], selector: str) -> str:
    return str(app.screen.query_one(selector, Static).visual)


def row_of(table: TrialTable, trial_id: str) -> list[str]:
    """One row as text (styled cells print their text)."""
    return [str(c) for c in table.get_row(trial_id)]


def cells_of(table: TrialTable, trial_id: str) -> dict[str, str]:
    """One row as text, by column key (only the columns on screen at this width)."""
    return dict(zip(table.columns_shown, row_of(table, trial_id), strict=True))


def row_keys(table: DataTable[object]) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def cursor_key(table: DataTable[object]) -> str | None:
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


def cell(table: DataTable[object], key: str, column: str) -> str:
    """One cell as text (styled cells print their text)."""
    return str(table.get_cell(key, column))


async def show(pilot: Pilot[None], snapshot: Snapshot) -> None:
    """Hand ``snapshot`` to the app as its poller would, and let the screen draw it."""
    pilot.app.post_message(SnapshotReady(snapshot))
    await pilot.pause()


async def wait_until(
    pilot: Pilot[None], condition: Callable[[], object], *, tries: int = 200
) -> None:
    """Let the app run in short steps until ``condition()`` holds (at most ~4 s)."""
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not met in time")


def record_notifications(app: App[None]) -> list[tuple[str, str]]:
    """Collect ``(message, severity)`` of every ``notify`` from now on."""
    seen: list[tuple[str, str]] = []
    original = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        seen.append((str(message), str(kwargs.get("severity", "information"))))
        original(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen
