"""A ``Static`` that is not laid out again when handed what it already shows.

Textual's ``Static.update`` asks for a layout of the whole screen on every call
(``refresh(layout=True)``). The Run screen updates its title, age, notes, time line and
findings on each snapshot, most of them with the same words: at a 0.25 s refresh that was a
layout and a full redraw of a 2,000-rank screen four times a second (about 13 ms each,
besides the drawing). A ``Line`` compares what it is handed with what it shows (text and
styles: ``Content``'s own ``==`` compares the text only) and lets an unchanged update pass;
words of the same shape are drawn without a layout.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.visual import VisualType
from textual.widgets import Static


def _look(content: VisualType) -> tuple[object, ...] | None:
    """What ``content`` draws, to compare; None for what cannot be compared (a Rich
    renderable): that is always drawn."""
    if isinstance(content, Content):
        return ("content", content.plain, tuple(content.spans))
    if isinstance(content, str):
        return ("str", content)
    return None


def _shape(content: VisualType) -> tuple[int, ...] | None:
    """The cell width of each line of ``content`` (None: not known)."""
    if isinstance(content, Content):
        return tuple(line.cell_length for line in content.split("\n"))
    if isinstance(content, str):
        return tuple(cell_len(line) for line in content.split("\n"))
    return None


class Line(Static):
    """A ``Static`` whose ``update`` with what it already shows does nothing, and whose
    update to words of the very same shape (lines as many and as wide, none wrapped)
    redraws it without a layout (an age ticking from 3s to 4s)."""

    _shown_look: tuple[object, ...] | None = None
    _shown_shape: tuple[int, ...] | None = None

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        look = _look(content)
        if look is not None and look == self._shown_look:
            return
        shape = _shape(content)
        width = self.content_region.width
        if shape is not None and shape == self._shown_shape and max(shape) <= width:
            layout = False
        self._shown_look, self._shown_shape = look, shape
        super().update(content, layout=layout)
