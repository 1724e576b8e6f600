"""A DataTable whose rows are keyed by id and diff-updated, so the cursor survives ticks.

Rebuilding a table on every tick would jump the cursor back to the top and redraw every
cell; instead each tick adds the new rows, removes the gone ones and rewrites only the
cells that changed, then puts the cursor back on the row it was on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable


@dataclass(frozen=True)
class StyledCell:
    """Text coloured when drawn, from the table's CSS component class ``component``,
    so a theme switch recolours the cells already in the table.

    Equal cells compare equal (the table is left out), so an unchanged one is not
    rewritten. Too long for its column, it ends in an ellipsis (as ``left`` does)."""

    text: str
    component: str
    table: KeyedTable = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        style = self.table.component_style(self.component)
        yield Text(self.text, style=style, end="", no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(len(self.text), len(self.text))


def right(text: str) -> Text:
    """A right-aligned cell, for numbers."""
    return Text(text, justify="right", no_wrap=True)


def left(text: str) -> Text:
    """A left-aligned cell that ends in an ellipsis when its column is too narrow."""
    return Text(text, no_wrap=True, overflow="ellipsis")


@dataclass(frozen=True)
class ColumnSpec:
    """One column: its key, header and fixed content width (fixed: no re-measuring)."""

    key: str
    header: str
    width: int
    justify: Literal["left", "right"] = "left"


class KeyedTable(DataTable[object]):
    """A row-cursor table whose rows are keyed by a string id; see ``sync_rows``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self._layout: tuple[ColumnSpec, ...] | None = None

    @property
    def columns_shown(self) -> tuple[str, ...]:
        """The keys of the columns on screen (after ``fit_columns`` dropped some)."""
        return tuple(column.key for column in self._layout or ())

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if self.row_count == 0:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def component_style(self, name: str) -> Style:
        """The style of component class ``name`` under the current theme (none if the
        class is not one of ours, e.g. a status Tune added later)."""
        if name not in self.COMPONENT_CLASSES:
            return Style.null()
        return self.get_component_rich_style(name, partial=True)

    def sync_rows(
        self, wanted: dict[str, tuple[object, ...]], columns: Sequence[ColumnSpec]
    ) -> None:
        """Make the rows match ``wanted`` (key -> cells, in column order, in row order):
        add, update changed cells, remove; the cursor stays on its row's key."""
        with self.app.batch_update():
            selected = self.cursor_key()
            self._ensure_columns(columns)
            keys = [column.key for column in columns]
            present = {key.value for key in self.rows}
            stale = present - wanted.keys()
            order = [row.key.value for row in self.ordered_rows if row.key.value in wanted]
            kept = [key for key in wanted if key in present]
            # New rows can only be appended: one that goes before a kept row (e.g. newest
            # first) is a move too.
            moved = order != kept or list(wanted)[: len(kept)] != kept
            # Mostly new rows: one rebuild beats N removals; rows that changed places
            # (there is no public way to move a row) come back in their new order.
            if moved or len(stale) > len(wanted):
                self.clear()
                present = set()
            else:
                for key in stale:
                    self.remove_row(key)
            for key, cells in wanted.items():
                if key not in present:
                    self.add_row(*cells, key=key)
                    continue
                for column, new, old in zip(keys, cells, self.get_row(key), strict=True):
                    if new != old:
                        self.update_cell(key, column, new)
            if selected in wanted:
                row = self.get_row_index(selected)
                if row != self.cursor_row:
                    self.move_cursor(row=row)

    def fit_columns(
        self,
        columns: Sequence[ColumnSpec],
        *,
        drop: Sequence[str] = (),
        grow: Mapping[str, int | None] | None = None,
    ) -> tuple[ColumnSpec, ...]:
        """The ``columns`` that fit our width: those in ``drop`` go, in that order, until
        the rest fit; then the ``grow`` columns share the width left (key -> the widest
        it may get, ``None`` for no limit; its width in ``columns`` is its narrowest)."""
        available = self.scrollable_content_region.width
        shown = list(columns)
        for key in drop:
            if self._width_of(shown) <= available:
                break
            shown = [column for column in shown if column.key != key]
        widths = {column.key: column.width for column in shown}
        spare = available - self._width_of(shown)
        growing = [column.key for column in shown if column.key in (grow or {})]
        while spare > 0 and growing:
            share = max(1, spare // len(growing))
            for key in list(growing):
                limit = (grow or {})[key]
                room = share if limit is None else min(share, limit - widths[key])
                added = max(0, min(room, spare))
                widths[key] += added
                spare -= added
                if added < share or (limit is not None and widths[key] >= limit):
                    growing.remove(key)
        return tuple(replace(column, width=widths[column.key]) for column in shown)

    def _width_of(self, columns: Sequence[ColumnSpec]) -> int:
        return sum(column.width + 2 * self.cell_padding for column in columns)

    def _ensure_columns(self, columns: Sequence[ColumnSpec]) -> None:
        """(Re)build the columns when they change (a new header, or a new width)."""
        layout = tuple(columns)
        if layout == self._layout:
            return
        self._layout = layout
        self.clear(columns=True)
        for column in layout:
            label = Text(column.header, justify=column.justify, overflow="ellipsis", no_wrap=True)
            self.add_column(label, key=column.key, width=column.width)
