"""The TUI's own formatting helpers."""

from __future__ import annotations

import pytest

from raytop.tui.format import fmt_bytes, fmt_rate, progress_bar, sparkline
from raytop.tui.glyphs import ASCII, UNICODE


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "-"),
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0K"),
        (10 * 1024, "10K"),
        (1023.9 * 1024**2, "1.0G"),
        (1_900_000_000, "1.8G"),
        (2_300_000_000, "2.1G"),
        (80 * 1024**3, "80G"),
        (3 * 1024**4, "3.0T"),
    ],
)
def test_fmt_bytes(n, text) -> None:
    assert fmt_bytes(n) == text
    assert len(fmt_bytes(n)) <= 5


@pytest.mark.parametrize(
    ("per_min", "text"),
    [(None, "-"), (0.01, "<0.1/m"), (0.1, "0.1/m"), (7.08, "7.1/m"), (9.96, "10/m"),
     (12.4, "12/m"), (59_999.0, "59999/m")],
)  # fmt: skip
def test_fmt_rate(per_min, text) -> None:
    assert fmt_rate(per_min) == text
    assert len(text) <= 6 or per_min >= 10_000  # the worker table's column is 6 wide


def test_sparkline_draws_each_series_on_its_own_scale() -> None:
    assert sparkline([], 8, UNICODE.spark) == ""
    assert sparkline([3.0, 2.0, 1.0], 8, UNICODE.spark) == "█▅▁"
    assert sparkline([3.0, 2.0, 1.0], 8, ASCII.spark) == "#=_"
    assert sparkline([0.5] * 4, 8, UNICODE.spark) == "▅▅▅▅"  # flat: the middle
    assert sparkline([0.5], 8, UNICODE.spark) == "▅"
    assert len(sparkline([float(i) for i in range(64)], 8, UNICODE.spark)) == 8


def test_progress_bar() -> None:
    assert progress_bar(3, 5, 5, "█", "░") == "███░░"
    assert progress_bar(0, 5, 5, "#", ".") == "....."
    assert progress_bar(9, 5, 5, "#", ".") == "#####"


def test_a_chart_fills_each_column_up_to_its_value_top_row_first():
    from raytop.tui.format import chart

    assert chart([0.0, 1.0], 2, 2, "12345678") == [" 8", "18"]
    assert chart([0.0, 0.5, 1.0], 3, 1, "12345678") == ["158"]
    assert chart([], 5, 3, "12345678") == ["", "", ""]
