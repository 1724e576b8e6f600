"""The one validating layer: every file raytop reads and every value it takes from the
cluster's KV store is untrusted input (issue 8).

A file on shared storage may be torn, truncated, of another Ray version, or written by
anyone; a KV value may come from another raytop version or from a buggy probe. Each
validator here takes the parsed JSON and returns the value in the shape raytop's readers
rely on, or raises ``Invalid`` whose message says where (``trial_data[3]``, ``ranks.2.pid``)
and what was wrong; the reader prefixes the file's name or the KV key and turns it into a
one-line warning, keeping its last good copy. ``parse`` refuses bytes over a size cap
before parsing them, so a huge or hostile file cannot exhaust memory.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import json
import math
from typing import Any

from raytop.model.records import (
    BarrierWait,
    CheckpointUpload,
    LedgerIndex,
    LedgerPage,
    RankRecord,
)

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

# Count caps (the planner's own bounds: 100,000 trials, 10,000 workers per trial).
MAX_TRIALS = 100_000  # the planner's bound on a sweep
MAX_RANKS = 10_000
MAX_LEDGER_PAGES = 4_096  # the ledger keeps 256 (probe.ledger.MAX_PAGES)
MAX_REGISTERED = 100_000  # experiments.json entries
MAX_RECORDS = 100_000  # upload / sync records of one rank


class Invalid(ValueError):
    """A value of the wrong shape (or size); the message names where and what."""


class Refused(Invalid):
    """Input refused unread: over its size cap, or not a regular file (re-reading will not
    help)."""


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


def parse(raw: bytes | str, max_bytes: int) -> Any:
    """The JSON in ``raw``; ``Refused`` above ``max_bytes``, ``ValueError`` if it does not
    parse (torn, binary, nested too deep)."""
    check_size(len(raw), max_bytes)
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None


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


def _at(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _fail(where: str, expected: str, value: Any) -> Invalid:
    return Invalid(f"{where or 'top level'}: expected {expected}, got {kind(value)}")


def obj(value: Any, where: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, "a dict", value)
    return value


def seq(value: Any, where: str, max_len: int) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, "a list", value)
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
        raise _fail(_at(where, key), "a string", value) if key in d else _missing(where, key)
    if nonempty and not value:
        raise Invalid(f"{_at(where, key)}: expected a non-empty string")
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
        raise _fail(_at(where, key), "an integer", value)
    if minimum is not None and value < minimum:
        raise Invalid(f"{_at(where, key)}: {value} is below {minimum}")
    if maximum is not None and value > maximum:
        raise Invalid(f"{_at(where, key)}: {value} is over the cap of {maximum}")
    return value


def number(d: dict[str, Any], key: str, where: str = "", *,
           optional: bool = False) -> float | None:  # fmt: skip
    """``d[key]`` as a finite number."""
    value = d.get(key)
    if value is None:
        if optional:
            return None
        raise _missing(where, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(_at(where, key), "a finite number", value)
    return float(value)


def flag(d: dict[str, Any], key: str, where: str = "") -> bool:
    value = d.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _fail(_at(where, key), "true or false", value)
    return value


def _missing(where: str, key: str) -> Invalid:
    return Invalid(f"{where or 'top level'}: missing key '{key}'")


# -- .raytop/trials.json (probe.trial_probe) ----------------------------------------------------


def probe_trial(row: Any, where: str) -> dict[str, Any]:
    """One row of the TrialProbe's table → the keyword arguments of ``model.Trial`` (keys
    another raytop version may add are dropped)."""
    row = obj(row, where)
    config = obj(row.get("config") or {}, _at(where, "config"))
    metrics = obj(row.get("metrics") or {}, _at(where, "metrics"))
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
    }


def probe_trials(data: Any) -> list[dict[str, Any]]:
    """``{"updated_at", "trials": [row…]}``. The probe writes the table whole (atomic
    rename), so one bad row makes the file bad: its last good copy is kept."""
    table = obj(data)
    rows = seq(table.get("trials") or [], "trials", MAX_TRIALS)
    return [probe_trial(row, f"trials[{i}]") for i, row in enumerate(rows)]


# -- Tune's experiment_state-*.json (sources.tune_dir) ------------------------------------------
# Tune writes each trial as a pair of JSON *strings* (the trial, its runtime metadata); the
# wording below says "object" as Tune's own docs do.


def _state_kind(value: Any) -> str:
    return "an object" if isinstance(value, dict) else kind(value)


def _state_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, str):
        raise Invalid(f"{what} is {_state_kind(value)}, not a JSON string")
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        raise Invalid(f"{what} is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise Invalid(f"{what} is {_state_kind(parsed)}, not an object")
    return parsed


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def tune_state_rows(name: str, data: Any) -> list[Any]:
    """The ``trial_data`` list of Tune's state file ``name``; ``Invalid`` (naming it) when
    the file is not a Tune experiment state at all."""
    if not isinstance(data, dict):
        raise Invalid(f"{name} is {_state_kind(data)}, not an object: not a Tune experiment state")
    if "trial_data" not in data:
        raise Invalid(f"{name} has no trial_data: not a Tune experiment state")
    rows = data["trial_data"]
    if not isinstance(rows, list):
        raise Invalid(f"{name}: trial_data is {_state_kind(rows)}, not a list")
    if len(rows) > MAX_TRIALS:
        raise Invalid(f"{name}: trial_data has {len(rows)} entries, over the cap of {MAX_TRIALS}")
    return rows


def tune_state_trial(entry: Any) -> dict[str, Any]:
    """One ``[trial, meta]`` pair of ``trial_data`` → the keyword arguments of
    ``model.Trial`` (scalar config values and metrics only)."""
    if not isinstance(entry, (list, tuple)) or len(entry) != 2:
        raise Invalid(f"an entry of trial_data is {_state_kind(entry)}, not a [trial, meta] pair")
    trial = _state_object(entry[0], "a trial of trial_data")
    meta = _state_object(entry[1], "a trial's metadata")
    trial_id = trial.get("trial_id")
    if not isinstance(trial_id, str) or not trial_id:
        raise Invalid("a trial of trial_data has no trial_id")
    last = meta.get("last_result") or {}
    if isinstance(last, str):
        last = _state_object(last, f"trial {trial_id}'s last_result")
    if not isinstance(last, dict):
        raise Invalid(f"trial {trial_id}'s last_result is {_state_kind(last)}, not an object")
    config = trial.get("config") or {}
    if not isinstance(config, dict):
        raise Invalid(f"trial {trial_id}'s config is {_state_kind(config)}, not an object")
    status = trial.get("status", "PENDING")
    iterations, failures = (
        _finite(last.get("training_iteration")),
        _finite(meta.get("num_failures")),
    )
    return {
        "trial_id": trial_id,
        "status": status if isinstance(status, str) else "PENDING",
        "config": {k: v for k, v in config.items() if not isinstance(v, dict)},
        "metrics": {
            k: v
            for k, v in last.items()
            if k != "config"
            and not k.startswith("time_")
            and isinstance(v, (int, float, str, bool))
        },  # fmt: skip
        "num_failures": int(failures or 0),
        "iterations": int(iterations or 0),
        "elapsed_s": _finite(last.get("time_total_s")),
        "error": None,
    }


# -- Train's checkpoint_manager_snapshot.json (sources.checkpoints) -----------------------------


def checkpoint_snapshot(data: Any) -> dict[str, Any]:
    """A Train run's checkpoint-manager snapshot: ``checkpoint_results`` (a list of
    objects), ``latest_checkpoint_result`` (an object or null), each with a string
    ``checkpoint_dir_name`` and an object ``metrics``."""
    if not isinstance(data, dict):
        raise Invalid("not an object")
    results = data.get("checkpoint_results", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise Invalid("checkpoint_results is not a list of objects")
    if len(results) > MAX_RECORDS:
        raise Invalid(f"checkpoint_results: {len(results)} entries, over the cap of {MAX_RECORDS}")
    latest = data.get("latest_checkpoint_result")
    if latest is not None and not isinstance(latest, dict):
        raise Invalid("latest_checkpoint_result is not an object")
    for r in [*results, latest or {}]:
        name = r.get("checkpoint_dir_name")
        if name is not None and not isinstance(name, str):
            raise Invalid("a checkpoint_dir_name is not a string")
        if r.get("metrics") is not None and not isinstance(r.get("metrics"), dict):
            raise Invalid("a checkpoint's metrics is not an object")
    return data


# -- $RAYTOP_HOME/experiments.json (home) -------------------------------------------------------


def registered_experiment(entry: Any, where: str) -> dict[str, str]:
    entry = obj(entry, where)
    return {key: text(entry, key, where, nonempty=True) for key in ("name", "path", "raytop_dir")}


def registry(data: Any) -> list[Any]:
    """The list itself; each entry is checked on its own (``registered_experiment``)."""
    return seq(data, "top level", MAX_REGISTERED)


# -- the ledger's KV values (probe.ledger, probe.report_probe; model.records) ----------------


def ledger_index(data: Any) -> LedgerIndex:
    """``ledger/index``: ``{"started_at", "published_at", "pages": {key: version}}``."""
    index = obj(data)
    pages = obj(index.get("pages") or {}, "pages")
    if len(pages) > MAX_LEDGER_PAGES:
        raise Invalid(f"pages: {len(pages)} entries, over the cap of {MAX_LEDGER_PAGES}")
    return LedgerIndex(
        started_at=number(index, "started_at"),
        published_at=number(index, "published_at"),
        pages={key: integer(pages, key, "pages", minimum=None) for key in pages},
    )


def _rank_record(record: Any, where: str) -> RankRecord:
    """One rank's record (a ``RankReport`` as the Ledger stored it, from any raytop
    version): every field the readers use, typed; fields they do not use are left out."""
    raw = obj(record, where)
    rank = integer(raw, "rank", where, maximum=MAX_RANKS)
    entered, exited, dropped = (
        integer(raw, key, where, default=0) for key in ("entered", "exited", "dropped")
    )
    local_rank, node_rank, pid, rss_bytes, gpu_memory_bytes = (
        integer(raw, key, where, optional=True, minimum=None)
        for key in ("local_rank", "node_rank", "pid", "rss_bytes", "gpu_memory_bytes")
    )
    last_enter_at, last_exit_at, received_at, cpu_percent, usual_interval_s = (
        number(raw, key, where, optional=True)
        for key in ("last_enter_at", "last_exit_at", "received_at", "cpu_percent",
                    "usual_interval_s")
    )  # fmt: skip
    node_id, stack, stack_request, run_path = (
        text(raw, key, where, optional=True)
        for key in ("node_id", "stack", "stack_request", "run_path")
    )
    done = flag(raw, "done", where)
    gpu_ids = seq(raw.get("gpu_ids") or [], _at(where, "gpu_ids"), MAX_RANKS)
    for i, gpu in enumerate(gpu_ids):
        if isinstance(gpu, bool) or not isinstance(gpu, (str, int)):
            raise _fail(f"{_at(where, 'gpu_ids')}[{i}]", "a string", gpu)
    uploads = seq(raw.get("checkpoints") or [], _at(where, "checkpoints"), MAX_RECORDS)
    checkpoints = [
        _upload(upload, f"{_at(where, 'checkpoints')}[{i}]") for i, upload in enumerate(uploads)
    ]
    syncs = seq(raw.get("syncs") or [], _at(where, "syncs"), MAX_RECORDS)
    return RankRecord(
        rank=rank, entered=entered, exited=exited, dropped=dropped,
        local_rank=local_rank, node_rank=node_rank, pid=pid, rss_bytes=rss_bytes,
        gpu_memory_bytes=gpu_memory_bytes, last_enter_at=last_enter_at,
        last_exit_at=last_exit_at, received_at=received_at, cpu_percent=cpu_percent,
        usual_interval_s=usual_interval_s, node_id=node_id, stack=stack,
        stack_request=stack_request, run_path=run_path, done=done,
        gpu_ids=[str(gpu) for gpu in gpu_ids], checkpoints=checkpoints,
        syncs=[_barrier_wait(sync, f"{_at(where, 'syncs')}[{i}]") for i, sync in enumerate(syncs)],
    )  # fmt: skip


def _barrier_wait(sync: Any, where: str) -> BarrierWait:
    """One ``[report, start, end]`` of a rank's recent barrier waits."""
    if (
        not isinstance(sync, list)
        or len(sync) != 3
        or not all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in sync
        )
    ):
        raise _fail(where, "[report, start, end] (numbers)", sync)
    return BarrierWait(*sync)


def _upload(upload: Any, where: str) -> CheckpointUpload:
    """One checkpoint upload record of a rank (``ReportProbe.upload_started``)."""
    raw = obj(upload, where)
    dir_name = text(raw, "dir_name", where)
    start = number(raw, "start", where)
    end, sync_s = (number(raw, key, where, optional=True) for key in ("end", "sync_s"))
    report = integer(raw, "report", where, optional=True, minimum=None)
    error, mode = (text(raw, key, where, optional=True) for key in ("error", "mode"))
    custom_upload = flag(raw, "custom_upload", where)
    files = obj(raw.get("files") or {}, _at(where, "files"))
    return CheckpointUpload(
        dir_name=dir_name, report=report, mode=mode, custom_upload=custom_upload,
        files={path: integer(files, path, _at(where, "files"), minimum=None) for path in files},
        sync_s=sync_s, start=start, end=end, error=error,
    )  # fmt: skip


def ledger_page(data: Any) -> LedgerPage:
    """``ledger/page/<run_id>.<attempt_id>``: one attempt and the record of each rank."""
    raw = obj(data)
    run_id, run_name, attempt_id = (text(raw, key) for key in ("run_id", "run_name", "attempt_id"))
    world_size = integer(raw, "world_size", maximum=MAX_RANKS)
    first_seen_at = number(raw, "first_seen_at")
    placement_group_id = text(raw, "placement_group_id", optional=True)
    ranks = obj(raw.get("ranks") or {}, "ranks")
    if len(ranks) > MAX_RANKS:
        raise Invalid(f"ranks: {len(ranks)} entries, over the cap of {MAX_RANKS}")
    for key in ranks:
        if not (key.isascii() and key.isdigit()):
            raise Invalid(f"ranks: key '{key[:40]}' is not a rank number")
    return LedgerPage(
        run_id=run_id, run_name=run_name, attempt_id=attempt_id, world_size=world_size,
        first_seen_at=first_seen_at, placement_group_id=placement_group_id,
        ranks={key: _rank_record(record, f"ranks.{key}") for key, record in ranks.items()},
    )  # fmt: skip


def trial_registration(data: Any) -> dict[str, Any]:
    """``trial/<actor id>`` (probe.trial_registry): which trial owns which group."""
    record = obj(data)
    text(record, "trial_id", nonempty=True)
    text(record, "experiment")
    text(record, "pg_id", optional=True)
    return record


# -- raytop's own records (for rundir / cluster: driver.json, cluster.json) ------------------


def driver_record(data: Any) -> dict[str, Any]:
    """``.raytop/driver.json`` (launch.driver): a pid, and what proves it is that driver."""
    record = obj(data)
    integer(record, "pid", minimum=1)
    number(record, "pid_create_time", optional=True)
    for key in ("host", "spec", "address", "experiment_name", "experiment_path", "metric",
                "mode"):  # fmt: skip
        text(record, key, optional=True)
    number(record, "started_at", optional=True)
    return record


def cluster_record(data: Any) -> dict[str, Any]:
    """``$RAYTOP_HOME/cluster.json`` (launch.cluster): the embedded cluster raytop started."""
    record = obj(data)
    integer(record, "pid", minimum=1)
    number(record, "pid_create_time", optional=True)
    text(record, "address")
    text(record, "log", optional=True)
    number(record, "started_at", optional=True)
    return record
