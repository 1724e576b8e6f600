"""PyTorch's Flight Recorder dumps, read into small typed records.

A dump is one rank's ring buffer of collectives (torch 2.13, ``FlightRecorder.hpp``:
format ``version`` "2.10"): ``entries`` (each with ``record_id``, ``pg_id``,
``process_group`` = (name, description), ``collective_seq_id``, ``p2p_seq_id``,
``op_id``, ``profiling_name`` such as ``nccl:all_reduce``, ``state`` scheduled / started
/ completed, ``retired``, ``is_p2p``, sizes, times, ``frames``), ``pg_config`` (group name
→ ``{"name", "desc", "ranks": "[0, 1]"}``) and ``pg_status`` (pg id → the last
``last_enqueued_collective``, ``last_started_collective``, ``last_completed_collective``;
-1 when none). The pickled dump holds numbers; the JSON one (``_dump_fr_trace_json``)
holds ``pg_status`` values as strings and ``process_group`` as a list: both read here.

``parse_dump`` takes what ``untrusted_pickle.load_plain_pickle`` (or ``json``) built and
keeps only what the summary uses, checked and capped; ``Invalid`` names what was wrong.
The judgement (who is missing) is ``diagnose.collectives``, into the records of
``model.collectives``. Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raytop.model.untrusted import Invalid, at, fail, obj, seq

__all__ = ["Collective", "GroupStatus", "RankDump", "parse_dump"]

MAX_ENTRIES = 100_000  # torch keeps 2,000 by default (TORCH_NCCL_TRACE_BUFFER_SIZE)
MAX_GROUPS = 10_000
MAX_NAME_CHARS = 200
STATES = ("scheduled", "started", "completed")


@dataclass(frozen=True)
class Collective:
    """One entry of a rank's ring buffer (what the summary needs of it)."""

    record_id: int
    pg_id: int
    pg_name: str
    pg_desc: str
    collective_seq_id: int
    p2p_seq_id: int
    is_p2p: bool
    profiling_name: str
    state: str  # scheduled, started, completed
    retired: bool


@dataclass(frozen=True)
class GroupStatus:
    """``pg_status`` of one process group on one rank: the sequence number of the last
    collective it enqueued, saw start, saw complete (None: none, torch's -1)."""

    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass(frozen=True)
class RankDump:
    rank: int
    version: str
    entries: tuple[Collective, ...]
    status: dict[int, GroupStatus]  # by pg id
    members: dict[str, tuple[int, ...]]  # group name → its global ranks (pg_config)


def _int(value: Any, where: str, *, optional: bool = False) -> int | None:
    """An int, or a string of one (the JSON dump's pg_status); -1 (torch's none) is None
    when ``optional``."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 30:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if optional and value is None:
            return None
        raise fail(where, "an integer", value)
    if optional and value < 0:
        return None
    if value < 0:
        raise Invalid(f"{where}: {value} is below 0")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise fail(where, "a string", value)
    return value[:MAX_NAME_CHARS]


def _entry(raw: Any, where: str) -> Collective:
    e = obj(raw, where)
    group = e.get("process_group")
    if not isinstance(group, (list, tuple)) or len(group) != 2:
        raise fail(at(where, "process_group"), "a (name, description) pair", group)
    state = _str(e.get("state"), at(where, "state"))
    if state not in STATES:
        raise Invalid(f"{at(where, 'state')}: {state!r} is not one of {', '.join(STATES)}")
    return Collective(
        record_id=_int(e.get("record_id"), at(where, "record_id")),
        pg_id=_int(e.get("pg_id"), at(where, "pg_id")),
        pg_name=_str(group[0], at(where, "process_group[0]")),
        pg_desc=_str(group[1], at(where, "process_group[1]")),
        collective_seq_id=_int(e.get("collective_seq_id"), at(where, "collective_seq_id")),
        p2p_seq_id=_int(e.get("p2p_seq_id", 0), at(where, "p2p_seq_id")),
        is_p2p=e.get("is_p2p") is True,
        profiling_name=_str(e.get("profiling_name", ""), at(where, "profiling_name")),
        state=state,
        retired=e.get("retired") is True,
    )  # type: ignore[arg-type]


def _members(raw: Any) -> tuple[int, ...]:
    """``"[0, 1, 3]"`` (pg_config's ranks, a string in both formats) as ranks; an
    unreadable list is unknown (empty), never an error: membership is a hint."""
    if isinstance(raw, list):
        items = raw
    elif isinstance(raw, str) and len(raw) < 1_000_000:
        items = [p.strip() for p in raw.strip().strip("[]").split(",") if p.strip()]
    else:
        return ()
    try:
        return tuple(sorted({int(r) for r in items if not isinstance(r, bool)}))
    except (TypeError, ValueError):
        return ()


def parse_dump(data: Any, rank: int, where: str = "") -> RankDump:
    """One rank's dump (a dict from the pickle or the JSON) as a ``RankDump``."""
    d = obj(data, where)
    version = d.get("version")
    if not isinstance(version, str):
        raise fail(at(where, "version"), "a string (the dump format's version)", version)
    entries = seq(d.get("entries") or [], at(where, "entries"), MAX_ENTRIES)
    status_raw = obj(d.get("pg_status") or {}, at(where, "pg_status"))
    if len(status_raw) > MAX_GROUPS:
        raise Invalid(f"{at(where, 'pg_status')}: over the cap of {MAX_GROUPS} groups")
    status = {}
    for key, value in status_raw.items():
        w = at(at(where, "pg_status"), str(key)[:40])
        s = obj(value, w)
        status[_int(key, w)] = GroupStatus(
            *(_int(s.get(k), at(w, k), optional=True)
              for k in ("last_enqueued_collective", "last_started_collective",
                        "last_completed_collective"))
        )  # fmt: skip
    config = d.get("pg_config") or {}
    members = {}
    if isinstance(config, dict) and len(config) <= MAX_GROUPS:
        for name, info in config.items():
            if isinstance(name, str) and isinstance(info, dict):
                ranks = _members(info.get("ranks"))
                if ranks:
                    members[name[:MAX_NAME_CHARS]] = ranks
    return RankDump(
        rank=rank,
        version=version[:40],
        entries=tuple(_entry(e, f"{at(where, 'entries')}[{i}]") for i, e in enumerate(entries)),
        status=status,
        members=members,
    )
