"""A table of thousands of rows whose every row changes each refresh (a 2,000-rank run's
ages tick): only the rows on screen (and a screen either side) are written; the others
are written when they come into view or are read, and a rank whose cells did not change
keeps its row as it was. ``benchmarks/scale_bench.py`` measures what this saves."""

from __future__ import annotations

from dataclasses import replace

from textual.app import App, ComposeResult

from raytop.model import TrainRun, Worker
from raytop.tui.widgets.worker_table import WorkerTable

RANKS = 400
NOW = 1000.0  # the time the ranks' ages are said as of (``Snapshot.ages_at``)


def run(age: float, cpu: float = 50.0) -> TrainRun:
    workers = tuple(
        Worker(rank=r, reports_entered=4, reports_exited=4, pid=100 + r, last_enter_at=NOW - age,
               heartbeat_at=NOW - 1.0, cpu_percent=cpu, state="training")
        for r in range(RANKS)
    )  # fmt: skip
    return TrainRun(run_id="r", run_name="n", attempt_id="a", world_size=RANKS, workers=workers)


class OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield WorkerTable()


def shown(table: WorkerTable, rank: int, column: str) -> str:
    return str(table.get_row(str(rank))[table.columns_shown.index(column)])


async def test_only_rows_in_view_are_written_and_the_rest_when_seen() -> None:
    app = OneTable()
    async with app.run_test(size=(100, 24)) as pilot:
        table = app.query_one(WorkerTable)
        table.show_run(run(age=3.0), now=NOW)
        await pilot.pause()
        written: list[str] = []
        update_cell = table.update_cell

        def counted(row_key, column_key, value, **kwargs):
            written.append(row_key)
            return update_cell(row_key, column_key, value, **kwargs)

        table.update_cell = counted  # type: ignore[method-assign]
        made: list[int] = []
        cells_of = table._cells
        table._cells = lambda w, *look: (made.append(w.rank), cells_of(w, *look))[1]  # type: ignore[method-assign]
        table.show_run(run(age=9.0), now=NOW)
        await pilot.pause()
        # a screen (~20 rows) and one either side, not 400: written, and their cells made
        assert 0 < len(set(written)) <= 3 * 24
        assert 0 < len(made) <= 3 * 24
        last = table.row_count - 1
        assert str(last) not in written
        assert shown(table, last, "last_report") == "9s"  # read: written first
        table.move_cursor(row=last - 5)  # scrolled into view: written
        await pilot.pause()
        assert str(last - 5) in written and "9s" in str(table.get_row_at(last - 5))

        # The same figures again, in new Workers: the rows on screen are compared, and
        # none is written; the very same Workers: no row is even made again.
        written.clear()
        again = run(age=9.0)
        table.show_run(again, now=NOW)
        await pilot.pause()
        assert written == []
        made.clear()
        rows = dict(table._rows)
        table.show_run(again, now=NOW)
        await pilot.pause()
        assert written == [] and made == [] and all(table._rows[k] is rows[k] for k in rows)


async def test_a_resync_after_a_sort_shows_every_row_as_given() -> None:
    """Rows rebuilt (a sort moves them) are added with their current cells, none stale."""
    app = OneTable()
    async with app.run_test(size=(100, 24)) as pilot:
        table = app.query_one(WorkerTable)
        table.show_run(run(age=3.0), now=NOW)
        await pilot.pause()
        table.show_run(run(age=9.0, cpu=70.0), now=NOW)
        ranks = {w.rank: w for w in run(age=9.0, cpu=70.0).workers}
        ranks[RANKS - 1] = replace(ranks[RANKS - 1], cpu_percent=99.0)
        table.show_run(replace(run(age=9.0), workers=tuple(ranks.values())), now=NOW)
        table.set_sort("cpu", reverse=True)
        await pilot.pause()
        assert table.cursor_key() is not None
        assert [shown(table, r, "cpu") for r in (RANKS - 1, 0, RANKS // 2)] == ["99", "70", "70"]
        assert str(table.get_row_at(0)[0]) == str(RANKS - 1)


async def test_a_refresh_draws_again_only_the_cells_that_changed(monkeypatch) -> None:
    """Textual draws every cell on screen again after any one is written; a KeyedTable
    keeps the lines of a cell that is the same object in the same look. One rank's age
    moves: its cell is drawn again, the other cells on screen are not. A theme switch
    draws them all again, in its colours. Were Textual's ``_render_cell`` renamed, this
    fails instead of every refresh silently drawing the whole screen again."""
    from textual.widgets import DataTable

    assert callable(getattr(DataTable, "_render_cell", None))
    drawn: list[tuple[int, int]] = []
    real = DataTable._render_cell

    def counted(self, row_index, column_index, *args, **kwargs):
        drawn.append((row_index, column_index))
        return real(self, row_index, column_index, *args, **kwargs)

    monkeypatch.setattr(DataTable, "_render_cell", counted)
    app = OneTable()
    async with app.run_test(size=(100, 24)) as pilot:
        table = app.query_one(WorkerTable)
        table.show_run(run(age=3.0), now=NOW)
        await pilot.pause()
        assert len(drawn) > 100  # the first screen: every cell on it
        first = table.get_row_at(5)
        drawn.clear()
        moved = run(age=3.0)
        workers = list(moved.workers)
        workers[5] = replace(workers[5], last_enter_at=NOW - 7.0)
        table.show_run(replace(moved, workers=tuple(workers)), now=NOW)
        await pilot.pause()
        column = table.columns_shown.index("last_report")
        cells = {(r, c) for r, c in drawn if r >= 0}
        assert (5, column) in cells and len(cells) <= 2
        assert str(table.get_row_at(5)[column]) == "7s" != str(first[column])
        drawn.clear()
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        assert len({(r, c) for r, c in drawn if r >= 0}) > 100
