"""Where the ranks' time goes, as shares: each rank's seconds per kind of work (its probe
samples them, ``probe.time_shares``) made fractions, and a run's made from the sum of its
ranks' seconds (every rank's second weighs the same, whatever its rank).

``goodput`` is the run's share of rank time spent computing: the user's own code and the
backward pass, not waiting for data, for each other, for storage or for Train.
"""

from __future__ import annotations

from collections.abc import Iterable

from raytop.model.records import SHARE_KINDS

# Fewer seconds sampled than this tell no share: a rank that just started.
MIN_SAMPLED_S = 2.0
REPORT_PARTS = ("report_barrier", "report_upload", "report_wait", "report_other")
# How each kind is named where a person reads it.
SHARE_LABELS = {
    "compute": "compute", "data_loader": "data loading", "collective": "collectives",
    "io": "other I/O", "report_barrier": "report barrier", "report_upload": "checkpoint upload",
    "report_wait": "controller wait", "report_other": "train.report",
}  # fmt: skip


def shares(seconds: dict[str, float]) -> dict[str, float] | None:
    """kind → fraction of the time sampled, every kind of ``SHARE_KINDS`` present (summing
    to 1); None when under ``MIN_SAMPLED_S`` was sampled."""
    total = sum(seconds.values())
    if total < MIN_SAMPLED_S:
        return None
    return {kind: round(seconds.get(kind, 0.0) / total, 4) for kind in SHARE_KINDS}


def summed(each: Iterable[dict[str, float]]) -> dict[str, float]:
    """The seconds of several ranks, kind by kind."""
    total = dict.fromkeys(SHARE_KINDS, 0.0)
    for seconds in each:
        for kind, value in seconds.items():
            if kind in total:
                total[kind] += value
    return total


def report_share(fractions: dict[str, float]) -> float:
    """The share in ``train.report``, all its parts together."""
    return sum(fractions.get(part, 0.0) for part in REPORT_PARTS)


__all__ = ["MIN_SAMPLED_S", "REPORT_PARTS", "SHARE_LABELS", "report_share", "shares", "summed"]
