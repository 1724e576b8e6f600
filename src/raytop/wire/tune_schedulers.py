"""What a Tune trial scheduler weighed when it decided: read from its internals.

Tune tells callbacks a trial ended or paused, never why. The scheduler knows: ASHA the
rung's cutoff, the median stopping rule the median it compared against. Those numbers live
in private attributes of Ray's schedulers (verified on the supported lines), so they are
read only here, after ``check_ray_version`` and once this Ray is known to have the methods
they call (``wire.capabilities``: ``ASHA_RUNG``, ``MEDIAN_COMPARISON``); each reader returns
``None`` when Ray lacks them or the attributes are not what it expects, and the caller then
words the decision without them. Where the lines differ (the median Ray compares), the
code path is chosen by what this Ray has (``MEDIAN_RESULT``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from raytop.wire import capabilities as caps
from raytop.wire.version import check_ray_version


@dataclass(frozen=True)
class Rung:
    """The ASHA rung a result lands on: its milestone and the cutoff (in the mode-adjusted
    score ASHA compares: higher is better) before this result is recorded."""

    milestone: float
    cutoff: float | None


@dataclass(frozen=True)
class MedianComparison:
    best: float  # the trial's best metric value so far
    median: float  # the median of the other trials' running means up to now
    others: int  # how many trials the median is over


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def asha_rung(scheduler: Any, trial_id: str, now: float) -> Rung | None:
    """The rung of ``trial_id``'s bracket that a result at time ``now`` is judged on (as
    ``_Bracket.on_result`` picks it: the highest milestone reached and not yet recorded
    for the trial), read before the scheduler records it; ``None`` if it lands on none."""
    try:
        check_ray_version()
        if caps.first_lack(caps.ASHA_RUNG) is not None:
            return None
        bracket = scheduler._trial_info[trial_id]
        for milestone, recorded in bracket._rungs:
            if now < milestone or trial_id in recorded:
                continue
            cutoff = bracket.cutoff(recorded) if recorded else None
            return Rung(float(milestone), _finite(cutoff) if cutoff is not None else None)
    except Exception:
        return None
    return None


def median_comparison(scheduler: Any, trial: Any, now: float) -> MedianComparison | None:
    """What the median stopping rule compared at ``now``, after it decided (its results
    then include this one): the trial's best value and the others' median."""
    try:
        check_ray_version()
        if caps.first_lack(caps.MEDIAN_COMPARISON) is not None:
            return None
        others = [t for t in scheduler._trials_beyond_time(now) if t is not trial]
        best = _finite(scheduler._best_result(trial))
        if caps.has(caps.MEDIAN_RESULT):  # Ray 2.58, 2.59: the median of every running mean
            median = _finite(scheduler._median_result(others, now)) if others else None
            count = len(others)
        else:  # Ray 2.60 drops NaN and inf, and takes the median of the finite ones
            means = [m for m in (_finite(scheduler._running_mean(t, now)) for t in others)
                     if m is not None]  # fmt: skip
            median, count = (statistics.median(means) if means else None), len(means)
    except Exception:
        return None
    if median is None or best is None:
        return None
    return MedianComparison(best=best, median=median, others=count)


def pbt_quantile_fraction(scheduler: Any) -> float | None:
    try:
        return _finite(scheduler._quantile_fraction)
    except Exception:
        return None
