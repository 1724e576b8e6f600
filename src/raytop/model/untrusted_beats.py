"""``ledger/beat/<run_id>.<attempt_id>[~<chunk>]``: each rank's heartbeat figures as the
Ledger publishes them (``model.records.RankBeat``), checked as every value from the
cluster is (``model.untrusted``).

Every rank beats once a second, so a refresh after the Ledger's publish checks every
rank's beat again: 2,000 of them at the largest runs measured. The Ledger stamps each
beat it receives with the time it did (``received_at``), and re-sends a chunk's every
beat when one of them moved: a rank's beat stamped as the one checked at the chunk's last
read (``before``) is that very beat, and keeps the beat checked then. Most beats are plain
(each figure null, or a float or int of its own type, in range), and a plain one is
checked in one pass with no message made (``_plain``); any other goes through the check
field by field (``_checked``), which names what is wrong. Both give the same beat, or the
same error: a property test holds them to it.
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


def ledger_beats(data: Any, before: dict[str, RankBeat] | None = None) -> dict[str, RankBeat]:
    """``{"ranks": {rank: beat}}``: the heartbeat figures (``RankBeat``) of each rank of
    the chunk (or of the attempt, from a Ledger before beats came in chunks). With
    ``before`` (the chunk's beats as checked at its last read), a rank whose beat carries
    the stamp (``received_at``, a float) of its beat then keeps that beat, the very
    object (what is made of it downstream is kept too): the Ledger stamps each beat it
    receives. A Ledger that re-sent another beat under the same stamp would show the
    rank's last checked figures, never unchecked ones. (Kept by comparing each beat as
    parsed, the reader held every beat as parsed too: ~2 KB a rank.)"""
    ranks = obj(obj(data).get("ranks") or {}, "ranks")
    rank_keys(ranks)
    before = before or {}
    beats = {}
    for key, beat in ranks.items():
        if type(beat) is dict:
            kept = before.get(key)
            stamp = beat.get("received_at")
            if kept is not None and type(stamp) is float and kept["received_at"] == stamp:
                beats[key] = kept
                continue
            made = _plain(beat)
        else:
            made = None
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


__all__ = ["MAX_STEP_RATE", "ledger_beats"]
