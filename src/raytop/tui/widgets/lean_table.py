"""Textual's DataTable, less the work a table of thousands of one-line rows does not need.

Textual's DataTable is built for tables that change little: after any one cell is written
it draws every cell on screen again and works the rows' order and offsets out again over
every row, and it adds rows one at a time, each with its upkeep. raytop's tables have
10,000 trials or 2,000 ranks whose ages tick on every refresh (``docs/PERFORMANCE.md``,
"Scale, second round"). A ``LeanTable`` keeps what did not change: a cell's drawn lines,
the rows' order and offsets until a row is added, removed or moved; it adds many rows
at once, and does not measure the cells of new rows (its columns have fixed widths).

Each of these replaces a private method of Textual's DataTable (textual>=8.2,<9, pinned in
pyproject.toml); tests/tui/test_keyed_rows.py, test_large_tables.py and
test_table_filter.py fail if one is renamed or stops matching what Textual does.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from textual.widgets import DataTable
from textual.widgets.data_table import Row, RowKey


class LeanTable(DataTable[object]):
    """A DataTable of one-line rows in columns of fixed widths (see the module)."""

    # (the map of rows' places, the row count, the rows in order) and (those rows, their
    # lines' offsets): ``ordered_rows``, ``_y_offsets`` (Textual asks for them in its
    # ``__init__``, before ours sets anything).
    _rows_at: tuple[object, int, list[Row]] | None = None
    _offsets_of: tuple[list[Row], list[tuple[RowKey, int]]] | None = None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        # (row key, column key) → (the cell, how it was drawn, its lines): see
        # ``_render_cell``.
        self._drawn: dict[tuple[object, object], tuple[object, tuple, list[list[Segment]]]] = {}

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """Textual's, less drawing a cell again that did not change. Textual keys its
        drawn cells by the table's count of updates, so one cell written anywhere draws
        every cell on screen again: a 2,000-rank run's ages tick, and each refresh drew
        the whole screen of cells (~30 ms, most of its frame). A cell that is the very
        object last drawn at its place, in the same look (style, width, cursor, hover,
        focus), keeps its lines. The style of a theme comes in ``base_style`` and the
        ``component_style`` a cell asks for; a theme switch clears both caches
        (``notify_style_update``)."""
        if row_index < 0 or column_index < 0:  # the header, or a row label
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        cell = self._data[row_key][column_key]
        look = (row_index, column_index, base_style, width, cursor, hover,
                self._show_hover_cursor, self._pseudo_class_state)  # fmt: skip
        kept = self._drawn.get((row_key, column_key))
        if kept is not None and kept[0] is cell and kept[1] == look:
            return kept[2]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._drawn[row_key, column_key] = (cell, look, lines)
        return lines

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._drawn.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn.clear()

    @property
    def ordered_rows(self) -> list[Row]:
        """Textual's, kept until a row is added, removed or moved. Textual keeps it until
        any cell is written, and works it and the rows' offsets out again over every row:
        at 10,000 trials that was ~45 ms of each refresh that wrote a cell. Rows are added
        in place (the count moves); removing, sorting and clearing make a new map of
        places (compared by identity, held so it cannot be reused)."""
        places = self._row_locations
        if (
            self._rows_at is None
            or self._rows_at[0] is not places
            or self._rows_at[1] != len(self.rows)
        ):
            self._rows_at = (places, len(self.rows), super().ordered_rows)
        return self._rows_at[2]

    @property
    def _y_offsets(self) -> list[tuple[RowKey, int]]:
        """Textual's, from ``ordered_rows`` above and kept as long as it is (a LeanTable's
        rows are one line each, and never change height)."""
        rows = self.ordered_rows
        if self._offsets_of is None or self._offsets_of[0] is not rows:
            offsets = [(row.key, y) for row in rows for y in range(row.height)]
            self._offsets_of = (rows, offsets)
        return self._offsets_of[1]

    def _append_rows(self, rows: list[tuple[str, tuple[object, ...]]]) -> None:
        """Textual's ``add_row`` for each of ``rows`` (key, cells), its per-row upkeep done
        once: it sets the cursor (a reactive, with its watchers), counts an update (which
        throws away the rows' offsets, worked out again over every row on the next ask)
        and checks for idle on each row, which made the first frame of a 10,000-trial
        sweep cost ~0.7 s in adding rows. One row goes through ``add_row`` itself, so a
        table's first row still highlights the cursor as Textual does."""
        if len(rows) < 2:
            for key, cells in rows:
                self.add_row(*cells, key=key)
            return
        columns = [column.key for column in self.ordered_columns]
        for key, cells in rows:
            row_key = RowKey(key)
            if row_key in self._row_locations:
                raise ValueError(f"row {key!r} is already in the table")
            self._row_locations[row_key] = len(self.rows)
            self._data[row_key] = dict(zip(columns, cells, strict=True))
            self.rows[row_key] = Row(row_key, 1, None, False)
            self._new_rows.add(row_key)
        first = self.row_count == len(rows)
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        if first and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()
        self._update_count += 1
        self.check_idle()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Textual's, less its measuring of every cell of each new row: our columns have
        fixed widths (``ColumnSpec``) and our rows one line each, so what it measures
        changes nothing drawn, and for a 10,000-row table it was most of the first frame
        (~2 s). The virtual size is still Textual's own (rows and column widths)."""
        super()._update_dimensions(())

    def set_widths(self, widths: dict[str, int]) -> None:
        """New widths for the columns named (by key), every row kept. Textual has no way
        to change a column's width but to clear the table and add every row again: at
        10,000 trials the scrollbar that comes with the rows (it takes two columns from
        the params column) made the whole table again, ~4 MB held at its peak. Here the
        widths are set, an update counted (Textual keys what it drew by that count; ours
        is kept by width, ``_render_cell``) and the virtual size worked out again on idle
        (``_update_dimensions``)."""
        for column in self.columns.values():
            width = widths.get(str(column.key.value))
            if width is not None:
                column.width = width
        self._update_count += 1
        self._require_update_dimensions = True
