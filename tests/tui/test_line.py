"""``Line``: a Static not laid out again for what it already shows, nor for words of the
same shape; anything else is laid out and drawn as Textual's Static is."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content

from raytop.tui.widgets.line import Line


class OneLine(App[None]):
    def compose(self) -> ComposeResult:
        yield Line(id="line")


async def test_a_line_is_laid_out_only_when_its_shape_changes() -> None:
    app = OneLine()
    async with app.run_test(size=(40, 6)) as pilot:
        line = app.query_one(Line)
        asked: list[bool] = []
        refresh = line.refresh
        line.refresh = lambda *a, **k: (asked.append(k.get("layout", False)), refresh(*a, **k))[1]  # type: ignore[method-assign]

        line.update(Content.styled("updated 3s ago", "bold"))
        await pilot.pause()
        assert asked == [True]
        line.update(Content.styled("updated 3s ago", "bold"))  # the same: nothing
        assert asked == [True]
        line.update(Content.styled("updated 3s ago", "italic"))  # a new style: drawn
        line.update(Content.styled("updated 4s ago", "italic"))  # same shape: no layout
        assert asked == [True, False, False]
        await pilot.pause()
        assert "updated 4s ago" in str(line.render())
        line.update("updated 12s ago")  # wider: laid out
        line.update("two\nlines")
        assert asked[-2:] == [True, True]
        wide = "x" * 60  # wider than the screen: it wraps, so it is laid out each time
        line.update(wide)
        line.update("y" * 60)
        assert asked[-2:] == [True, True]
