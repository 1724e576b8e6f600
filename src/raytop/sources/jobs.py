"""The cluster's jobs (``model.jobs.Job``): the GCS job table, and the record Ray's job
manager keeps of each submitted job (status, message), read through ``wire.gcs.GcsKv``.
A submitted job whose entrypoint never connected to the cluster (a plain script run by
``ray job submit``) has a record and no row: it is a job too, with no job id.

The table comes whole at every read (the GCS has no "what changed since"); a submitted
job's record is asked for only until it says the job ended (Ray never changes an ended
job's record: ``JobInfoStorageClient.put_status`` refuses to). Ray's own jobs (namespace
``_ray_internal_…``) are left out, as its dashboard leaves them out. Each row and record
is untrusted (``model.untrusted_jobs``): a bad one is left out with a warning naming it;
at most ``MAX_JOBS`` jobs are kept, the newest. On a Ray that cannot list or fetch KV keys
(``wire.gcs.RayLacks``) the jobs are the table's alone, with no records (the collector's
warnings name what this Ray lacks); one with no job table reads none (``RayLacks``).
"""

from __future__ import annotations

from typing import Any

from raytop.model import untrusted, untrusted_jobs
from raytop.model.jobs import TERMINAL_JOB_STATUSES, Job
from raytop.wire.gcs import GcsKv, RayLacks
from raytop.wire.jobs import (
    RAY_INTERNAL_NAMESPACE,
    submission_ids,
    submission_key,
    submission_records,
)


class JobsReader:
    def __init__(self, kv: GcsKv) -> None:
        self._kv = kv
        self._ended: dict[str, dict[str, Any]] = {}  # submission id → its final record
        self._bad: dict[str, str] = {}  # submission id → why its record is left out
        self.warnings: list[str] = []  # this read's, one line each

    def read(self) -> tuple[Job, ...]:
        """Every job of the cluster, newest first; ``ClusterUnreachable`` when the GCS
        does not answer."""
        warnings: list[str] = []
        rows = []
        for raw in self._kv.job_table():
            try:
                row = untrusted_jobs.job_table_row(raw)
            except untrusted.Invalid as exc:
                warnings.append(untrusted.problem("the job table", exc))
                continue
            if not row["namespace"].startswith(RAY_INTERNAL_NAMESPACE):
                rows.append(row)
        rows.sort(key=lambda r: (r["start_time"] or 0.0, r["job_id"]), reverse=True)
        if len(rows) > untrusted_jobs.MAX_JOBS:
            warnings.append(f"the job table: {len(rows)} jobs, showing the newest "
                            f"{untrusted_jobs.MAX_JOBS}")  # fmt: skip
            rows = rows[: untrusted_jobs.MAX_JOBS]
        # A submitted job whose entrypoint never connected has a record and no row.
        in_table = {r["submission_id"] for r in rows if r["submission_id"]}
        try:
            listed = [s for s in submission_ids(self._kv) if s not in in_table]
        except RayLacks:
            listed = []
        if len(listed) > untrusted_jobs.MAX_JOBS:
            warnings.append(f"Ray's job records: {len(listed)} submitted jobs that never "
                            f"connected, reading {untrusted_jobs.MAX_JOBS}")  # fmt: skip
            listed = sorted(listed)[: untrusted_jobs.MAX_JOBS]
        records = self._records([*in_table, *listed])
        rows += [untrusted_jobs.record_only(s) for s in listed if s in records]
        warnings += [self._bad[s] for s in [*in_table, *listed] if s in self._bad]
        self.warnings = list(dict.fromkeys(warnings))
        jobs = [untrusted_jobs.job(r, records.get(r["submission_id"] or "")) for r in rows]
        jobs.sort(key=lambda j: (j.start_time or 0.0, j.job_id), reverse=True)
        return tuple(jobs)

    def _records(self, submission_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The checked record of each submitted job: an ended one's from memory, the
        others' asked of the KV store in one call."""
        wanted = [s for s in dict.fromkeys(submission_ids) if s not in self._ended]
        found: dict[str, dict[str, Any]] = {}
        try:
            blobs = submission_records(self._kv, wanted)
        except RayLacks:
            blobs = {}
        for sid, blob in blobs.items():
            try:
                if not isinstance(blob, (bytes, str)):
                    raise untrusted.Invalid(f"expected bytes, got {type(blob).__name__}")
                record = untrusted_jobs.submission_record(
                    untrusted.parse(blob, untrusted.MAX_KV_VALUE_BYTES)
                )
            except ValueError as exc:
                self._bad[sid] = untrusted.problem(f"Ray's record of job {sid} "
                                                   f"({submission_key(sid)})", exc)  # fmt: skip
                continue
            self._bad.pop(sid, None)
            found[sid] = record
            if record["status"] in TERMINAL_JOB_STATUSES:
                self._ended[sid] = record
        # Only the jobs still in the table are remembered (the table is capped).
        present = set(submission_ids)
        self._ended = {s: r for s, r in self._ended.items() if s in present}
        self._bad = {s: why for s, why in self._bad.items() if s in present}
        return {**self._ended, **found}
