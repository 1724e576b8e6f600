"""The cluster's jobs as Ray keeps them: its job table, and its records of submitted jobs.

Every driver that connects to a cluster is a job in the GCS's job table
(``JobTableData``: id, driver pid and address, start and end times in ms, whether it is
dead, the driver's entrypoint, and its config's metadata). A job submitted with ``ray job
submit`` carries its submission id in that metadata (``job_submission_id``, Ray's
``dashboard.modules.job.common.JOB_ID_METADATA_KEY``); Ray's job manager keeps its status
(PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED), message and entrypoint as JSON in the KV
store, namespace ``job``, key ``_ray_internal_job_info_<submission id>``
(``JobInfoStorageClient.JOB_DATA_KEY``). Both read here are private Ray APIs, checked on
Ray 2.58 (``ray/dashboard/modules/job/utils.py`` ``get_driver_jobs`` reads the table the
same way, through ``get_all_job_info``); the caller (``wire.gcs.GcsKv``) checks the Ray
line first, and that this Ray has the call and the fields read here
(``wire.capabilities.JOB_TABLE``). What comes back is plain data for
``model.untrusted_jobs`` to check.
"""

from __future__ import annotations

from typing import Any

# Ray's dashboard/modules/job/common.py (JOB_ID_METADATA_KEY, JobInfoStorageClient) and
# _private/ray_constants.py (KV_NAMESPACE_JOB).
SUBMISSION_ID_KEY = "job_submission_id"
JOB_INFO_NAMESPACE = "job"
JOB_INFO_PREFIX = "_ray_internal_job_info_"
# Jobs in a namespace with this prefix are Ray's own (its dashboard skips them too).
RAY_INTERNAL_NAMESPACE = "_ray_internal_"


def job_row(entry: Any) -> dict[str, Any]:
    """One ``JobTableData`` as the fields raytop uses (times in ms, 0: not set)."""
    metadata = dict(entry.config.metadata)
    return {
        "job_id": entry.job_id.hex(),
        "dead": bool(entry.is_dead),
        "driver_pid": int(entry.driver_pid),
        "driver_ip": entry.driver_address.ip_address or entry.driver_ip_address,
        "start_ms": int(entry.start_time),
        "end_ms": int(entry.end_time),
        "entrypoint": entry.entrypoint,
        "submission_id": metadata.get(SUBMISSION_ID_KEY),
        "namespace": entry.config.ray_namespace,
    }


def submission_key(submission_id: str) -> str:
    """The KV key (namespace ``JOB_INFO_NAMESPACE``) of a submitted job's record."""
    return JOB_INFO_PREFIX + submission_id


def submission_ids(kv: Any) -> list[str]:
    """Every submitted job Ray keeps a record of, by submission id (a job whose
    entrypoint never connects to the cluster has no row in the job table)."""
    keys = kv.keys_from(JOB_INFO_NAMESPACE, JOB_INFO_PREFIX)
    return [key[len(JOB_INFO_PREFIX) :] for key in keys if key.startswith(JOB_INFO_PREFIX)]


def submission_records(kv: Any, submission_ids: list[str]) -> dict[str, bytes]:
    """The raw JSON records of ``submission_ids`` that Ray has (by submission id), in one
    KV call."""
    keys = [submission_key(s) for s in submission_ids]
    found = kv.multi_get_from(JOB_INFO_NAMESPACE, keys)
    return {key[len(JOB_INFO_PREFIX) :]: blob for key, blob in found.items()}
