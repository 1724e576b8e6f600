"""Validators of the values raytop takes from the cluster's KV store: the report ledger's
index, each rank's record (its checkpoint uploads and barrier waits are
``untrusted_kv_checkpoints``'s; a page of them, ``untrusted_ledger_page``'s), the beats and
the run records, and the trial registrations.

A value may come from another raytop version or from a buggy probe; each validator returns
the typed record raytop's readers rely on (``model.records``) or raises ``Invalid`` naming
where (``ranks.2.pid``) and what was wrong. Built from ``untrusted``'s checks and caps.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

from typing import Any

from raytop.model.records import (
    DETECTOR_ACTIONS,
    DETECTOR_ON,
    DETECTOR_STATES,
    FAILURE_CLASSES,
    FAILURE_DEFAULTS,
    MAX_ATTEMPTS,
    MAX_ERROR_CHARS,
    MAX_METRIC_KEY_CHARS,
    MAX_PROBE_PROBLEM,
    MAX_REPORT_HISTORY,
    MAX_REPORT_METRICS,
    AttemptRecord,
    HangDetectorRecord,
    LedgerIndex,
    ProbeProblem,
    RankRecord,
    ReportTimes,
    RunAttempts,
)
from raytop.model.untrusted import (
    MAX_LEDGER_PAGES,
    MAX_RANKS,
    MAX_RECORDS,
    Invalid,
    at,
    fail,
    flag,
    integer,
    is_finite_number,
    number,
    obj,
    seq,
    text,
)
from raytop.model.untrusted_activity import activity_record
from raytop.model.untrusted_kv_checkpoints import barrier_wait, upload

# -- the ledger's KV values (probe.ledger, probe.report_probe; model.records) ----------------


def ledger_index(data: Any) -> LedgerIndex:
    """``ledger/index``: ``{"started_at", "published_at", "pages": {key: version}}``."""
    index = obj(data)
    pages = obj(index.get("pages") or {}, "pages")
    if len(pages) > MAX_LEDGER_PAGES:
        raise Invalid(f"pages: {len(pages)} entries, over the cap of {MAX_LEDGER_PAGES}")
    runs, beats = (obj(index.get(key) or {}, key) for key in ("runs", "beats"))
    for key, entries in (("runs", runs), ("beats", beats)):
        if len(entries) > MAX_LEDGER_PAGES:
            raise Invalid(f"{key}: {len(entries)} entries, over the cap of {MAX_LEDGER_PAGES}")
    return LedgerIndex(
        started_at=number(index, "started_at"),
        published_at=number(index, "published_at"),
        pages={key: integer(pages, key, "pages", minimum=None) for key in pages},
        runs={key: integer(runs, key, "runs", minimum=None) for key in runs},
        beats={key: integer(beats, key, "beats", minimum=None) for key in beats},
    )


def rank_record(record: Any, where: str) -> RankRecord:
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
    gpu_ids = seq(raw.get("gpu_ids") or [], at(where, "gpu_ids"), MAX_RANKS)
    for i, gpu in enumerate(gpu_ids):
        if isinstance(gpu, bool) or not isinstance(gpu, (str, int)):
            raise fail(f"{at(where, 'gpu_ids')}[{i}]", "a string", gpu)
    uploads = seq(raw.get("checkpoints") or [], at(where, "checkpoints"), MAX_RECORDS)
    checkpoints = [
        upload(record, f"{at(where, 'checkpoints')}[{i}]") for i, record in enumerate(uploads)
    ]
    syncs = seq(raw.get("syncs") or [], at(where, "syncs"), MAX_RECORDS)
    return RankRecord(
        rank=rank, entered=entered, exited=exited, dropped=dropped,
        local_rank=local_rank, node_rank=node_rank, pid=pid, rss_bytes=rss_bytes,
        gpu_memory_bytes=gpu_memory_bytes, last_enter_at=last_enter_at,
        last_exit_at=last_exit_at, received_at=received_at, cpu_percent=cpu_percent,
        usual_interval_s=usual_interval_s, node_id=node_id, stack=stack,
        stack_request=stack_request,
        native_stack=_optional_text(raw.get("native_stack"), MAX_NATIVE_STACK_CHARS),
        native_stack_request=_optional_text(raw.get("native_stack_request"), MAX_REQUEST_ID),
        flight_recorder=_optional_text(raw.get("flight_recorder"), MAX_ANSWER_CHARS),
        flight_recorder_request=_optional_text(raw.get("flight_recorder_request"), MAX_REQUEST_ID),
        run_path=run_path, done=done,
        gpu_ids=[str(gpu) for gpu in gpu_ids], checkpoints=checkpoints,
        syncs=tuple(
            barrier_wait(sync, f"{at(where, 'syncs')}[{i}]") for i, sync in enumerate(syncs)
        ),
        report_times=_report_times(raw.get("report_times")),
        declared=_declared(raw.get("declared")),
        restored_from=_folder_name(raw.get("restored_from")),
        activity=activity_record(raw.get("activity")),
    )  # fmt: skip


MAX_NATIVE_STACK_CHARS = 64_000  # the probe sends at most 20,000 (probe.native_stack)
MAX_REQUEST_ID = 64
MAX_ANSWER_CHARS = 1_000  # a probe's one-line answer


def _optional_text(value: Any, cap: int) -> str | None:
    """An optional text field added after the first release: a string (cut at ``cap``), or
    None when absent or of the wrong kind (the field is dropped, never the rank)."""
    return value[:cap] if isinstance(value, str) else None


def _report_times(value: Any) -> ReportTimes:
    """A rank's last reports, ``[[entered_at, exited_at or null], …]``, as the two columns
    ``Worker`` holds (a refresh's ``Worker`` of an unchanged page shares the very tuples; as
    pairs, 2,000 ranks held ~4 MB more): the newest ``MAX_REPORT_HISTORY``, oldest first, an
    entry with a non-finite time dropped; a value of the wrong shape drops the field."""
    if not isinstance(value, list):
        return (), ()
    entered_at: list[float] = []
    exited_at: list[float | None] = []
    for entry in value[-MAX_REPORT_HISTORY:]:
        if not isinstance(entry, list) or len(entry) != 2:
            return (), ()
        entered, exited = entry
        # What the probe sends (floats): checked inline, as a 2,000-rank run has 64,000
        # of them a page round. ``x - x == 0.0`` is False for inf and nan.
        if type(entered) is float and (type(exited) is float or exited is None):
            if entered - entered == 0.0 and (exited is None or exited - exited == 0.0):
                entered_at.append(entered)
                exited_at.append(exited)
            continue
        if any(v is not None and not isinstance(v, (int, float)) for v in entry):
            return (), ()
        if not is_finite_number(entered) or not (exited is None or is_finite_number(exited)):
            continue
        entered_at.append(float(entered))
        exited_at.append(None if exited is None else float(exited))
    return tuple(entered_at), tuple(exited_at)


MAX_DECLARED = 32  # resource kinds one worker may declare (CPU, GPU, memory, custom ones)
MAX_RESOURCE_NAME = 128


def _declared(value: Any) -> dict[str, float]:
    """A worker's logical resources, ``{name: amount}``: optional, so a value of the wrong
    shape (not a map, over the cap, a bad name or amount) drops the field, never the rank."""
    if not isinstance(value, dict) or len(value) > MAX_DECLARED:
        return {}
    declared: dict[str, float] = {}
    for name, amount in value.items():
        if not isinstance(name, str) or not name or len(name) > MAX_RESOURCE_NAME:
            return {}
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            return {}
        if not is_finite_number(amount) or amount < 0:
            return {}
        declared[name] = float(amount)
    return declared


MAX_FOLDER_NAME = 255  # a file name's limit on every common file system


def _folder_name(value: Any) -> str | None:
    """A checkpoint folder's name: optional, so anything but a plain name (a path, a
    separator, empty, over 255 characters, not a string) drops the field, never the rank."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_FOLDER_NAME:
        return None
    if "/" in value or "\\" in value or value in (".", "..") or not value.isprintable():
        return None
    return value


def rank_keys(ranks: dict[str, Any]) -> None:
    if len(ranks) > MAX_RANKS:
        raise Invalid(f"ranks: {len(ranks)} entries, over the cap of {MAX_RANKS}")
    for key in ranks:
        if not (key.isascii() and key.isdigit()):
            raise Invalid(f"ranks: key '{key[:40]}' is not a rank number")


ATTEMPT_STATUSES = frozenset({"running", "errored", "finished", "aborted", "resized"})


def _metrics(raw: dict[str, Any], key: str, where: str) -> dict[str, float] | None:
    """A report's scalar metrics: null, or at most ``MAX_REPORT_METRICS`` finite numbers
    under keys of at most ``MAX_METRIC_KEY_CHARS``."""
    value = raw.get(key)
    if value is None:
        return None
    metrics = obj(value, at(where, key))
    if len(metrics) > MAX_REPORT_METRICS:
        raise Invalid(f"{at(where, key)}: {len(metrics)} entries, over the cap of "
                      f"{MAX_REPORT_METRICS}")  # fmt: skip
    for name in metrics:
        if len(name) > MAX_METRIC_KEY_CHARS:
            raise Invalid(f"{at(where, key)}: a key of {len(name)} characters, over the cap "
                          f"of {MAX_METRIC_KEY_CHARS}")  # fmt: skip
    return {name: number(metrics, name, at(where, key)) for name in metrics}


def _capped_text(raw: dict[str, Any], key: str, where: str, cap: int) -> str | None:
    value = text(raw, key, where, optional=True)
    if value is not None and len(value) > cap:
        raise Invalid(f"{at(where, key)}: {len(value)} characters, over the cap of {cap}")
    return value


def _attempt(record: Any, where: str) -> AttemptRecord:
    raw = obj(record, where)
    status = text(raw, "status", where)
    if status not in ATTEMPT_STATUSES:
        raise Invalid(f"{at(where, 'status')}: '{status[:40]}' is not one of "
                      f"{', '.join(sorted(ATTEMPT_STATUSES))}")  # fmt: skip
    failure_class = text(raw, "failure_class", where, optional=True)
    if failure_class is not None and failure_class not in FAILURE_CLASSES:
        raise Invalid(f"{at(where, 'failure_class')}: '{failure_class[:40]}' is not one of "
                      f"{', '.join(FAILURE_CLASSES)}")  # fmt: skip
    return AttemptRecord(
        index=integer(raw, "index", where, minimum=1),
        attempt_id=_capped_text(raw, "attempt_id", where, 128),
        status=status,
        started_at=number(raw, "started_at", where),
        ended_at=number(raw, "ended_at", where, optional=True),
        error_class=_capped_text(raw, "error_class", where, MAX_METRIC_KEY_CHARS),
        error=_capped_text(raw, "error", where, MAX_ERROR_CHARS),
        failure_class=failure_class,
        first_report=_metrics(raw, "first_report", where),
        restored=_metrics(raw, "restored", where),
        reports_taken=integer(raw, "reports_taken", where, optional=True),
        undeliverable=flag(raw, "undeliverable", where) if "undeliverable" in raw else False,
    )


def run_attempts(data: Any) -> RunAttempts:
    """``ledger/run/<run_id>`` (probe.run_probe): a run's failure config and its attempts."""
    raw = obj(data)
    run_id, run_name = (text(raw, key) for key in ("run_id", "run_name"))
    config = obj(raw.get("failure_config") or {}, "failure_config")
    attempts = seq(raw.get("attempts", []), "attempts", MAX_ATTEMPTS)
    record = RunAttempts(
        run_id=run_id,
        run_name=run_name,
        failure_config={
            key: integer(config, key, "failure_config", default=default, minimum=-1)
            for key, default in FAILURE_DEFAULTS.items()
        },
        attempts=[_attempt(a, f"attempts[{i}]") for i, a in enumerate(attempts)],
        sent_at=number(raw, "sent_at"),
    )
    if "controller_poll_s" in raw:  # from a probe that reads it
        record["controller_poll_s"] = _poll_s(raw)
    return record


def _poll_s(raw: dict[str, Any]) -> float | None:
    poll_s = number(raw, "controller_poll_s", "run record", optional=True)
    if poll_s is not None and not 0.0 < poll_s <= MAX_DETECTOR_S:
        raise Invalid(f"controller_poll_s: {poll_s} is not a poll period")
    return poll_s


MAX_DETECTOR_S = 7 * 86_400.0  # a poll period or confirmation time beyond a week is no setting


def run_hang_detector(data: Any) -> HangDetectorRecord | None:
    """``hang_detector`` of ``ledger/run/<run_id>``: Ray's NCCL hang detector on the run (None:
    absent, from an older probe). Checked apart from the attempts, so that a bad one is a
    warning of its own and the attempts still show."""
    where, raw = "hang_detector", obj(data).get("hang_detector")
    if raw is None:
        return None
    record = obj(raw, where)
    state = text(record, "state", where) or ""
    if state not in DETECTOR_STATES:
        raise Invalid(f"{at(where, 'state')}: '{state[:40]}' is not one of "
                      f"{', '.join(DETECTOR_STATES)}")  # fmt: skip
    ray = _capped_text(record, "ray", where, 40) or ""
    if state != DETECTOR_ON:
        return HangDetectorRecord(state=state, ray=ray, action=None, poll_s=None,
                                  confirm_s=None, disabled=False)  # fmt: skip
    action = text(record, "action", where) or ""
    if action not in DETECTOR_ACTIONS:
        raise Invalid(f"{at(where, 'action')}: '{action[:40]}' is not one of "
                      f"{', '.join(DETECTOR_ACTIONS)}")  # fmt: skip
    poll_s, confirm_s = (number(record, key, where) or 0.0 for key in ("poll_s", "confirm_s"))
    for key, value in (("poll_s", poll_s), ("confirm_s", confirm_s)):
        if not 0 < value <= MAX_DETECTOR_S:
            raise Invalid(f"{at(where, key)}: {value:g} s is not in (0, {MAX_DETECTOR_S:g}]")
    disabled = flag(record, "disabled", where)
    return HangDetectorRecord(state=state, ray=ray, action=action, poll_s=poll_s,
                              confirm_s=confirm_s, disabled=disabled)  # fmt: skip


# -- trial registrations (probe.trial_registry; sources.placement_source) --------------------


def trial_registration(data: Any) -> dict[str, Any]:
    """``trial/<actor id>`` (probe.trial_registry): which trial owns which group."""
    record = obj(data)
    text(record, "trial_id", nonempty=True)
    text(record, "experiment")
    text(record, "pg_id", optional=True)
    return record


# -- a probe's problem (probe.report_probe; pipeline.uninstrumented) -------------------------


def probe_problem(data: Any) -> ProbeProblem:
    """``probe/problem/<job id>``: why a probe cannot count in that job's runs, capped."""
    record = obj(data)
    ray = text(record, "ray") or ""
    problem = text(record, "problem", nonempty=True) or ""
    return ProbeProblem(ray=ray[:40], problem=problem[:MAX_PROBE_PROBLEM],
                        sent_at=number(record, "sent_at"))  # fmt: skip
