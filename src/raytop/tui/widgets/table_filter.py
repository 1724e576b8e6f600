"""The one-line filter bar under a ``KeyedTable``: ``/`` opens it, typing filters.

``KeyedTable.action_filter`` mounts one after the table (in the table's parent) the first
time ``/`` is pressed, and shows it again later. Every keystroke re-filters the table
(rows with any cell containing the text, case-insensitive, stay); Enter keeps the filter
and gives the focus back to the table (the bar stays, saying ``filter: lr=0.01 · 3 of
40``); Esc clears the filter, hides the bar and gives the focus back.
"""

from __future__ import annotations

from typing import Protocol

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Input, Static


class FilteredTable(Protocol):
    """What the bar needs of its table (a ``KeyedTable``), named here so the table can
    import the bar without the bar importing the table."""

    @property
    def filter_text(self) -> str: ...

    @property
    def row_count(self) -> int: ...

    @property
    def unfiltered_count(self) -> int: ...

    def set_filter(self, text: str) -> None: ...

    def focus(self, scroll_visible: bool = True) -> object: ...


class TableFilter(Horizontal):
    """``filter: [text] · 3 of 40`` for ``table``; see the module docstring."""

    DEFAULT_CSS = """
    TableFilter {
        height: 1;
        padding: 0 1;
        display: none;
        &.-open { display: block; }
        & > .table-filter--label { width: auto; color: $text-muted; }
        & > Input { width: 1fr; }
        & > .table-filter--count { width: auto; color: $text-muted; }
    }
    """
    BINDINGS = [
        Binding("escape", "close", "Clear", id="raytop.filter-clear"),
    ]

    def __init__(self, table: FilteredTable) -> None:
        super().__init__(classes="table-filter")
        self.table = table

    def compose(self) -> ComposeResult:
        yield Static("filter:", classes="table-filter--label")
        yield Input(self.table.filter_text, placeholder="text in any column", compact=True)
        yield Static("", classes="table-filter--count")

    def open(self) -> None:
        """Show the bar and put the cursor in its input."""
        self.add_class("-open")
        self.show_count()
        self.query_one(Input).focus()

    def show_count(self) -> None:
        """``· 3 of 40``: the rows left by the filter, of the rows the table was given."""
        shown, total = self.table.row_count, self.table.unfiltered_count
        self.query_one(".table-filter--count", Static).update(f" · {shown} of {total}")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.table.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value:
            self.action_close()
            return
        self.table.focus()

    def action_close(self) -> None:
        """Clear the filter, hide the bar, back to the table."""
        self.query_one(Input).value = ""
        self.table.set_filter("")
        self.remove_class("-open")
        self.table.focus()
