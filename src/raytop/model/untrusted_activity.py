"""A rank's activity record as its probe sent it (``model.records.Activity``): where its
train loop is, and where its time went. Optional in the rank's heartbeat, so a value of
the wrong shape drops the field (or only its time shares), never the rank."""

from __future__ import annotations

from typing import Any

from raytop.model.records import SHARE_KINDS, Activity
from raytop.model.untrusted import is_finite_number as _finite

ACTIVITY_KINDS = frozenset({"collective", "backward", "data_loader", "io", "report", "user"})
MAX_WHERE = 200


def activity_record(value: Any) -> Activity | None:
    """Where the rank's train loop is: optional, so a value of the wrong shape (an
    unknown kind, a time that is not finite, a fraction outside 0..1) drops the field,
    never the rank; ``where`` is cut to ``MAX_WHERE`` characters."""
    if not isinstance(value, dict) or value.get("kind") not in ACTIVITY_KINDS:
        return None
    where, samples, waiting = value.get("where"), value.get("samples"), value.get("waiting")
    since, sampled_at = value.get("since"), value.get("sampled_at")
    if not isinstance(where, str) or not (_finite(since) and _finite(sampled_at)):
        return None
    if isinstance(samples, bool) or not isinstance(samples, int) or not 0 <= samples <= 10_000:
        return None
    if not _finite(waiting) or not 0.0 <= waiting <= 1.0:
        return None
    activity = Activity(kind=value["kind"], where=where[:MAX_WHERE], since=float(since),
                        sampled_at=float(sampled_at), samples=samples,
                        waiting=float(waiting))  # fmt: skip
    for key in ("time_s", "recent_time_s"):
        seconds = _seconds_by_kind(value.get(key))
        if seconds is not None:
            activity[key] = seconds  # type: ignore[literal-required]
    startup = value.get("startup_s")
    if _finite(startup) and 0.0 <= startup <= MAX_SHARE_S:
        activity["startup_s"] = float(startup)
    return activity


MAX_SHARE_S = 1e8  # seconds in one kind: over three years of one attempt


_KINDS = frozenset(SHARE_KINDS)


def _seconds_by_kind(value: Any) -> dict[str, float] | None:
    """``time_s`` / ``recent_time_s``: kind (``SHARE_KINDS``) → seconds; a value of another
    shape drops the field (the rank and its activity stay). Checked by exact type, with
    no call per value: every rank's heartbeat carries two, 2,000 ranks a refresh (a NaN
    fails the range test, an infinity or an integer too large for a float is past it).
    The parsed JSON object is returned as it is when every value is a float: it is this
    read's own, and nothing changes it."""
    if not isinstance(value, dict) or not _KINDS.issuperset(value):
        return None
    ints = False
    for v in value.values():
        kind = type(v)
        if kind is int:  # not a bool
            ints = True
        elif kind is not float:
            return None
        if not 0 <= v <= MAX_SHARE_S:
            return None
    # All floats (as the probe sends them): the parsed value itself, no copy made.
    return {k: float(v) for k, v in value.items()} if ints else value


__all__ = ["ACTIVITY_KINDS", "MAX_SHARE_S", "activity_record"]
