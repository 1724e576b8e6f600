"""The one validating layer: every file raytop reads and every value it takes from the
cluster's KV store is untrusted input (issue 8).

A file on shared storage may be torn, truncated, of another Ray version, or written by
anyone; a KV value may come from another raytop version or from a buggy probe. Each
validator here takes the parsed JSON and returns the value in the shape raytop's readers
rely on, or raises ``Invalid`` whose message says where (``trial_data[3]``, ``ranks.2.pid``)
and what was wrong; the reader prefixes the file's name or the KV key and turns it into a
one-line warning, keeping its last good copy. ``parse`` refuses bytes over a size cap
before parsing them, so a huge or hostile file cannot exhaust memory.

This module is the layer's core (``Invalid``, the size and count caps, ``parse``,
``problem``, the checks every validator is built from) and the validators of raytop's own
small files: the trial table (``trials/``'s segments, or an older raytop's trials.json),
experiments.json, driver.json, cluster.json. The validators of the cluster's KV values
are in ``untrusted_kv``, those of the files Ray Tune and Ray Train write in
``untrusted_ray_files``; all three share these checks and caps, so every message reads the
same.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import json
import math
from typing import Any, BinaryIO

from raytop.model.progress import MAX_METRIC_HISTORY
from raytop.model.snapshot import MAX_SCHEDULER_DECISION
from raytop.model.untrusted_depth import cut_deep, depth_over

MiB = 1024 * 1024

# Size caps, in bytes, per kind of input. A file or value above its cap is refused with a
# warning instead of being parsed. Each is far above what a real run writes:
# Any file read from storage (sources.storage's default): Tune's experiment_state-*.json
# is the largest, ~2 KiB per trial.
MAX_STATE_BYTES = 256 * MiB
MAX_RECORD_BYTES = 1 * MiB  # driver.json, cluster.json, job.json, exit.json
MAX_REGISTRY_BYTES = 16 * MiB  # $RAYTOP_HOME/experiments.json
MAX_LEDGER_INDEX_BYTES = 4 * MiB  # KV ledger/index
MAX_LEDGER_PAGE_BYTES = 16 * MiB  # KV ledger/page/<key> (one attempt, all its ranks)
MAX_KV_VALUE_BYTES = 1 * MiB  # any other KV value (trial/<actor id> registrations)
# Nesting: raytop's own files are a few levels deep, Ray's state and snapshot files under
# ten, a trial's config or metrics what the user nests; Tune's state rows are JSON strings
# inside JSON, each parsed (and capped) on its own.
MAX_DEPTH = 64

# Count caps (the planner's own bounds: 100,000 trials, 10,000 workers per trial).
MAX_TRIALS = 100_000  # the planner's bound on a sweep
MAX_RANKS = 10_000
MAX_LEDGER_PAGES = 20_480  # keys; the ledger holds <= 16,384 ranks (~770 chunks of 32)
MAX_REGISTERED = 100_000  # experiments.json entries
MAX_RECORDS = 100_000  # upload / sync records of one rank


class Invalid(ValueError):
    """A value of the wrong shape (or size); the message names where and what."""


class Refused(Invalid):
    """Input refused unread: over its size cap, or not a regular file (re-reading will not
    help)."""


class TooDeep(Refused):
    """JSON nested deeper than ``MAX_DEPTH`` levels: refused, not retried (it is not torn).
    Python's json may parse a 100,000-deep array and the recursion blows up later, in
    whatever walks it (a comparison, ``json.dumps`` of a snapshot): so the depth is checked
    here, on the bytes, before anything else sees the value."""


def kind(value: Any) -> str:
    """A value's JSON kind, for messages: 'a dict', 'a list', 'a string'…"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a dict"
    return type(value).__name__


def _size(n: int) -> str:
    return f"{n:,} bytes" + (f" ({n / MiB:.1f} MiB)" if n >= MiB else "")


def check_size(n: int, max_bytes: int) -> None:
    if n > max_bytes:
        raise Refused(f"{_size(n)}, over the {_size(max_bytes)} cap: not read")


def read_upto(f: BinaryIO, size: int, max_bytes: int) -> bytes:
    """A file's bytes, at most ``max_bytes + 1`` of them (a caller's ``check_size`` then
    refuses one past the cap), read into a buffer of its ``size`` (its ``fstat``'s) and
    on past it only if it grew since. ``f.read(max_bytes + 1)`` allocated a buffer of the
    cap at every read: 256 MB for a state file, ~25 µs a read, and a watching raytop
    reads hundreds of files again every few seconds."""
    raw = f.read(min(size, max_bytes) + 1)
    if len(raw) > size and len(raw) <= max_bytes:
        raw += f.read(max_bytes + 1 - len(raw))
    return raw


def parse(raw: bytes | str, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON in ``raw``; ``Refused`` above ``max_bytes``, ``TooDeep`` nested over
    ``max_depth`` levels, ``ValueError`` if it does not parse (torn, binary)."""
    check_size(len(raw), max_bytes)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise TooDeep(_too_deep(max_depth)) from None
    if isinstance(data, (dict, list)) and depth_over(raw, max_depth):
        raise TooDeep(_too_deep(max_depth))
    return data


def _too_deep(max_depth: int) -> str:
    return f"nested too deep (over {max_depth} levels): not read"


def problem(label: str, exc: BaseException) -> str:
    """The one-line warning for input ``label`` (a file's name or a KV key)."""
    if isinstance(exc, Invalid):
        return f"{label}: {exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"{label}: not text (binary bytes?)"
    return f"{label}: not valid JSON ({_first_line(exc)})"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


# -- the checks every validator is built from ---------------------------------------------


def at(where: str, key: str | int) -> str:
    """Where ``key`` of the value at ``where`` is, for messages: ``ranks.2.pid``, ``trials[3]``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def is_finite_number(value: Any) -> bool:
    """A number (not a bool) whose float is finite. JSON allows integers of any size, and
    ``math.isfinite`` raises OverflowError (not a ValueError) on one too large for a
    float: such a value is simply not a finite number here."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def fail(where: str, expected: str, value: Any) -> Invalid:
    """The error for a value of the wrong kind at ``where`` (raised by the caller)."""
    return Invalid(f"{where or 'top level'}: expected {expected}, got {kind(value)}")


def obj(value: Any, where: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, "a dict", value)
    return value


def seq(value: Any, where: str, max_len: int) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, "a list", value)
    if len(value) > max_len:
        raise Invalid(f"{where}: {len(value)} entries, over the cap of {max_len}")
    return value


def text(d: dict[str, Any], key: str, where: str = "", *, optional: bool = False,
         nonempty: bool = False) -> str | None:  # fmt: skip
    """``d[key]`` as a string (absent or null only when ``optional``)."""
    value = d.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise fail(at(where, key), "a string", value) if key in d else _missing(where, key)
    if nonempty and not value:
        raise Invalid(f"{at(where, key)}: expected a non-empty string")
    return value


def integer(d: dict[str, Any], key: str, where: str = "", *, default: int | None = None,
            optional: bool = False, minimum: int | None = 0,
            maximum: int | None = None) -> int | None:  # fmt: skip
    """``d[key]`` as an int (a float with no fraction is accepted: JSON has one number)."""
    value = d.get(key)
    if value is None:
        if optional:
            return None
        if default is not None:
            return default
        raise _missing(where, key)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(at(where, key), "an integer", value)
    if minimum is not None and value < minimum:
        raise Invalid(f"{at(where, key)}: {value} is below {minimum}")
    if maximum is not None and value > maximum:
        raise Invalid(f"{at(where, key)}: {value} is over the cap of {maximum}")
    return value


def number(d: dict[str, Any], key: str, where: str = "", *,
           optional: bool = False) -> float | None:  # fmt: skip
    """``d[key]`` as a finite number."""
    value = d.get(key)
    if value is None:
        if optional:
            return None
        raise _missing(where, key)
    if not is_finite_number(value):
        raise fail(at(where, key), "a finite number", value)
    return float(value)


def flag(d: dict[str, Any], key: str, where: str = "") -> bool:
    value = d.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise fail(at(where, key), "true or false", value)
    return value


def _missing(where: str, key: str) -> Invalid:
    return Invalid(f"{where or 'top level'}: missing key '{key}'")


# -- .raytop/trials.json (probe.trial_probe) ----------------------------------------------------


def probe_trial(row: Any, where: str) -> dict[str, Any]:
    """One row of the TrialProbe's table → the keyword arguments of ``model.Trial`` (keys
    another raytop version may add are dropped)."""
    row = obj(row, where)
    config = cut_deep(obj(row.get("config") or {}, at(where, "config")))
    metrics = cut_deep(obj(row.get("metrics") or {}, at(where, "metrics")))
    return {
        "trial_id": text(row, "trial_id", where, nonempty=True),
        "status": text(row, "status", where),
        "config": config,
        "metrics": metrics,
        "num_failures": integer(row, "num_failures", where, default=0),
        "iterations": integer(row, "iterations", where, default=0),
        "elapsed_s": number(row, "elapsed_s", where, optional=True),
        "error": text(row, "error", where, optional=True),
        "pending_reason": text(row, "pending_reason", where, optional=True),
        "metric_history": _metric_history(row, at(where, "metric_history")),
        "max_iterations": integer(row, "max_iterations", where, optional=True, minimum=1),
        "scheduler_decision": _scheduler_decision(row, where),
        "max_failures": integer(row, "max_failures", where, optional=True, minimum=-1),
    }


def _scheduler_decision(row: dict[str, Any], where: str) -> str | None:
    """Why the scheduler stopped or paused the trial: absent or null is none; else one
    line of at most ``MAX_SCHEDULER_DECISION`` characters (anything else is a bad row)."""
    value = text(row, "scheduler_decision", where, optional=True)
    if value is None:
        return None
    if len(value) > MAX_SCHEDULER_DECISION or any(c in value for c in "\r\n"):
        raise fail(
            at(where, "scheduler_decision"),
            f"one line of at most {MAX_SCHEDULER_DECISION} characters",
            value[:80],
        )
    return value


def _metric_history(row: dict[str, Any], where: str) -> tuple[float, ...]:
    """The metric's last values: absent or null is none; else a list of at most
    ``MAX_METRIC_HISTORY`` finite numbers (anything else is a bad row)."""
    value = row.get("metric_history")
    if value is None:
        return ()
    values = seq(value, where, MAX_METRIC_HISTORY)
    for i, v in enumerate(values):
        if not is_finite_number(v):
            raise fail(at(where, i), "a finite number", v)
    return tuple(float(v) for v in values)


def probe_trials(
    data: Any, known: dict[str, tuple[Any, dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """``{"updated_at", "trials": [row…]}``. The probe writes the table whole (atomic
    rename), so one bad row makes the file bad: its last good copy is kept.

    ``known`` (trial id → (row as read, row as checked)), kept by a reader from one read
    to the next: a row equal to the one checked last time is not checked again (the probe
    rewrites all 10,000 rows of a sweep when one trial reports; checking them all took
    ~75 ms, comparing them ~5 ms). Once the whole table is good it holds this table's rows."""
    table = obj(data)
    rows = seq(table.get("trials") or [], "trials", MAX_TRIALS)
    if known is None:
        return [probe_trial(row, f"trials[{i}]") for i, row in enumerate(rows)]
    checked, seen = [], {}
    for i, row in enumerate(rows):
        trial_id = row.get("trial_id") if isinstance(row, dict) else None
        before = known.get(trial_id) if isinstance(trial_id, str) else None
        good = before[1] if before is not None and before[0] == row else None
        if good is None:
            good = probe_trial(row, f"trials[{i}]")
        seen[good["trial_id"]] = (row, good)
        checked.append(good)
    known.clear()
    known.update(seen)
    return checked


# -- $RAYTOP_HOME/experiments.json (home) -------------------------------------------------------


def registered_experiment(entry: Any, where: str) -> dict[str, str]:
    entry = obj(entry, where)
    return {key: text(entry, key, where, nonempty=True) for key in ("name", "path", "raytop_dir")}


def registry(data: Any) -> list[Any]:
    """The list itself; each entry is checked on its own (``registered_experiment``)."""
    return seq(data, "top level", MAX_REGISTERED)


# -- raytop's own records (for rundir / cluster: driver.json, cluster.json) ------------------


def _process_record(
    data: Any, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, Any]:
    """A record of a process raytop started: its pid, the start time that proves a live pid
    is still that process, its string fields (``required`` ones, then ``optional`` ones)
    and when it started. One check for driver.json and cluster.json, which differ only in
    their string fields."""
    record = obj(data)
    integer(record, "pid", minimum=1)
    number(record, "pid_create_time", optional=True)
    text(record, "pid_boot_id", optional=True)  # with the start ticks: process_identity
    integer(record, "pid_start_ticks", optional=True)
    for key in required:
        text(record, key)
    for key in optional:
        text(record, key, optional=True)
    number(record, "started_at", optional=True)
    return record


def driver_record(data: Any) -> dict[str, Any]:
    """``.raytop/driver.json`` (launch.launcher): a pid, and what proves it is that driver."""
    optional = ("host", "spec", "address", "experiment_name", "experiment_path", "metric", "mode")
    return _process_record(data, required=(), optional=optional)


def trials_total(record: dict[str, Any]) -> int | None:
    """``driver.json``'s ``trials_total``: the trials a raytop-launched sweep will have in
    all (at least 1, at most ``MAX_TRIALS``); None when the record has none (a launch by
    an older raytop). Checked apart from the record: a bad one costs only this figure."""
    return integer(record, "trials_total", "driver.json", optional=True, minimum=1,
                   maximum=MAX_TRIALS)  # fmt: skip


def cluster_record(data: Any) -> dict[str, Any]:
    """``$RAYTOP_HOME/cluster.json`` (launch.cluster): the embedded cluster raytop started."""
    return _process_record(data, required=("address",), optional=("log",))
