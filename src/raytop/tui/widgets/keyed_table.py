"""A DataTable whose rows are keyed by id and diff-updated, so the cursor survives ticks.

Rebuilding a table on every tick would jump the cursor back to the top and redraw every
cell; instead each tick adds the new rows, removes the gone ones and rewrites only the
cells that changed, then puts the cursor back on the row it was on. Rows out of view wait:
a row whose cells changed is written once it comes into view or is read, and a row given
as a ``LazyRow`` has its cells made only then (a new one is added blank). The drawing and
row upkeep of thousands of rows are ``LeanTable``'s.

Every ``KeyedTable`` can be filtered and sorted by the user, with no code in its screen:
``/`` opens a ``TableFilter`` under it (rows whose any cell contains the text stay),
``o`` cycles the sort column (then back to the given order), ``O`` reverses it. Both are
applied inside ``sync_rows``, on the rows each tick hands in, so they survive refreshes
and the cursor stays on its row's key. A cell sorts by the key its row's builder gave it
(a ``SortedCell``: a number drawn as ``1m35s``, ``2.1G`` or a progress bar sorts by the
seconds, the bytes, the count), else by its text (``t2`` before ``t10``); blank cells
(no key, ``-``, empty) go last either way. The cells and the sorting are in
``table_cells``, where every cell and header is made visible first (``shown_cell``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets.data_table import ColumnKey, RowKey

from raytop.model.visible import visible
from raytop.tui.format import shown
from raytop.tui.glyphs import ASCII, glyphs_of
from raytop.tui.widgets.lean_table import LeanTable
from raytop.tui.widgets.table_cells import (
    GivenRow,
    LazyRow,
    cells_of,
    plain,
    shown_cell,
    sorted_keys,
)
from raytop.tui.widgets.table_filter import TableFilter

_SORT_GROUP = Binding.Group("sort")
# The cell of a row added out of view, until it is written (``sync_rows``).
_UNSEEN = Text("")


@dataclass(frozen=True)
class ColumnSpec:
    """One column: its key, header and fixed content width (fixed: no re-measuring)."""

    key: str
    header: str
    width: int
    justify: Literal["left", "right"] = "left"

    @property
    def but_width(self) -> tuple[str, str, str]:
        return self.key, self.header, self.justify


class KeyedTable(LeanTable):
    """A row-cursor table whose rows are keyed by a string id; see ``sync_rows``.

    Its keys (``/`` filter, ``o``/``O`` sort) act while it has the focus, so the footer
    of any screen shows them then; a subclass needs nothing to get them."""

    BINDINGS = [
        Binding(
            "slash",
            "filter",
            "filter",
            key_display="/",
            id="raytop.filter",
            tooltip="Keep the rows with this text in any column (Esc clears).",
        ),
        Binding(
            "o",
            "sort",
            "sort",
            id="raytop.sort",
            group=_SORT_GROUP,
            tooltip="Sort by the next column (then back to the usual order).",
        ),
        Binding(
            "O",
            "sort_reverse",
            "reverse sort",
            id="raytop.sort-reverse",
            group=_SORT_GROUP,
            tooltip="Reverse the sort.",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._layout: tuple[ColumnSpec, ...] | None = None
        self._header_sort: tuple[str, bool] | None = None  # what the headers' arrow says
        self._given: dict[str, GivenRow] = {}  # the rows of the last sync
        self._given_columns: tuple[ColumnSpec, ...] = ()
        self._filter = ""
        self._sort_column: str | None = None  # None: the order given
        self._sort_reverse = False
        self._filter_bar: TableFilter | None = None
        # Rows out of view whose new cells wait to be written: key → cells. Written when
        # they come into view (scroll, cursor) or are read (``get_row``); a 2,000-rank run
        # whose every age ticks costs the rows on screen, not all of them.
        self._deferred: dict[str, GivenRow] = {}

    # -- rows out of view -----------------------------------------------------------------

    def _view(self) -> range:
        """The rows on screen, and a screen's worth either side (asked once per pass:
        Textual works the region out anew on each ask)."""
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_y)
        return range(top - height, top + 2 * height + 1)

    def _keys_in(self, view: range) -> set[str]:
        """The keys of the rows at the places in ``view`` (one lookup a place, not one a
        row: a 2,000-rank refresh asked Textual for the place of each of its rows)."""
        places = self._row_locations
        return {places.get_key(i).value for i in view if 0 <= i < len(self.rows)}

    def _write(self, key: str, row: GivenRow) -> None:
        cells = cells_of(row)
        for column, new, old in zip(self.columns_shown, cells, super().get_row(key), strict=True):
            if new is not old and new != old:
                shown_new = shown_cell(new)
                if shown_new is new or shown_new != old:
                    self.update_cell(key, column, shown_new)

    def _write_in_view(self) -> None:
        """Write the deferred rows now in view."""
        if not self._deferred:
            return
        with self.app.batch_update():
            # By the places in view, not each deferred row's place: 10,000 trials added
            # blank out of view are all deferred, and this runs on every scroll.
            for key in self._keys_in(self._view()) & self._deferred.keys():
                self._write(key, self._deferred.pop(key))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._write_in_view()

    def on_resize(self) -> None:
        self._write_in_view()

    def clear(self, columns: bool = False) -> KeyedTable:
        self._deferred.clear()
        super().clear(columns)
        return self

    def get_row(self, row_key: RowKey | str) -> list[object]:
        """The row's cells as last given (a deferred row is written first)."""
        key = row_key.value if isinstance(row_key, RowKey) else row_key
        if key in self._deferred:
            self._write(key, self._deferred.pop(key))
        return super().get_row(row_key)

    def get_cell(self, row_key: RowKey | str, column_key: ColumnKey | str) -> object:
        """The cell as last given (its deferred row written first)."""
        key = row_key.value if isinstance(row_key, RowKey) else row_key
        if key in self._deferred:
            self._write(key, self._deferred.pop(key))
        return super().get_cell(row_key, column_key)

    # -- filter and sort ----------------------------------------------------------------

    @property
    def filter_text(self) -> str:
        return self._filter

    @property
    def unfiltered_count(self) -> int:
        """How many rows the last ``sync_rows`` was given (before the filter)."""
        return len(self._given)

    @property
    def user_sort(self) -> tuple[str | None, bool]:
        """(the sort column's key, or None for the order given; reversed?)."""
        return self._sort_column, self._sort_reverse

    def set_filter(self, text: str) -> None:
        """Keep only the rows with ``text`` in a cell (case-insensitive); ``""``: all."""
        self._filter = text
        self._resync()

    def set_sort(self, column: str | None, *, reverse: bool = False) -> None:
        """Sort by the column ``column`` (None: the order given), reversed or not."""
        self._sort_column, self._sort_reverse = column, reverse
        self._resync()

    def action_filter(self) -> None:
        if self._filter_bar is None:
            self._filter_bar = TableFilter(self)
            assert self.parent is not None
            self.parent.mount(self._filter_bar, after=self)
            self.call_after_refresh(self._filter_bar.open)
        else:
            self._filter_bar.open()

    def action_sort(self) -> None:
        keys = [column.key for column in self._given_columns]
        if not keys:
            return
        if self._sort_column not in keys:
            column: str | None = keys[0]
        else:
            index = keys.index(self._sort_column) + 1
            column = keys[index] if index < len(keys) else None
        self.set_sort(column, reverse=False)

    def action_sort_reverse(self) -> None:
        keys = [column.key for column in self._given_columns]
        if self._sort_column is None and keys:
            self.set_sort(keys[0], reverse=True)
        else:
            self.set_sort(self._sort_column, reverse=not self._sort_reverse)

    def _resync(self) -> None:
        if self._given_columns:
            self.sync_rows(dict(self._given), self._given_columns)

    def _shown_rows(
        self, wanted: dict[str, GivenRow], columns: Sequence[ColumnSpec]
    ) -> dict[str, GivenRow]:
        """``wanted`` through the filter, in the sort's order (both make every row's
        cells: only while the user filters or sorts)."""
        if self._filter:
            needle = self._filter.casefold()
            wanted = {
                key: row
                for key, row in wanted.items()
                if any(needle in plain(cell).casefold() for cell in cells_of(row))
            }
        keys = [column.key for column in columns]
        if self._sort_column in keys:
            index = keys.index(self._sort_column)
            every = {key: cells_of(row) for key, row in wanted.items()}
            order = sorted_keys(every, index, reverse=self._sort_reverse)
            wanted = {key: wanted[key] for key in order}
        return wanted

    def _after_sync(self) -> None:
        """Say the filter's count, in the bar and the border title."""
        if self._filter:
            filtered = f"filter: {self._filter} · {self.row_count} of {len(self._given)}"
            self.border_title = shown(filtered)
        else:
            self.border_title = None
        if self._filter_bar is not None and self._filter_bar.is_mounted:
            self._filter_bar.show_count()

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

    def sync_rows(self, wanted: dict[str, GivenRow], columns: Sequence[ColumnSpec]) -> None:
        """Make the rows match ``wanted`` (key -> cells, in column order, or a ``LazyRow``
        of them; in row order): add, update changed cells, remove; the cursor stays on
        its row's key.

        The user's filter and sort (``/``, ``o``) apply to ``wanted`` here: rows the
        filter hides are not added. A row given the very cells tuple it was given last
        time is left as it is, uncompared (a caller that keeps an unchanged row's cells
        makes a refresh of thousands of rows cost only its changed ones)."""
        given_before = self._given
        self._given = dict(wanted)
        self._given_columns = tuple(columns)
        wanted = self._shown_rows(wanted, columns)
        with self.app.batch_update():
            selected = self.cursor_key()
            self._ensure_columns(columns)
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
                    self._deferred.pop(key, None)
            view = self._view()
            in_view = self._keys_in(view)
            new: list[tuple[str, tuple[object, ...]]] = []  # after the kept ones (above)
            for key, row in wanted.items():
                if key not in present:
                    if isinstance(row, LazyRow) and self.row_count + len(new) not in view:
                        # Out of view: blank until it comes into view or is read.
                        new.append((key, (_UNSEEN,) * len(columns)))
                        self._deferred[key] = row
                    else:
                        new.append((key, tuple(map(shown_cell, cells_of(row)))))
                    continue
                if given_before.get(key) is row:
                    continue  # what the row shows already, or is deferred
                if key in in_view:
                    self._deferred.pop(key, None)
                    self._write(key, row)
                else:
                    self._deferred[key] = row
            self._append_rows(new)
            if selected in wanted:
                row = self.get_row_index(selected)
                if row != self.cursor_row:
                    self.move_cursor(row=row)
        self._after_sync()

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
        keys = {column.key for column in layout}
        sort = (self._sort_column, self._sort_reverse) if self._sort_column in keys else None
        if layout == self._layout and sort == self._header_sort:
            return
        # Only widths changed (not the sorted column's, whose arrow is cut to it): kept rows.
        widths, before = ({c.key: c.width for c in cs} for cs in (layout, self._layout or ()))
        same = [c.but_width for c in layout] == [c.but_width for c in self._layout or ()]
        arrow = sort is None or widths[sort[0]] == before.get(sort[0])
        if same and arrow and sort == self._header_sort:
            self._layout = layout
            self.set_widths(widths)
            return
        self._layout = layout
        self._header_sort = sort
        self.clear(columns=True)
        for column in layout:
            header = column.header
            if sort is not None and sort[0] == column.key:
                header = self._with_arrow(header, column.width, reverse=sort[1])
            label = Text(visible(header), justify=column.justify, overflow="ellipsis", no_wrap=True)
            self.add_column(label, key=column.key, width=column.width)

    def _with_arrow(self, header: str, width: int, *, reverse: bool) -> str:
        """``loss ▲`` (ascending) or ``loss ▼``; cut to fit ``width`` (``^``/``v`` in ASCII)."""
        up, down = ("^", "v") if glyphs_of(self) is ASCII else ("▲", "▼")
        arrow = down if reverse else up
        if len(header) + 2 <= width:
            return f"{header} {arrow}"
        return f"{header[: max(0, width - 1)]}{arrow}"
