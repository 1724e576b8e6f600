"""What a Tune trial scheduler weighed when it decided: read from its internals.

Tune tells callbacks a trial ended or paused, never why. The scheduler knows: ASHA the
rung's cutoff, the median stopping rule the median it compared against. Those numbers live
in private attributes of Ray's schedulers (verified on the ``VERIFIED_RAY_LINE``), so they
are read only here, after ``check_ray_version``; each reader returns ``None`` when the
attributes are not what it expects, and the caller then words the decision without them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

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
        others = [t for t in scheduler._trials_beyond_time(now) if t is not trial]
        # The median of the others' finite running means: what Ray 2.60 compares (it drops
        # NaN and inf, and has no ``_median_result``), and Ray 2.58 too when all are finite.
        means = [m for m in (_finite(scheduler._running_mean(t, now)) for t in others)
                 if m is not None]  # fmt: skip
        best = _finite(scheduler._best_result(trial))
    except Exception:
        return None
    if not means or best is None:
        return None
    return MedianComparison(best=best, median=statistics.median(means), others=len(means))


def pbt_quantile_fraction(scheduler: Any) -> float | None:
    try:
        return _finite(scheduler._quantile_fraction)
    except Exception:
        return None
