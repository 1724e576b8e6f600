"""Train V2's worker internals the ReportProbe stands on: its hook classes, the identity of
the worker group, and the arguments of the Train calls its hooks wrap.

All of it is internal Ray API (RAY_NOTES h), so it is reached only here and only after
``check_ray_version`` has passed (the probe gets its base classes first). The records
returned are this module's own: the probe turns them into what it sends
(``model.records``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from raytop.wire.version import check_ray_version


def train_worker_callback_bases() -> tuple[type, type]:
    """(WorkerCallback, TrainContextCallback): DeveloperAPI classes from Train V2's
    internal package. A probe deriving from both gets ``after_init_train_context`` /
    ``before_worker_shutdown`` and the ``on_report`` / ``on_checkpoint_*`` context
    managers inside every worker (RAY_NOTES h)."""
    check_ray_version()
    from ray.train.v2._internal.execution.callback import (
        TrainContextCallback,
        WorkerCallback,
    )

    return WorkerCallback, TrainContextCallback


@dataclass(frozen=True)
class WorkerIdentity:
    """Who a Train worker is. ``attempt_id`` is the id of the worker group's
    synchronization actor: every restart or resize creates a new one."""

    run_id: str
    run_name: str
    attempt_id: str
    world_rank: int
    world_size: int
    local_rank: int
    node_rank: int
    node_id: str
    gpu_ids: list[str]
    placement_group_id: str | None
    run_path: str
    # The logical resources Ray assigned this worker (``{"CPU": 1.0}``): what it declared,
    # which Ray does not enforce on the OS (RAY_NOTES 0): the faces show both.
    declared: dict[str, float]


def train_worker_identity() -> WorkerIdentity:
    """This Train worker's identity, from its train context and Ray's runtime context."""
    import ray
    from ray.train.v2._internal.execution.context import get_train_context

    ctx = get_train_context()
    runtime = ray.get_runtime_context()
    return WorkerIdentity(
        run_id=ctx.train_run_context.run_id,
        run_name=ctx.get_experiment_name(),
        attempt_id=ctx.execution_context.synchronization_actor._actor_id.hex(),
        world_rank=ctx.get_world_rank(),
        world_size=ctx.get_world_size(),
        local_rank=ctx.get_local_rank(),
        node_rank=ctx.get_node_rank(),
        node_id=runtime.get_node_id(),
        gpu_ids=[str(g) for g in ray.get_gpu_ids()],
        placement_group_id=runtime.get_placement_group_id(),
        run_path=str(ctx.storage_context.experiment_fs_path),
        declared={str(k): float(v) for k, v in runtime.get_assigned_resources().items()},
    )


def _caller_locals(function: str, key: str, max_depth: int) -> dict[str, Any] | None:
    """The locals of the nearest frame up the stack (from our caller's caller) running
    ``function`` and holding ``key``: how the probe sees the arguments of Train's internal
    calls that its hooks wrap."""
    frame = sys._getframe(2)
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code.co_name == function and key in frame.f_locals:
            return frame.f_locals
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class UploadCall:
    """The checkpoint one ``on_checkpoint_transfer`` uploads."""

    dir_name: str  # its destination folder's name
    local_path: str | None  # its local folder (the files this rank put in it)
    custom_upload: bool  # the user's upload function does the upload


def upload_call_details(max_depth: int = 12) -> UploadCall | None:
    """Inside ``on_checkpoint_transfer``: the checkpoint being uploaded, read from the
    caller's frame (Train's ``TrainContext._upload_checkpoint``; verified on 2.58)."""
    local = _caller_locals("_upload_checkpoint", "checkpoint_dir_name", max_depth)
    if local is None:
        return None
    checkpoint = local.get("checkpoint")
    return UploadCall(
        dir_name=local["checkpoint_dir_name"],
        local_path=getattr(checkpoint, "path", None),
        custom_upload=local.get("checkpoint_upload_fn") is not None,
    )


@dataclass(frozen=True)
class ReportCall:
    """The ``report`` call one ``on_checkpoint_sync`` belongs to."""

    mode: str  # the upload mode asked for: SYNC, ASYNC or NO_UPLOAD
    local_path: str | None  # the attached checkpoint's local folder (None: none attached)


def report_call_details(max_depth: int = 12) -> ReportCall | None:
    """Inside ``on_checkpoint_sync``: the ``report`` call it belongs to, read from Train's
    ``TrainContext.report`` frame (verified on 2.58)."""
    local = _caller_locals("report", "checkpoint_upload_mode", max_depth)
    if local is None:
        return None
    mode = local["checkpoint_upload_mode"]
    checkpoint = local.get("checkpoint")
    return ReportCall(
        mode=str(getattr(mode, "name", mode)).upper(),
        local_path=getattr(checkpoint, "path", None) if checkpoint else None,
    )
