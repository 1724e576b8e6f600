"""Read what the overview shows, as plain text, for assertions."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Static

from raytop.tui.widgets.trial_table import StatusCell, TrialTable


def text_of(app: App[None], selector: str) -> str:
    return str(app.screen.query_one(selector, Static).visual)


def row_of(table: TrialTable, trial_id: str) -> list[str]:
    return [c.status if isinstance(c, StatusCell) else str(c) for c in table.get_row(trial_id)]


def row_keys(table: TrialTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def cursor_key(table: TrialTable) -> str | None:
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
