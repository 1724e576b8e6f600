"""``/`` filters and ``o``/``O`` sort any KeyedTable, inside the keyed update path."""

from __future__ import annotations

from textual.widgets import Input

from raytop.tui.widgets.table_cells import number_of
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import cursor_key, row_keys, show


def test_number_of_reads_raytop_numbers() -> None:
    assert number_of("0.4213") == 0.4213
    assert number_of("1m35s") == 95
    assert number_of("2h05m") == 7500
    assert number_of("2.0K") == 2048
    assert number_of("2/4") == 2
    assert number_of("-") is None
    assert number_of("nan") is None


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
