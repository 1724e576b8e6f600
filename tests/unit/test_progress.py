"""model.progress: a trial's expected iterations, and its metric scaled to sparkline levels."""

from __future__ import annotations

import math

import pytest

from raytop.model.progress import (
    MAX_METRIC_HISTORY,
    bar_cells,
    expected_iterations,
    resample,
    spark_levels,
)


@pytest.mark.parametrize(
    ("config", "stop_limit", "expected"),
    [
        ({"epochs": 5}, None, 5),
        ({"num_epochs": 7}, None, 7),
        ({"max_epochs": 9}, None, 9),
        ({"epochs": 5, "num_epochs": 7}, None, 5),  # epochs first
        ({"epochs": 5}, 3, 3),  # the stopper's limit wins
        ({}, 4, 4),
        ({"epochs": 0}, None, None),
        ({"epochs": -2}, None, None),
        ({"epochs": 2.5}, None, None),
        ({"epochs": True}, None, None),  # a bool is not a count
        ({"epochs": "5"}, None, None),
        ({"epochs": "5", "max_epochs": 8}, None, 8),  # the next key that is a count
        ({"lr": 0.1}, None, None),
        (None, None, None),
        ({"epochs": 5}, 0, 5),  # no positive limit: the config's
    ],
)
def test_expected_iterations(config, stop_limit, expected) -> None:
    assert expected_iterations(config, stop_limit) == expected


def test_resample_keeps_short_series_and_averages_long_ones() -> None:
    assert resample([], 8) == []
    assert resample([1.0, 2.0], 8) == [1.0, 2.0]
    assert resample([1.0, 2.0, 3.0, 4.0], 2) == [1.5, 3.5]  # the whole history, in halves
    long = [float(i) for i in range(MAX_METRIC_HISTORY)]
    points = resample(long, 8)
    assert len(points) == 8 and points == sorted(points)
    assert points[0] == sum(range(8)) / 8
    assert resample([1.0, math.nan, math.inf, 2.0], 8) == [1.0, 2.0]  # finite ones only
    assert resample([1.0], 0) == []


def test_spark_levels_scale_each_series_to_its_own_range() -> None:
    assert spark_levels([], 8, 8) == ()
    assert spark_levels([0.0, 0.5, 1.0], 8, 8) == (0, 4, 7)  # 3.5 rounds to even
    assert spark_levels([10.0, 20.0], 8, 8) == spark_levels([0.1, 0.2], 8, 8) == (0, 7)
    assert spark_levels([3.0, 2.0, 1.0], 8, 8) == (7, 4, 0)  # a falling loss
    # flat (or a single value): the middle, "no change"
    assert spark_levels([0.4213] * 5, 8, 8) == (4,) * 5
    assert spark_levels([2.0], 8, 8) == (4,)
    assert spark_levels([1e9, 1e9 + 1e-6], 8, 8) == (4, 4)  # below float noise: flat
    assert spark_levels([1.0, 2.0], 8, 1) == (0, 0)
    assert spark_levels([1.0, 2.0], 8, 0) == ()
    assert len(spark_levels(list(range(64)), 8, 8)) == 8


@pytest.mark.parametrize(
    ("done", "total", "width", "cells"),
    [
        (0, 5, 5, 0),
        (3, 5, 5, 3),
        (5, 5, 5, 5),
        (7, 5, 5, 5),  # past the expected count: full, never wider
        (19, 20, 5, 4),  # full only when done
        (1, 20, 5, 0),
        (3, None, 5, 0),
        (3, 0, 5, 0),
        (3, 5, 0, 0),
    ],
)
def test_bar_cells(done, total, width, cells) -> None:
    assert bar_cells(done, total, width) == cells
