"""Validators of what the cluster says of its jobs: a row of the GCS job table (as
``wire.jobs.job_row`` copies it) and a submitted job's record in the KV store (JSON
Ray's job manager writes, ``JobInfo.to_json``).

Both name processes and commands the cluster's users chose: an entrypoint may be any
length and hold any character, a record may come from another Ray version or from
anyone who can write the KV store. Each validator returns what raytop relies on or raises
``Invalid`` naming the field; long text is cut, not refused (a long command is no fault).
Built from ``untrusted``'s checks.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

from typing import Any

from raytop.model.jobs import SUBMISSION_STATUSES, Job
from raytop.model.untrusted import Invalid, fail, flag, integer, obj, text

MAX_JOBS = 2_000  # jobs kept per read: the newest (a long-lived cluster has thousands)
MAX_ENTRYPOINT = 4_000  # characters of a job's command kept
MAX_MESSAGE = 2_000  # characters of a submitted job's message kept
MAX_ID = 256  # a job id (8 hex digits in Ray 2.58) or a submission id
MAX_IP = 255
MAX_PID = 2**31 - 1


def _cut(value: str, cap: int) -> str:
    return value if len(value) <= cap else value[: cap - 1] + "…"


def _short_text(d: dict[str, Any], key: str, cap: int, *, optional: bool = False) -> str | None:
    value = text(d, key, optional=optional)
    if value is not None and len(value) > cap:
        raise Invalid(f"{key}: {len(value)} characters, over the cap of {cap}")
    return value


def _seconds(ms: int | None) -> float | None:
    """Ray's milliseconds (0: not set) as unix seconds."""
    return ms / 1000.0 if ms else None


def job_table_row(row: Any) -> dict[str, Any]:
    """A row of the job table: the keyword arguments of ``model.jobs.Job`` it gives, and
    ``namespace``."""
    row = obj(row)
    job_id = _short_text(row, "job_id", MAX_ID)
    if not job_id:
        raise Invalid("job_id: expected a non-empty string")
    pid = integer(row, "driver_pid", default=0, maximum=MAX_PID)
    return {
        "job_id": job_id,
        "dead": flag(row, "dead"),
        "driver_pid": pid or None,
        "driver_ip": _short_text(row, "driver_ip", MAX_IP, optional=True) or None,
        "start_time": _seconds(integer(row, "start_ms", default=0)),
        "end_time": _seconds(integer(row, "end_ms", default=0)),
        "entrypoint": _cut(text(row, "entrypoint", optional=True) or "", MAX_ENTRYPOINT),
        "submission_id": _short_text(row, "submission_id", MAX_ID, optional=True) or None,
        "namespace": text(row, "namespace", optional=True) or "",
    }


def submission_record(data: Any) -> dict[str, Any]:
    """A submitted job's record: its status (one of Ray's ``JobStatus``), entrypoint,
    message, end time and the driver's exit code, as ``Job`` fields."""
    record = obj(data)
    status = record.get("status")
    if status not in SUBMISSION_STATUSES:
        if not isinstance(status, str):
            raise fail("status", "a string", status)
        raise Invalid(f"status: {status[:40]!r} is not one of {', '.join(SUBMISSION_STATUSES)}")
    message = text(record, "message", optional=True)
    entrypoint = text(record, "entrypoint", optional=True)
    return {
        "status": status,
        "message": None if message is None else _cut(message, MAX_MESSAGE),
        "entrypoint": None if entrypoint is None else _cut(entrypoint, MAX_ENTRYPOINT),
        "start_time": _seconds(integer(record, "start_time", optional=True)),
        "end_time": _seconds(integer(record, "end_time", optional=True)),
        "exit_code": integer(
            record, "driver_exit_code", optional=True, minimum=-(2**31), maximum=2**31
        ),  # fmt: skip  (a signal's is negative)
    }


def record_only(submission_id: str) -> dict[str, Any]:
    """The table row of a submitted job that has none (its entrypoint has not connected
    to the cluster, or never does): only its submission id; its record says the rest."""
    return {"job_id": "", "dead": False, "driver_pid": None, "driver_ip": None,
            "start_time": None, "end_time": None, "entrypoint": "",
            "submission_id": submission_id, "namespace": ""}  # fmt: skip


def job(row: dict[str, Any], record: dict[str, Any] | None) -> Job:
    """A checked table row and its checked submission record (None: not submitted, or
    no record) as one ``Job``: the record's entrypoint (the command submitted) wins over
    the driver's, its times over the table's when the table has none."""
    fields = {k: v for k, v in row.items() if k != "namespace"}
    if record is not None:
        fields.update(status=record["status"], message=record["message"],
                      exit_code=record["exit_code"])  # fmt: skip
        if record["entrypoint"]:
            fields["entrypoint"] = record["entrypoint"]
        for key in ("start_time", "end_time"):
            if fields[key] is None:
                fields[key] = record[key]
    return Job(**fields)
