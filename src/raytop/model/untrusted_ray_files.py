"""Validators of the files Ray Tune and Ray Train write: Tune's experiment_state rows and
Train's checkpoint-manager snapshot.

Such a file may be torn, truncated, of another Ray version, or not Ray's at all; each
validator returns what raytop's readers rely on or raises ``Invalid`` saying what was
wrong (in Ray's own words: "object", "trial_data"). Uses ``untrusted``'s caps and kinds.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from raytop.model.progress import MAX_METRIC_HISTORY, expected_iterations
from raytop.model.untrusted import (
    MAX_RECORDS,
    MAX_TRIALS,
    Invalid,
    is_finite_number,
    kind,
)
from raytop.model.untrusted_depth import cut_deep

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
    return value if is_finite_number(value) else None


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


MAX_LOGDIR_CHARS = 255  # a folder name, as file systems allow


def tune_state_trial(entry: Any) -> dict[str, Any]:
    """One ``[trial, meta]`` pair of ``trial_data`` → the keyword arguments of
    ``model.Trial`` (scalar config values and metrics only), and ``logdir``: the trial's
    folder name (``relative_logdir``), None when absent or not a plain name."""
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
    logdir = trial.get("relative_logdir")
    plain = isinstance(logdir, str) and 0 < len(logdir) <= MAX_LOGDIR_CHARS and "/" not in logdir
    return {
        "trial_id": trial_id,
        # the trial's folder name, when a plain one (``model.tune_folders``); not a Trial field
        "logdir": logdir if plain and logdir not in (".", "..") else None,
        "status": status if isinstance(status, str) else "PENDING",
        "config": cut_deep({k: v for k, v in config.items() if not isinstance(v, dict)}),
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
        # No stopper is known here, and Tune keeps no history of results.
        "max_iterations": expected_iterations(config, None),
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


def tune_state_metric(data: Any) -> str | None:
    """The metric Tune was given (``runner_data._metric`` of its state file), if a string:
    the experiment's metric for an experiment raytop did not launch."""
    runner = data.get("runner_data") if isinstance(data, dict) else None
    metric = runner.get("_metric") if isinstance(runner, dict) else None
    return metric if isinstance(metric, str) and 0 < len(metric) <= 200 else None


def tune_start_time(data: Any) -> float | None:
    """When the Tune driver that wrote the state started (``runner_data._start_time``,
    unix seconds: ``TuneController.__init__`` sets it; a resumed run writes its new
    driver's), if a
    plausible time: the evidence that ties a foreign experiment to its driver's job."""
    runner = data.get("runner_data") if isinstance(data, dict) else None
    start = runner.get("_start_time") if isinstance(runner, dict) else None
    if start is None and isinstance(data, dict) and isinstance(data.get("stats"), dict):
        start = data["stats"].get("start_time")  # the same time, in Tune's "stats"
    return float(start) if is_finite_number(start) and 0 < start < 1e11 else None


# -- a trial's result.json (JSON lines) and error.txt (sources.history) -------------------------

RESULT_TAIL_BYTES = 256 * 1024  # the end of result.json that is read: the last results only
ERROR_TAIL_BYTES = 64 * 1024  # the end of error.txt: its last failure
MAX_ERROR_CHARS = 300


def result_tail(raw: bytes, mid_file: bool, metric: str) -> tuple[tuple[float, ...], int]:
    """The last values (at most ``MAX_METRIC_HISTORY``, oldest first) of ``metric`` in
    the JSON lines ``raw``, the end of a trial's result.json, and how many lines were
    malformed (not JSON, not an object). ``mid_file``: ``raw`` starts inside the file, so
    its first (partial) line is dropped unread; a last line with no newline may still
    be being written: it counts only if it parses. A result without the metric, or with a
    value that is not a finite number, is skipped (not malformed)."""
    lines = raw.split(b"\n")
    if mid_file:
        lines = lines[1:]
    values: list[float] = []
    bad = 0
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            if i < len(lines) - 1:  # the unfinished last line is no fault
                bad += 1
            continue
        if not isinstance(row, dict):
            bad += 1
            continue
        value = _finite(row.get(metric))
        if value is not None:
            values.append(float(value))
    return tuple(values[-MAX_METRIC_HISTORY:]), bad


def error_line(raw: bytes) -> str | None:
    """The one line that says why a trial failed, from the end of its error.txt (Tune
    appends ``Failure # N (occurred at …)`` then the error, per failure): the last
    failure's exception line (its last unindented line, ``ValueError: boom``), else its
    first line; at most ``MAX_ERROR_CHARS``. None when there is no text."""
    text = raw.decode("utf-8", errors="replace").replace("\r", "")
    last = text.rsplit("Failure # ", 1)
    body = last[1].split("\n", 1)[1] if len(last) == 2 and "\n" in last[1] else text
    lines = [ln for ln in body.split("\n") if ln.strip()]
    if not lines:
        lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return None
    flush = [ln for ln in lines if not ln[0].isspace() and not ln.startswith("Traceback")]
    line = (flush or lines)[-1].strip()
    line = "".join(c if c.isprintable() else " " for c in line)
    return line[: MAX_ERROR_CHARS - 1] + "…" if len(line) > MAX_ERROR_CHARS else line
