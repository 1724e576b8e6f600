"""How far a trial is, and the shape of its metric: plain values the faces draw.

``expected_iterations`` says how many results a trial will report when raytop can tell:
the stopper's ``training_iteration`` limit (``[tune] stop_iterations``) if the run has
one, else the convention of an integer ``epochs`` / ``num_epochs`` / ``max_epochs`` key in
the trial's config, as a TorchTrainer loop usually reports once per epoch. It is the
most the trial runs: a scheduler may end it sooner, and a loop that reports more often
than once an epoch goes past it (the faces then show a full bar and ``7/5``).

``spark_levels`` scales a metric's recent values to the levels of a sparkline, each
series on its own scale (its shape, not its size, is what a row shows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MAX_METRIC_HISTORY = 64  # the values of a trial's metric the probe keeps, oldest first
EPOCH_KEYS = ("epochs", "num_epochs", "max_epochs")  # checked in this order


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def expected_iterations(config: Mapping[str, Any] | None, stop_limit: int | None) -> int | None:
    """The iterations a trial will run, when known: ``stop_limit`` (the stopper's
    ``training_iteration`` limit) if it is a positive int, else the first positive integer
    among the config's ``epochs``, ``num_epochs``, ``max_epochs``; ``None`` otherwise."""
    limit = _positive_int(stop_limit)
    if limit is not None:
        return limit
    for key in EPOCH_KEYS:
        epochs = _positive_int((config or {}).get(key))
        if epochs is not None:
            return epochs
    return None


def _finite(values: Sequence[float]) -> list[float]:
    kept = []
    for v in values:
        if isinstance(v, (int, float)):
            try:
                if math.isfinite(v):  # an int too large for a float raises OverflowError
                    kept.append(float(v))
            except OverflowError:
                continue
    return kept


def resample(values: Sequence[float], width: int) -> list[float]:
    """At most ``width`` points of ``values`` (finite ones, oldest first): all of them
    when they fit, else the means of ``width`` consecutive runs of nearly equal length, so
    the whole history is drawn, not only its tail."""
    points = _finite(values)
    if width <= 0:
        return []
    if len(points) <= width:
        return points
    out = []
    for i in range(width):
        start, end = i * len(points) // width, (i + 1) * len(points) // width
        run = points[start:end]
        out.append(sum(run) / len(run))
    return out


def spark_levels(values: Sequence[float], width: int, levels: int) -> tuple[int, ...]:
    """The level (``0`` lowest .. ``levels - 1``) of each point of ``resample(values,
    width)``, from the series' own minimum to its maximum. A flat series (or a single
    value) sits in the middle: it says "no change", not "lowest"."""
    points = resample(values, width)
    if not points or levels <= 0:
        return ()
    low, high = min(points), max(points)
    if high - low <= 1e-12 * max(1.0, abs(high), abs(low)):
        return (levels // 2,) * len(points) if levels > 1 else (0,) * len(points)
    top = levels - 1
    return tuple(min(top, max(0, round((p - low) / (high - low) * top))) for p in points)


def bar_cells(done: int, total: int | None, width: int) -> int:
    """How many of ``width`` cells a progress bar fills for ``done`` of ``total``: full
    only when done, never more than ``width`` (a trial past its expected count)."""
    if total is None or total <= 0 or width <= 0:
        return 0
    if done >= total:
        return width
    return max(0, min(width - 1, done * width // total))
