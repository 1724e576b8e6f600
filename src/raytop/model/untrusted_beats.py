"""``ledger/beat/<run_id>.<attempt_id>[~<chunk>]``: each rank's heartbeat figures as the
Ledger publishes them (``model.records.RankBeat``), checked as every value from the
cluster is (``model.untrusted``).

Every rank beats once a second, so a refresh after the Ledger's publish checks every
rank's beat again: 2,000 of them at the largest runs measured. A beat equal to the one
its rank had when the chunk was last read keeps the beat checked then (``before``): the
ranks' beats arrive one by one over the second, and the Ledger re-sends a chunk's every
beat when one of them moved. Most beats are plain (each
figure null, or a float or int of its own type, in range), and a plain one is checked in
one pass with no message made (``_plain``); any other goes through the check field by
field (``_checked``), which names what is wrong. Both give the same beat, or the same
error: a property test holds them to it.
"""

from __future__ import annotations

from typing import Any

from raytop.model.records import RankBeat
from raytop.model.untrusted import Invalid, integer, number, obj
from raytop.model.untrusted_activity import activity_record
from raytop.model.untrusted_kv import rank_keys

MAX_STEP_RATE = 1e6  # optimizer steps a second: no optimizer steps faster
# The figures of a beat that are numbers (a float, or an int made one) and integers.
NUMBERS = ("received_at", "cpu_percent", "step_rate", "gpu_util_percent")
INTEGERS = ("rss_bytes", "gpu_memory_bytes", "gpu_memory_used_bytes", "optimizer_steps")
# The largest int a float holds exactly: past it (or past a float's range) the checked path.
EXACT_INT = 2**53
# Each number's range, when it has one (step_rate, gpu_util_percent).
RANGES = {"step_rate": (0.0, MAX_STEP_RATE), "gpu_util_percent": (0.0, 100.0)}


# A chunk as last read: its ranks' beats as parsed, and the beats checked from them.
Before = tuple[dict[str, Any], dict[str, RankBeat]]


def ledger_beats(data: Any, before: Before | None = None) -> dict[str, RankBeat]:
    """``{"ranks": {rank: beat}}``: the heartbeat figures (``RankBeat``) of each rank of
    the chunk (or of the attempt, from a Ledger before beats came in chunks). With
    ``before``, a rank whose beat equals (``==``) the one parsed then keeps the beat
    checked then, the very object (what is made of it downstream is kept too): the
    check is a function of the beat, so what is shown is still a checked beat. Python's
    ``==`` takes 1, 1.0 and true as one value, which the check may not: a beat that
    changed only so shows its rank's last checked figures, not a warning."""
    ranks = obj(obj(data).get("ranks") or {}, "ranks")
    rank_keys(ranks)
    parsed, checked = before if before is not None else ({}, {})
    beats = {}
    for key, beat in ranks.items():
        kept = checked.get(key)
        if kept is not None and parsed.get(key) == beat:
            beats[key] = kept
            continue
        made = _plain(beat) if type(beat) is dict else None
        beats[key] = made if made is not None else _checked(beat, f"ranks.{key}")
    return beats


def _plain(raw: dict[str, Any]) -> RankBeat | None:
    """``_checked(raw)`` for a beat whose every figure is null or of its exact type, finite
    and in range; None for any other (``_checked`` says what is wrong with it, or takes
    what only it accepts: a bool is refused there, an integral float taken as an int)."""
    got = raw.get
    figures: dict[str, Any] = {}
    for name in NUMBERS:
        value = got(name)
        kind = type(value)
        if kind is float:
            if value - value != 0.0:  # NaN or an infinity
                return None
        elif kind is int:
            if not -EXACT_INT <= value <= EXACT_INT:
                return None
            value = float(value)
        elif value is not None:
            return None
        if value is not None and name in RANGES:
            low, high = RANGES[name]
            if not low <= value <= high:
                return None
        figures[name] = value
    for name in INTEGERS:
        value = got(name)
        if value is not None and type(value) is not int:
            return None
        figures[name] = value
    return RankBeat(
        received_at=figures["received_at"], cpu_percent=figures["cpu_percent"],
        rss_bytes=figures["rss_bytes"], gpu_memory_bytes=figures["gpu_memory_bytes"],
        activity=activity_record(got("activity")),
        gpu_util_percent=figures["gpu_util_percent"],
        gpu_memory_used_bytes=figures["gpu_memory_used_bytes"],
        optimizer_steps=figures["optimizer_steps"], step_rate=figures["step_rate"],
    )  # fmt: skip


def _checked(beat: Any, where: str) -> RankBeat:
    """One rank's beat, field by field: ``Invalid`` naming the first field that is wrong."""
    raw = obj(beat, where)
    received_at, cpu_percent = (
        number(raw, k, where, optional=True) for k in ("received_at", "cpu_percent")
    )
    rss_bytes, gpu_memory_bytes, gpu_memory_used_bytes, optimizer_steps = (
        integer(raw, k, where, optional=True, minimum=None) for k in INTEGERS
    )
    step_rate = number(raw, "step_rate", where, optional=True)
    if step_rate is not None and not 0.0 <= step_rate <= MAX_STEP_RATE:
        raise Invalid(f"{where}.step_rate: {step_rate} is not a step rate")
    gpu_util_percent = number(raw, "gpu_util_percent", where, optional=True)
    if gpu_util_percent is not None and not 0.0 <= gpu_util_percent <= 100.0:
        raise Invalid(f"{where}.gpu_util_percent: {gpu_util_percent} is not a percent")
    return RankBeat(
        received_at=received_at, cpu_percent=cpu_percent, rss_bytes=rss_bytes,
        gpu_memory_bytes=gpu_memory_bytes, activity=activity_record(raw.get("activity")),
        gpu_util_percent=gpu_util_percent, gpu_memory_used_bytes=gpu_memory_used_bytes,
        optimizer_steps=optimizer_steps, step_rate=step_rate,
    )  # fmt: skip


__all__ = ["MAX_STEP_RATE", "Before", "ledger_beats"]
