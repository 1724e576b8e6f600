"""Train V2's worker internals the ReportProbe stands on: its hook classes, the identity of
the worker group, and the arguments of the Train calls its hooks wrap.

All of it is internal Ray API, so it is reached only here. The base classes are taken
when they import, whatever Ray's version says: the probe runs inside the user's workers,
and on a Ray line raytop does not list a refusal there would fail every Train job of a
cluster that names the probe in ``RAY_TRAIN_CALLBACKS``; its hooks guard themselves
(no probe is better than a broken worker); the frames they read are read only on a Ray
whose Train calls have those arguments (``wire.capabilities``: ``REPORT_FRAME``,
``UPLOAD_FRAME``). The records returned are this module's own: the probe turns them
into what it sends (``model.records``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from raytop.model.records import (
    DETECTOR_OFF,
    DETECTOR_ON,
    DETECTOR_UNAVAILABLE,
    FAILURE_DEFAULTS,
    HangDetectorRecord,
)
from raytop.wire import capabilities as caps
from raytop.wire.cluster_kv import kv_put_in_cluster
from raytop.wire.kv_keys import PROBE_PROBLEM_PREFIX


def train_worker_callback_bases() -> tuple[type, type]:
    """(WorkerCallback, TrainContextCallback): DeveloperAPI classes from Train V2's
    internal package. A probe deriving from both gets ``after_init_train_context`` /
    ``before_worker_shutdown`` and the ``on_report`` / ``on_checkpoint_*`` context
    managers inside every worker (docs/RAY_FACTS.md#train-worker-callbacks)."""
    # heavy: Ray Train, only in the Ray process that loads the probe
    from ray.train.v2._internal.execution.callback import (
        TrainContextCallback,
        WorkerCallback,
    )

    return WorkerCallback, TrainContextCallback


def hooks_ray_lacks(hooks: tuple[str, ...]) -> list[str]:
    """The hooks in ``hooks`` that Train's callback bases do not have on this Ray: Ray
    would never call them (capability, not version: the same five on 2.58, 2.59 and
    2.60). An import failure counts every hook as lacking."""
    try:
        bases = train_worker_callback_bases()
    except Exception:
        return list(hooks)
    return [hook for hook in hooks if not any(hasattr(base, hook) for base in bases)]


def file_probe_problem(problem: str) -> None:
    """From inside a Train process: file why the probe cannot count in this job
    (``model.records.ProbeProblem`` under ``probe/problem/<job id>``) for raytop to show
    on the job's runs. Never raises."""
    try:
        import ray  # only inside a Train process, which has it imported already

        if not ray.is_initialized():
            return
        job_id = ray.get_runtime_context().get_job_id()
        record = {"ray": ray.__version__, "problem": problem[:300], "sent_at": time.time()}
        kv_put_in_cluster(PROBE_PROBLEM_PREFIX + job_id, json.dumps(record).encode())
    except Exception:
        pass


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
    # which Ray does not enforce on the OS (docs/RAY_FACTS.md#logical-resources): the faces
    # show both.
    declared: dict[str, float]
    # The folder name of the checkpoint Train gave this worker group to start from
    # (``ray.train.get_checkpoint()``), None when it started fresh: matched against the
    # run's checkpoint snapshot, it tells what a restart restored, even across controllers.
    restored_from: str | None


def _folder_name(path: Any) -> str | None:
    name = str(path).rstrip("/").rsplit("/", 1)[-1] if path else ""
    return name or None


def train_worker_identity() -> WorkerIdentity:
    """This Train worker's identity, from its train context and Ray's runtime context."""
    # heavy: Ray Train, already loaded in the Train worker this runs in
    import ray
    from ray.train.v2._internal.execution.context import get_train_context

    ctx = get_train_context()
    runtime = ray.get_runtime_context()
    checkpoint = ray.train.get_checkpoint()
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
        restored_from=_folder_name(getattr(checkpoint, "path", None)) if checkpoint else None,
    )


def training_thread_id() -> int | None:
    """The thread Train V2 runs the user's train function in (its ``ThreadRunner`` names
    it ``TrainingThread(<fn>)``, thread_runner.py, verified on 2.58), before it first
    calls ``report``; None when there is none (yet)."""
    for thread in threading.enumerate():
        if thread.name.startswith("TrainingThread("):
            return thread.ident
    return None


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
    if not caps.has(caps.UPLOAD_FRAME):
        return None
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
    if not caps.has(caps.REPORT_FRAME):
        return None
    local = _caller_locals("report", "checkpoint_upload_mode", max_depth)
    if local is None:
        return None
    mode = local["checkpoint_upload_mode"]
    checkpoint = local.get("checkpoint")
    return ReportCall(
        mode=str(getattr(mode, "name", mode)).upper(),
        local_path=getattr(checkpoint, "path", None) if checkpoint else None,
    )


# -- the controller side (RunProbe) ---------------------------------------------------------


def train_controller_callback_bases() -> tuple[type, type, type]:
    """(ControllerCallback, WorkerGroupCallback, ReportCallback): DeveloperAPI classes from
    Train V2's internal package, all run in the controller. ``ray.train.UserCallback`` is
    not enough: it sees reports and worker exceptions but no attempt starting or ending,
    and Train routes a ``UserCallback`` only to its own handler, so one object cannot be a
    ``UserCallback`` and a ``ControllerCallback`` at once (data_parallel_trainer.py:235-254).
    A probe deriving from these gets ``after_controller_start``,
    ``after_controller_state_update`` (every state change, with the error that caused a
    restart), ``after_worker_group_start`` and ``after_report`` (controller.py:159-189)."""
    # heavy: Ray Train, only in the Ray process that loads the probe
    from ray.train.v2._internal.execution.callback import (
        ControllerCallback,
        ReportCallback,
        WorkerGroupCallback,
    )

    return ControllerCallback, WorkerGroupCallback, ReportCallback


@dataclass(frozen=True)
class RunIdentity:
    """A Train run as its controller knows it, with its failure settings."""

    run_id: str
    run_name: str
    # max_failures, controller_failure_limit, max_preemption_failures (-1: unlimited)
    failure_config: dict[str, int]


def train_run_identity(train_run_context: Any) -> RunIdentity:
    """From the ``TrainRunContext`` given to ``after_controller_start`` (verified on 2.58:
    ``run_id``, ``run_config.name``, ``run_config.failure_config``)."""
    run_config = train_run_context.run_config
    failure = getattr(run_config, "failure_config", None)
    config = {}
    for key, default in FAILURE_DEFAULTS.items():
        value = getattr(failure, key, default) if failure is not None else default
        config[key] = value if isinstance(value, int) and not isinstance(value, bool) else default
    return RunIdentity(
        run_id=str(train_run_context.run_id), run_name=str(run_config.name), failure_config=config
    )


@dataclass(frozen=True)
class StateChange:
    """One controller state as the probe needs it: its name (``RUNNING``, ``RESTARTING``…;
    a ``SHUTTING_DOWN`` state is named after where it goes: ``ERRORED`` or ``FINISHED``)
    and the error that caused it, if any."""

    name: str
    error: BaseException | None


def controller_state(state: Any) -> StateChange:
    """A ``TrainControllerState`` (controller/state.py, verified on 2.58)."""
    shutting_down = getattr(state, "next_state", None)
    if shutting_down is not None:
        state = shutting_down
    kind = getattr(state, "_state_type", None)
    name = getattr(kind, "state_name", None) or type(state).__name__
    return StateChange(name=str(name), error=getattr(state, "training_failed_error", None))


@dataclass(frozen=True)
class FailureDetails:
    failure_class: str | None  # worker, controller, preemption (model.records.FAILURE_CLASSES)
    error_class: str  # the underlying exception's class
    message: str  # its message, whole (the probe cuts it)
    # The controller could not load what a rank sent it (a reported metric, the train
    # function's result): Train's health check got Ray's deserialization error
    # (``RaySystemError``, serialization.py) instead of the worker's status.
    undeliverable: bool = False


def failure_details(error: BaseException) -> FailureDetails:
    """Which retry budget Train's default failure policy charges ``error`` to
    (failure_handling/default.py:93-140) and its underlying exception: the lowest failing
    rank's for a ``WorkerGroupError``, the controller's for a ``ControllerError``."""
    # heavy: Ray Train, only where a Train failure is explained
    from ray.exceptions import RaySystemError
    from ray.train.v2._internal.exceptions import WorkerHealthCheckFailedError
    from ray.train.v2._internal.execution.failure_handling.default import (
        RETRYABLE_CONTROLLER_ERRORS,
        _is_preemption_failure,
    )
    from ray.train.v2.api.exceptions import ControllerError, PreemptionError, WorkerGroupError

    inner: BaseException = error
    if isinstance(error, WorkerGroupError) and error.worker_failures:
        inner = error.worker_failures[min(error.worker_failures)]
    elif isinstance(error, ControllerError):
        inner = error.controller_failure
    if isinstance(error, PreemptionError) or _is_preemption_failure(error):
        failure_class: str | None = "preemption"
    elif isinstance(error, WorkerGroupError):
        failure_class = "worker"
    elif isinstance(error, ControllerError) and isinstance(
        error.controller_failure, RETRYABLE_CONTROLLER_ERRORS
    ):
        failure_class = "controller"
    else:
        failure_class = None
    undeliverable = isinstance(inner, WorkerHealthCheckFailedError) and isinstance(
        getattr(inner, "health_check_failure", None), RaySystemError
    )
    return FailureDetails(failure_class, type(inner).__name__, str(inner), undeliverable)


def worker_group_attempt_id(worker_group: Any) -> str | None:
    """The id the ReportProbes of this worker group file their pages under (its
    synchronization actor's, ``WorkerIdentity.attempt_id``)."""
    state = getattr(worker_group, "_worker_group_state", None)
    actor = getattr(state, "sync_actor", None)
    actor_id = getattr(actor, "_actor_id", None)
    return actor_id.hex() if actor_id is not None else None


def report_has_checkpoint(training_report: Any) -> bool:
    """Whether a ``_TrainingReport`` (``ReportCallback.after_report``) carries a checkpoint."""
    return getattr(training_report, "checkpoint", None) is not None


# Ray 2.60's NCCL hang detector (ray/train/v2/_internal/callbacks/nccl_ras.py): its module,
# class and the attributes its ``__init__`` sets from the settings it parsed.
NCCL_RAS_MODULE = "ray.train.v2._internal.callbacks.nccl_ras"
NCCL_RAS_CLASS = "NCCLRASCallback"


def nccl_hang_detector(worker_group: Any) -> tuple[HangDetectorRecord | None, Any]:
    """(Ray's NCCL hang detector on this run, the detector itself or None) from the
    callbacks of a worker group (``after_worker_group_start``).

    Ray decides in the process that calls ``trainer.fit()`` (the driver, or a Tune trial's
    actor): ``DataParallelTrainer._create_default_callbacks`` adds ``NCCLRASCallback()``
    when ``RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR`` is ``1``/``true`` there, and that
    ``__init__`` parses ``RAY_TRAIN_NCCL_RAS_ACTION`` (observe, the default, or fail),
    ``_MIN_POLL_INTERVAL_S`` (15) and ``_CONFIRM_DURATION_S`` (600) from the same
    environment. None of these variables is propagated to the controller
    (``ENV_VARS_TO_PROPAGATE``), so the controller's environment is no evidence: the
    object is. It travels to the controller with the other callbacks, which hands it to
    every worker group (``WorkerGroup._callbacks``; Ray 2.60.0,
    docs/RAY_FACTS.md#nccl-hang-detector). On a Ray without the module (2.58, 2.59) the
    detector is unavailable. (None, None): the callbacks could not be read."""
    callbacks = getattr(worker_group, "_callbacks", None)
    if not isinstance(callbacks, list):
        return None, None
    # heavy: Ray, already loaded in the Train controller this runs in
    import ray

    version = str(getattr(ray, "__version__", ""))[:40]
    for callback in callbacks:
        kind = type(callback)
        if kind.__name__ == NCCL_RAS_CLASS and kind.__module__ == NCCL_RAS_MODULE:
            record = HangDetectorRecord(
                state=DETECTOR_ON, ray=version, action=str(callback._action),
                poll_s=float(callback._poll_interval_s),
                confirm_s=float(callback._confirm_duration_s),
                disabled=nccl_hang_detector_disabled(callback),
            )  # fmt: skip
            return record, callback
    try:
        has_it = importlib.util.find_spec(NCCL_RAS_MODULE) is not None
    except (ImportError, ValueError):
        return None, None
    state = DETECTOR_OFF if has_it else DETECTOR_UNAVAILABLE
    return HangDetectorRecord(state=state, ray=version, action=None, poll_s=None,
                              confirm_s=None, disabled=False), None  # fmt: skip


def nccl_hang_detector_disabled(callback: Any) -> bool:
    """Ray turned its detector off for the rest of the run (``_is_ras_degraded``: the
    ``ncclras`` binary missing or older than NCCL 2.28, or an error of its own)."""
    return getattr(callback, "_is_ras_degraded", False) is True
