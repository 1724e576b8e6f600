"""The cells of raytop's tables, and how a column of them sorts (``KeyedTable``).

A cell is Rich ``Text`` (``left``, ``right``), a ``StyledCell`` coloured by the table's
theme when drawn, or a ``SortedCell``: one of those with the value it sorts by (``o``).
A number's text (``1m35s``, ``2.1G``, ``12/m``) is made from a value, and the code that
makes it hands that value in beside it (``number``), so a column sorts by what it means,
never by reading its text back. Every cell is made visible before the table draws it
(``shown_cell``): its text may be a trial id, a folder or a checkpoint name from someone
else's storage. A row is its cells, or a ``LazyRow`` that makes them when first asked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from raytop.model.visible import visible
from raytop.tui.format import shown

_BLANK = frozenset({"", "-"})
_DIGITS = re.compile(r"(\d+)")


class Themed(Protocol):
    """What a ``StyledCell`` asks of its table: the style of a component class now."""

    def component_style(self, name: str) -> Style: ...


@dataclass(frozen=True)
class StyledCell:
    """Text coloured when drawn, from the table's CSS component class ``component``,
    so a theme switch recolours the cells already in the table.

    Equal cells compare equal (the table is left out), so an unchanged one is not
    rewritten. Too long for its column, it ends in an ellipsis (as ``left`` does)."""

    text: str
    component: str
    table: Themed = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        style = self.table.component_style(self.component)
        yield Text(self.text, style=style, end="", no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(len(self.text), len(self.text))


@dataclass(frozen=True)
class SortedCell:
    """A cell drawn as ``cell`` (``Text`` or a ``StyledCell``: a number, a progress bar,
    a sparkline) that sorts as ``key`` (``o``); ``None`` (or NaN) sorts with the blanks,
    last. The filter (``/``) matches its text."""

    cell: Text | StyledCell
    key: float | None

    def __str__(self) -> str:
        return plain(self.cell)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.cell

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.cell)


class LazyRow:
    """A row whose cells are made only when the table needs them: when it is added, comes
    into view, is read, or is filtered or sorted by its cells. A caller whose rows change
    every refresh (a 2,000-rank run's ages tick) hands these, and a refresh makes the cells
    of the rows on screen only, not of all of them."""

    __slots__ = ("_cells", "_make")

    def __init__(self, make: Callable[[], tuple[object, ...]]) -> None:
        self._make = make
        self._cells: tuple[object, ...] | None = None

    @property
    def cells(self) -> tuple[object, ...]:
        if self._cells is None:
            self._cells = self._make()
        return self._cells


GivenRow = tuple[object, ...] | LazyRow


def cells_of(row: GivenRow) -> tuple[object, ...]:
    """A row's cells (a ``LazyRow``'s made now, once)."""
    return row.cells if isinstance(row, LazyRow) else row


def right(text: str) -> Text:
    """A right-aligned cell sorted by its text (a number is a ``number``: it sorts by value)."""
    return Text(text, justify="right", no_wrap=True)


def number(text: str, key: float | None, style: str = "") -> SortedCell:
    """A right-aligned number drawn as ``text`` (made from ``key``) that sorts by ``key``."""
    return SortedCell(Text(text, justify="right", no_wrap=True, style=style), key)


def left(text: str) -> Text:
    """A left-aligned cell that ends in an ellipsis when its column is too narrow."""
    return Text(text, no_wrap=True, overflow="ellipsis")


def shown_cell(cell: object) -> object:
    """``cell`` as the table may draw it: its text ``shown`` (``tui.format``: escapes and
    credentials made visible, one line), its style and sort number kept; a ``str`` (which
    DataTable would parse as markup) becomes plain ``Text``. The very cell when it needs
    nothing, so unchanged rows still compare by identity."""
    if isinstance(cell, Text):
        return shown(cell)
    if isinstance(cell, StyledCell):
        text = visible(cell.text)
        return cell if text == cell.text else replace(cell, text=text)
    if isinstance(cell, SortedCell):
        inner = shown_cell(cell.cell)
        return cell if inner is cell.cell else replace(cell, cell=inner)
    if isinstance(cell, str):
        return Text(visible(cell), no_wrap=True, overflow="ellipsis")
    return cell


def plain(cell: object) -> str:
    """A cell's text, whatever it is (Rich ``Text``, ``StyledCell``, a string)."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, StyledCell):
        return cell.text
    if isinstance(cell, SortedCell):
        return plain(cell.cell)
    return str(cell)


def _sort_key(cell: object) -> tuple[int, object] | None:
    """Where ``cell`` goes: by its key (a ``SortedCell``) before the cells sorted by their
    text; ``None`` for a blank (a ``SortedCell`` with no key, a text empty or ``-``),
    which goes last."""
    if isinstance(cell, SortedCell):
        key = cell.key
        return None if key is None or math.isnan(key) else (0, key)
    text = plain(cell).strip()
    return None if text in _BLANK else (1, _natural(text))


def _natural(text: str) -> tuple[object, ...]:
    """``t2`` before ``t10``: digit runs compare as numbers, the rest case-insensitively."""
    return tuple(int(part) if part.isdigit() else part.casefold() for part in _DIGITS.split(text))


def sorted_keys(rows: Mapping[str, tuple[object, ...]], index: int, *, reverse: bool) -> list[str]:
    """The keys of ``rows`` by their cell ``index`` (its sort key, else its text, digit runs
    as numbers); blank cells last in either direction, in the order given (as are equal
    ones)."""
    keys = {key: _sort_key(cells[index]) for key, cells in rows.items()}
    valued: dict[str, Any] = {key: sort_key for key, sort_key in keys.items() if sort_key}
    blank = [key for key in keys if key not in valued]
    return sorted(valued, key=valued.__getitem__, reverse=reverse) + blank
