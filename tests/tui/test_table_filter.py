"""``/`` filters and ``o``/``O`` sort any KeyedTable, inside the keyed update path."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Input

from raytop.model import TrainRun, Worker
from raytop.model.format import fmt_duration
from raytop.tui.format import fmt_bytes
from raytop.tui.widgets.table_cells import left, number, sorted_keys
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.worker_table import WorkerTable

from .helpers import cursor_key, row_keys, show


def test_cells_sort_by_the_key_they_carry_not_their_text() -> None:
    """``59s`` < ``1m01s`` < ``1h05m``, ``1000B`` < ``2.0K`` < two ``2.1G`` told apart by
    their bytes; no key (``None``, NaN) and blank text go last either way."""
    ages = {"a": 3900.0, "b": 59.0, "c": None, "d": 61.0, "e": float("nan")}
    rows = {k: (number(fmt_duration(v), v),) for k, v in ages.items()}
    assert sorted_keys(rows, 0, reverse=False) == ["b", "d", "a", "c", "e"]
    assert sorted_keys(rows, 0, reverse=True) == ["a", "d", "b", "c", "e"]
    sizes = {"a": 2_300_000_000, "b": 1000, "c": 2_250_000_000, "d": 2048}
    rows = {k: (number(fmt_bytes(v), v),) for k, v in sizes.items()}
    assert {fmt_bytes(sizes["a"]), fmt_bytes(sizes["c"])} == {"2.1G"}
    assert sorted_keys(rows, 0, reverse=False) == ["b", "d", "c", "a"]
    names = {"a": left("t10"), "b": left("-"), "c": Text("t2"), "d": left("T3")}
    assert sorted_keys({k: (v,) for k, v in names.items()}, 0, reverse=False) == list("cdab")


class Ranks(App[None]):
    def compose(self) -> ComposeResult:
        yield WorkerTable()


async def test_sort_ranks_by_a_duration_and_a_size_column() -> None:
    workers = (
        Worker(rank=0, last_enter_at=9925.0, rss_bytes=3 * 1024**3, pid=10),
        Worker(rank=1, last_enter_at=9991.0, rss_bytes=512 * 1024**2, pid=11),
        Worker(rank=2, last_enter_at=None, rss_bytes=None, pid=12),
        Worker(rank=3, last_enter_at=2700.0, rss_bytes=900, pid=13),
    )
    run = TrainRun(run_id="r", run_name="n", attempt_id="a", world_size=4, workers=workers)
    app = Ranks()
    async with app.run_test(size=(120, 12)) as pilot:
        table = app.query_one(WorkerTable)
        table.show_run(run, now=10_000.0)
        table.set_sort("last_report")
        await pilot.pause()
        assert [str(table.get_row(k)[table.columns_shown.index("last_report")])
                for k in row_keys(table)] == ["9s", "1m15s", "2h01m", "-"]  # fmt: skip
        table.set_sort("rss", reverse=True)
        await pilot.pause()
        assert row_keys(table) == ["0", "1", "3", "2"]  # 3.0G, 512M, 900B; none last


async def test_filter_keeps_matching_rows_and_survives_a_tick(make_app, sweep, next_tick) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        table.focus()
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen.focused, Input)
        await pilot.press(*"lr=0.01")
        await pilot.pause()
        assert row_keys(table) == ["7d2a1_00000"]  # not lr=0.001: a substring, not a prefix
        assert table.border_title == "filter: lr=0.01 · 1 of 5"
        await pilot.press(*(["backspace"] * 7), *"running")  # case-insensitive
        await pilot.pause()
        assert row_keys(table) == ["7d2a1_00000", "7d2a1_00001"]
        assert table.border_title == "filter: running · 2 of 5"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.focused is table
        await pilot.press("down")
        assert cursor_key(table) == "7d2a1_00001"
        # A new snapshot: the hidden rows stay hidden, the cursor stays on its key.
        await show(pilot, next_tick(drop=("7d2a1_00000",)))
        assert row_keys(table) == ["7d2a1_00001"]
        assert cursor_key(table) == "7d2a1_00001"
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert row_keys(table) == [f"7d2a1_0000{i}" for i in range(1, 5)]
        assert table.border_title is None


async def test_sort_by_a_numeric_column_and_reverse(make_app, sweep, next_tick) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        table.focus()
        table.move_cursor(row=3)
        assert cursor_key(table) == "7d2a1_00003"
        table.set_sort("metric")
        await pilot.pause()
        # loss: 0.2954 (3), 0.4213 (0), 0.6871 (1), 3.912 (4); 2 has none: last.
        order = ["7d2a1_00003", "7d2a1_00000", "7d2a1_00001", "7d2a1_00004", "7d2a1_00002"]
        assert row_keys(table) == order
        assert cursor_key(table) == "7d2a1_00003"
        assert str(table.columns["metric"].label) == "loss ▲"
        await pilot.press("O")
        await pilot.pause()
        assert row_keys(table) == [*reversed(order[:4]), "7d2a1_00002"]
        assert str(table.columns["metric"].label).endswith("▼")
        await show(pilot, next_tick())
        assert row_keys(table) == [*reversed(order[:4]), "7d2a1_00002"]
        assert cursor_key(table) == "7d2a1_00003"
        await pilot.press("o")  # the next column after the metric: its trend
        await pilot.pause()
        assert table.user_sort == ("trend", False)
        # By the change over the history (last - first): -2.0, -1.88, -1.61, +1.61; none last.
        assert row_keys(table) == order
        await pilot.press("o")  # then the iterations: the bar's count, as a number
        await pilot.pause()
        assert table.user_sort == ("iter", False)
        by_iterations = ["7d2a1_00002", "7d2a1_00004", "7d2a1_00001", "7d2a1_00000"]
        assert row_keys(table) == [*by_iterations, "7d2a1_00003"]  # 0, 3, 9, 12, 20


async def test_a_large_table_is_sized_without_measuring_its_cells(monkeypatch) -> None:
    """Textual measures each new row's cells to size auto-width columns; a KeyedTable's
    are fixed (``ColumnSpec``), so it skips that (``_update_dimensions``) and its size is
    still its rows and its columns' widths. Were the hook renamed in Textual, this fails
    instead of the first frame of a 10,000-trial sweep silently taking seconds again."""
    from textual.widgets import DataTable, _data_table

    assert callable(getattr(DataTable, "_update_dimensions", None))
    measured = []
    real = _data_table.measure
    monkeypatch.setattr(_data_table, "measure", lambda *a: measured.append(a) or real(*a))
    workers = tuple(Worker(rank=r, pid=100 + r) for r in range(300))
    run = TrainRun(run_id="r", run_name="n", attempt_id="a", world_size=300, workers=workers)
    app = Ranks()
    async with app.run_test(size=(120, 12)) as pilot:
        table = app.query_one(WorkerTable)
        table.show_run(run)
        await pilot.pause()
        widths = sum(c.get_render_width(table) for c in table.columns.values())
        assert table.virtual_size == (widths, 300 + 1)  # its rows and the header
        assert len(measured) < 300  # not a cell of every row (Textual measures ~14 a row)
