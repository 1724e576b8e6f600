"""The TUI's own formatting helpers."""

from __future__ import annotations

import pytest

from raytop.tui.format import fmt_bytes


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
