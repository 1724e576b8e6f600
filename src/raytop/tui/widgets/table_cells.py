"""The cells of raytop's tables, and how a column of them sorts (``KeyedTable``).

A cell is Rich ``Text`` (``left``, ``right``), a ``StyledCell`` coloured by the table's
theme when drawn, or a ``NumberedCell`` that draws a picture and sorts by its number.
Every cell is made visible before the table draws it (``shown_cell``): its text may be a
trial id, a folder or a checkpoint name from someone else's storage. Sorting reads a
cell's text back as a number where it shows one (``number_of``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from raytop.model.visible import visible
from raytop.tui.format import shown

_BLANK = frozenset({"", "-"})
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$")
_BYTES = re.compile(r"^(\d+(?:\.\d+)?)([BKMGTP])$")
_BYTE_POWERS = {unit: 1024**i for i, unit in enumerate("BKMGTP")}
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
class NumberedCell:
    """A cell drawn as ``text`` (e.g. ``███░░ 3/5``) that sorts as ``number`` (``o``);
    ``None`` sorts with the blanks. The filter (``/``) matches its text."""

    text: Text
    number: float | None

    def __str__(self) -> str:
        return self.text.plain

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.text.cell_len, self.text.cell_len)


def right(text: str) -> Text:
    """A right-aligned cell, for numbers."""
    return Text(text, justify="right", no_wrap=True)


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
    if isinstance(cell, NumberedCell):
        text_ = shown(cell.text)
        return cell if text_ is cell.text else replace(cell, text=text_)
    if isinstance(cell, str):
        return Text(visible(cell), no_wrap=True, overflow="ellipsis")
    return cell


def plain(cell: object) -> str:
    """A cell's text, whatever it is (Rich ``Text``, ``StyledCell``, a string)."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, StyledCell):
        return cell.text
    if isinstance(cell, NumberedCell):
        return cell.text.plain
    return str(cell)


def number_of(text: str) -> float | None:
    """The number a numeric cell shows: ``0.42``, ``1.2e-05``, ``1m35s``, ``2.1G``, ``2/4``
    (its first part), ``99%``; ``None`` when it shows none (``-``, blank, ``nan``)."""
    text = text.strip().removesuffix("%").split("/")[0].strip()
    try:
        value = float(text)
    except ValueError:
        value = None
        if (bytes_ := _BYTES.match(text)) is not None:
            value = float(bytes_.group(1)) * _BYTE_POWERS[bytes_.group(2)]
        elif text and (duration := _DURATION.match(text)) is not None:
            hours, minutes, seconds = (float(part or 0) for part in duration.groups())
            value = hours * 3600 + minutes * 60 + seconds
    return None if value is None or math.isnan(value) else value


def _number_in(cell: object) -> float | None:
    if isinstance(cell, NumberedCell):
        return cell.number
    return number_of(plain(cell))


def _natural(text: str) -> tuple[object, ...]:
    """``t2`` before ``t10``: digit runs compare as numbers, the rest case-insensitively."""
    return tuple(int(part) if part.isdigit() else part.casefold() for part in _DIGITS.split(text))


def sorted_keys(
    rows: Mapping[str, tuple[object, ...]], index: int, *, numeric: bool, reverse: bool
) -> list[str]:
    """The keys of ``rows`` by their cell ``index``; blank cells last in either direction,
    in the order given (as are equal ones)."""
    blank = [key for key, cells in rows.items() if plain(cells[index]).strip() in _BLANK]
    blank_set = set(blank)
    valued = [key for key in rows if key not in blank_set]
    if numeric:
        numbers = {k: _number_in(rows[k][index]) for k in valued}
        valued = [k for k in valued if numbers[k] is not None]
        blank = [k for k in rows if k not in blank_set and numbers[k] is None] + blank
        ordered = sorted(valued, key=lambda k: numbers[k] or 0.0, reverse=reverse)
    else:
        ordered = sorted(valued, key=lambda k: _natural(plain(rows[k][index])), reverse=reverse)
    return ordered + blank
