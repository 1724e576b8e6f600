"""How a KeyedTable keeps thousands of rows cheap, and still Textual's: rows added at once
are the rows ``add_row`` adds; a ``LazyRow`` out of view is blank until it is seen or read;
the rows' order is kept until a row is added, removed or moved."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import LazyRow

COLUMNS = (ColumnSpec("name", "name", 8), ColumnSpec("n", "n", 6, "right"))


def cells(i: int) -> tuple[object, ...]:
    return (Text(f"row{i}"), Text(str(i), justify="right"))


class Tables(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[tuple[str | None, str | None]] = []

    def compose(self) -> ComposeResult:
        yield KeyedTable(id="keyed")
        yield DataTable(id="textual", cursor_type="row")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.highlighted.append((event.data_table.id, event.row_key.value))


async def test_rows_added_at_once_are_the_rows_textual_adds() -> None:
    app = Tables()
    async with app.run_test(size=(60, 30)) as pilot:
        keyed = app.query_one("#keyed", KeyedTable)
        textual = app.query_one("#textual", DataTable)
        for column in COLUMNS:
            textual.add_column(column.header, key=column.key, width=column.width)
        keyed.sync_rows({f"k{i}": cells(i) for i in range(50)}, COLUMNS)
        for i in range(50):
            textual.add_row(*cells(i), key=f"k{i}")
        await pilot.pause()
        assert keyed.row_count == textual.row_count == 50
        assert [r.key for r in keyed.ordered_rows] == [r.key for r in textual.ordered_rows]
        assert all(
            list(map(str, keyed.get_row_at(i))) == list(map(str, textual.get_row_at(i)))
            for i in range(50)
        )
        assert keyed.virtual_size.height == textual.virtual_size.height
        assert keyed.cursor_coordinate == textual.cursor_coordinate
        assert sorted(app.highlighted) == [("keyed", "k0"), ("textual", "k0")]


async def test_lazy_rows_out_of_view_are_made_only_when_seen_or_read() -> None:
    app = Tables()
    async with app.run_test(size=(60, 30)) as pilot:
        keyed = app.query_one("#keyed", KeyedTable)
        made: list[int] = []

        def row(i: int) -> LazyRow:
            return LazyRow(lambda: (made.append(i), cells(i))[1])

        keyed.sync_rows({f"k{i}": row(i) for i in range(10_000)}, COLUMNS)
        await pilot.pause()
        assert keyed.row_count == 10_000
        assert 0 < len(made) < 100  # a screen and a screen either side
        assert str(keyed.get_cell("k9000", "n")) == "9000"  # read: made first
        assert str(keyed.get_row_at(9001)[0]) == "row9001"
        keyed.move_cursor(row=5000)  # seen: made
        await pilot.pause()
        assert 5000 in made and "row5000" in str(keyed.get_row_at(5000))


async def test_the_rows_order_is_kept_until_rows_are_added_removed_or_moved() -> None:
    app = Tables()
    async with app.run_test(size=(60, 30)) as pilot:
        keyed = app.query_one("#keyed", KeyedTable)

        def order() -> list[str]:
            keys = [r.key.value for r in keyed.ordered_rows]
            assert keys == [r.key.value for r in DataTable.ordered_rows.fget(keyed)]
            assert [key.value for key, _ in keyed._y_offsets] == keys
            return keys

        keyed.sync_rows({f"k{i}": cells(i) for i in range(5)}, COLUMNS)
        before = keyed.ordered_rows
        keyed.update_cell("k1", "n", Text("9"))
        assert keyed.ordered_rows is before  # a cell written: the order is kept
        keyed.sync_rows({f"k{i}": cells(i) for i in (0, 1, 3, 4, 5)}, COLUMNS)  # removed, added
        assert order() == ["k0", "k1", "k3", "k4", "k5"]
        keyed.set_sort("n", reverse=True)  # moved
        assert order() == ["k5", "k4", "k3", "k1", "k0"]
        keyed.remove_row("k3")  # as many rows as before, not the same ones
        keyed.add_row(*cells(7), key="k7")
        assert order() == ["k5", "k4", "k1", "k0", "k7"]
        keyed.sort("name", key=str)  # Textual's own sort: as many rows, in new places
        assert order() == ["k0", "k1", "k4", "k5", "k7"]
        keyed.clear()
        assert order() == []
        await pilot.pause()


async def test_a_new_width_keeps_the_rows_and_draws_at_it() -> None:
    """Only a column's width changed (a scrollbar came, the terminal was resized): the
    rows stay (Textual would clear the table and add them all again) and the column is
    drawn at its new width; a new header still makes the columns again."""
    app = Tables()
    async with app.run_test(size=(60, 30)) as pilot:
        keyed = app.query_one("#keyed", KeyedTable)
        keyed.sync_rows({f"k{i}": cells(i) for i in range(50)}, COLUMNS)
        await pilot.pause()
        rows = dict(keyed.rows)
        width = keyed.virtual_size.width
        n_at = "".join(s.text for s in keyed.render_line(1)).rindex("0")  # row 0's n
        wider = (ColumnSpec("name", "name", 14), COLUMNS[1])
        keyed.sync_rows({f"k{i}": cells(i) for i in range(50)}, wider)
        await pilot.pause()
        assert keyed.rows == rows and all(keyed.rows[k] is r for k, r in rows.items())
        assert keyed.virtual_size.width == width + 6
        assert keyed.columns[ColumnKey("name")].width == 14
        assert "".join(s.text for s in keyed.render_line(1)).rindex("0") == n_at + 6
        renamed = (ColumnSpec("name", "who", 14), COLUMNS[1])
        keyed.sync_rows({f"k{i}": cells(i) for i in range(50)}, renamed)
        await pilot.pause()
        assert keyed.row_count == 50 and keyed.rows[RowKey("k0")] is not rows[RowKey("k0")]
