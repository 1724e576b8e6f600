"""What the installed Ray has of the private APIs raytop calls: one check per API, by what
Ray has (a module that imports, an attribute, a parameter, a protobuf field), never by its
version string.

``wire.version`` gates the Ray line (2.58, 2.59 and 2.60 were verified; another is refused
unless ``RAYTOP_ANY_RAY=1``). A line number cannot say what an unverified Ray lacks, and a
private API may change in any release. So the readers ask here before they call Ray: where
this Ray lacks what a read needs, the read is not attempted, and the snapshot's warnings
name the missing piece ("this Ray (2.61.0) has no GcsClient.internal_kv_keys: …"), where
the read would otherwise end in an AttributeError deep inside Ray, or in a reading that
is silently empty. Where the supported lines differ in an API raytop reads, the code path
is chosen by what this Ray has (``choice`` capabilities: both paths are whole, no warning).

Each check runs once per process (``has`` is memoised: the installed Ray does not change
under a running raytop), imports Ray through ``wire.version.import_ray`` (its GCS give-up
time), and counts an import that fails, or any error while checking, as lacking.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raytop.wire.gcs_rpc import TABLES
from raytop.wire.version import import_ray, ray_version

Check = Callable[[], bool]


@dataclass(frozen=True)
class Capability:
    """One private Ray API: ``name`` as warnings name it, what raytop cannot do
    without it (``without``), and how to tell whether this Ray has it (``check``).
    A ``choice`` picks between two whole code paths: lacking it is no loss."""

    name: str
    without: str
    check: Check
    choice: bool = False


def _resolve(module: str, path: str) -> Any:
    import_ray()
    found: Any = importlib.import_module(module)
    for part in path.split(".") if path else ():
        found = getattr(found, part)
    return found


def _attribute(module: str, path: str, *params: str) -> Check:
    """``module``'s ``path`` (dotted attributes) exists and, with ``params``, is a
    callable whose signature names every one of them."""

    def check() -> bool:
        found = _resolve(module, path)
        return not params or set(params) <= set(inspect.signature(found).parameters)

    return check


def _field(module: str, message: str, field: str) -> Check:
    """The protobuf message ``module.message`` has the field ``field``."""
    return lambda: field in _resolve(module, message).DESCRIPTOR.fields_by_name


def _defined(module: str, cls: str, method: str) -> Check:
    """``module`` defines ``cls.method``, read from its source without importing it: Ray's
    dashboard modules run in the dashboard head, and importing one here costs a second and
    pulls its web server's packages into raytop's process."""

    def check() -> bool:
        import_ray()
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            return False
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        return any(
            isinstance(node, ast.ClassDef) and node.name == cls
            and any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == method
                    for f in node.body)
            for node in tree.body
        )  # fmt: skip

    return check


CAPABILITIES: dict[str, Capability] = {}


def _add(name: str, without: str, check: Check, choice: bool = False) -> str:
    CAPABILITIES[name] = Capability(name, without, check, choice)
    return name


def _fields(module: str, message: str, fields: Iterable[str], without: str) -> tuple[str, ...]:
    """One capability per field raytop reads of a protobuf message (``a.b`` for a field of
    a nested message type ``A.B``): a warning names the very field that is gone."""
    short = message.rsplit(".", 1)[-1]
    return tuple(_add(f"{short}.{f}", without, _field(module, message, f)) for f in fields)


RAYLET = "ray._raylet"
GCS_PB2 = "ray.core.generated.gcs_pb2"
COMMON_PB2 = "ray.core.generated.common_pb2"
# ``ray._raylet.GcsClient`` hands every attribute it lacks to its ``InnerGcsClient``
# (``__getattr__``): that class is where its methods and their parameters are found.
INNER_GCS_CLIENT = "InnerGcsClient"

# -- the GCS tables from outside the cluster (``wire.gcs.GcsReader``, ``wire.gcs_rpc``) --
GRPC_UTILS = "ray._private.grpc_utils"
GCS_SERVICE_PB2 = "ray.core.generated.gcs_service_pb2"
GCS_GRPC = "ray.core.generated.gcs_service_pb2_grpc"


def _reply(service: str, method: str, rows: str) -> Check:
    """The GCS service has ``method``, and its reply the status and ``rows`` fields."""

    def check() -> bool:
        found = _resolve(GCS_SERVICE_PB2, "DESCRIPTOR").services_by_name[service]
        reply = found.methods_by_name[method].output_type
        return {"status", rows} <= set(reply.fields_by_name)

    return check


def _table(table: str, without: str) -> tuple[str, ...]:
    """What one of ``wire.gcs_rpc``'s reads calls: the stub, the method and its reply."""
    service, method, request, rows = TABLES[table]
    return (
        _add(f"{service}Stub", without, _attribute(GCS_GRPC, f"{service}Stub")),
        _add(f"{method}", without, _reply(service, method, rows)),
        _add(request, without, _attribute(GCS_SERVICE_PB2, request)),
    )


_TABLES_WITHOUT = "nodes, actors and placement groups unreadable"
GCS_CHANNEL = (
    _add("init_grpc_channel", _TABLES_WITHOUT,
         _attribute(GRPC_UTILS, "init_grpc_channel", "address", "options")),
    *_fields(GCS_SERVICE_PB2, "GcsStatus", ("code", "message"), _TABLES_WITHOUT),
)  # fmt: skip
NODES = (
    *GCS_CHANNEL,
    *_table("nodes", "nodes unreadable"),
    *_table("available", "nodes unreadable"),
    _add("GcsNodeInfo.ALIVE", "nodes unreadable", _attribute(GCS_PB2, "GcsNodeInfo.ALIVE")),
    *_fields(GCS_PB2, "GcsNodeInfo", ("node_id", "node_manager_address", "state",
             "resources_total", "labels"), "nodes unreadable"),
    *_fields(GCS_PB2, "AvailableResources", ("node_id", "resources_available"),
             "nodes unreadable"),
)  # fmt: skip
_ACTORS_WITHOUT = "actors unreadable: runs with no probe, trial owners and drivers unknown"
ACTORS = (
    *GCS_CHANNEL,
    *_table("actors", _ACTORS_WITHOUT),
    *_fields(GCS_SERVICE_PB2, "GetAllActorInfoRequest", ("filters",), _ACTORS_WITHOUT),
    *_fields(GCS_SERVICE_PB2, "GetAllActorInfoRequest.Filters", ("state",), _ACTORS_WITHOUT),
    _add("ActorTableData.ALIVE", _ACTORS_WITHOUT, _attribute(GCS_PB2, "ActorTableData.ALIVE")),
    *_fields(GCS_PB2, "ActorTableData", ("actor_id", "state", "class_name", "job_id", "pid",
             "address", "owner_address", "placement_group_id"), _ACTORS_WITHOUT),
    *_fields(COMMON_PB2, "Address", ("node_id", "ip_address", "port"), _ACTORS_WITHOUT),
)  # fmt: skip
PUBSUB_PB2 = "ray.core.generated.pubsub_pb2"
# The GCS's actor and node channels, subscribed to as Ray's own subscribers do
# (``wire.gcs_pubsub``); without them a watching raytop reads both tables whole at every
# refresh, as it did before: a choice, no loss.
_PUBSUB_FIELDS = (
    (GCS_SERVICE_PB2, "GcsSubscriberCommandBatchRequest", ("subscriber_id", "commands")),
    (GCS_SERVICE_PB2, "GcsSubscriberPollRequest",
     ("subscriber_id", "max_processed_sequence_id", "publisher_id")),
    (GCS_SERVICE_PB2, "GcsSubscriberPollReply", ("pub_messages", "publisher_id")),
    (PUBSUB_PB2, "Command", ("channel_type", "subscribe_message", "unsubscribe_message")),
    (PUBSUB_PB2, "PubMessage", ("channel_type", "sequence_id")),
)  # fmt: skip
TABLE_CHANGES = _add(
    "the GCS's actor and node channels",
    "actors and nodes are read whole at every refresh",
    lambda: (
        _attribute(GCS_GRPC, "ControlPlanePubSubGcsServiceStub")()
        and all(_attribute(PUBSUB_PB2, c)() for c in ("GCS_ACTOR_CHANNEL", "GCS_NODE_INFO_CHANNEL"))
        and all(_field(m, msg, f)() for m, msg, fields in _PUBSUB_FIELDS for f in fields)
    ),
    choice=True,
)
_GROUPS_WITHOUT = "placement groups unreadable"
PLACEMENT_GROUPS = (
    *GCS_CHANNEL,
    *_table("groups", _GROUPS_WITHOUT),
    _add("PlacementGroupTableData.PlacementGroupState", _GROUPS_WITHOUT,
         _attribute(GCS_PB2, "PlacementGroupTableData.PlacementGroupState")),
    _add("PlacementGroupStats.SchedulingState", _GROUPS_WITHOUT,
         _attribute(GCS_PB2, "PlacementGroupStats.SchedulingState")),
    _add("PlacementStrategy", _GROUPS_WITHOUT, _attribute(COMMON_PB2, "PlacementStrategy")),
    *_fields(GCS_PB2, "PlacementGroupTableData", ("placement_group_id", "name", "strategy",
             "state", "stats", "placement_group_creation_timestamp_ms", "creator_job_id",
             "creator_actor_id", "creator_job_dead", "creator_actor_dead", "is_detached",
             "bundles"), _GROUPS_WITHOUT),
    *_fields(GCS_PB2, "PlacementGroupStats", ("scheduling_state", "scheduling_attempt"),
             _GROUPS_WITHOUT),
    *_fields(COMMON_PB2, "Bundle", ("bundle_id", "unit_resources", "node_id"), _GROUPS_WITHOUT),
    *_fields(COMMON_PB2, "Bundle.BundleIdentifier", ("bundle_index",), _GROUPS_WITHOUT),
)  # fmt: skip

# -- the GCS internal KV and job table from outside the cluster (``wire.gcs.GcsKv``) -----


def _kv(method: str, without: str, *params: str) -> str:
    return _add(f"GcsClient.{method}", without,
                _attribute(RAYLET, f"{INNER_GCS_CLIENT}.{method}", *params))  # fmt: skip


_KV_PARAMS = ("namespace", "timeout")
_CLIENT = _add("GcsClient", "cluster KV and job table unreadable", _attribute(RAYLET, "GcsClient"))
KV_GET = (_CLIENT, _kv("internal_kv_get", "cluster KV unreadable: no ledger index, no "
                       "dashboard address", "key", *_KV_PARAMS))  # fmt: skip
KV_MULTI_GET = (_CLIENT, _kv("internal_kv_multi_get", "cluster KV unreadable: no ledger pages, "
                             "trial registrations, job records or probe problems", "keys",
                             *_KV_PARAMS))  # fmt: skip
KV_KEYS = (_CLIENT, _kv("internal_kv_keys", "cluster KV unlisted: no submitted jobs that never "
                        "connected", "prefix", *_KV_PARAMS))  # fmt: skip
KV_PUT = (_CLIENT, _kv("internal_kv_put", "cluster KV unwritable: no stacks or Flight Recorder "
                       "requests", "key", "value", "overwrite", *_KV_PARAMS))  # fmt: skip
_JOBS_WITHOUT = "job table unreadable: no jobs, Tune drivers unknown"
JOB_TABLE = (
    _CLIENT,
    _kv("get_all_job_info", _JOBS_WITHOUT, "timeout"),
    *_fields(GCS_PB2, "JobTableData", ("job_id", "is_dead", "driver_pid", "driver_address",
             "driver_ip_address", "start_time", "end_time", "entrypoint", "config"),
             _JOBS_WITHOUT),
    *_fields(COMMON_PB2, "JobConfig", ("metadata", "ray_namespace"), _JOBS_WITHOUT),
)  # fmt: skip
# Asking the GCS to leave out what raytop does not read (each job's submission record and
# whether it runs tasks): without these parameters the table is read whole.
JOB_TABLE_SKIPS = _add(
    "GcsClient.get_all_job_info(skip_submission_job_info_field, skip_is_running_tasks_field)",
    "the job table is read whole", choice=True,
    check=_attribute(RAYLET, f"{INNER_GCS_CLIENT}.get_all_job_info",
                     "skip_submission_job_info_field", "skip_is_running_tasks_field"),
)  # fmt: skip
LOCAL_ADDRESS = (
    _add("services.find_bootstrap_address", "--address auto cannot find the local cluster",
         _attribute("ray._private.services", "find_bootstrap_address")),
)  # fmt: skip

# -- whether the GCS refuses raytop for Ray's token authentication (``wire.gcs_auth``) --
# Choices: without them nothing is asked, and a failure is said as it was.
_AUTH = "ray._private.authentication."
TOKEN_METADATA = (
    _add("authentication_utils.is_token_auth_enabled", "no token sent", choice=True,
         check=_attribute(_AUTH + "authentication_utils", "is_token_auth_enabled")),
    _add("grpc_authentication_client_interceptor._get_authentication_metadata_tuple",
         "no token sent", choice=True,
         check=_attribute(_AUTH + "grpc_authentication_client_interceptor",
                          "_get_authentication_metadata_tuple")),
)  # fmt: skip
CLUSTER_ID_CALL = (
    _add("NodeInfoGcsServiceStub.GetClusterId", "a token refusal is not told", choice=True,
         check=_attribute("ray.core.generated.gcs_service_pb2_grpc", "NodeInfoGcsServiceStub")),
    _add("GetClusterIdRequest", "a token refusal is not told", choice=True,
         check=_attribute("ray.core.generated.gcs_service_pb2", "GetClusterIdRequest")),
)  # fmt: skip

# -- Ray's dashboard head (``wire.dashboard``) -----------------------------------------
_CONSTANTS = "ray._private.ray_constants"
DASHBOARD_ADDRESS = tuple(
    _add(f"ray_constants.{name}", "dashboard address unreadable: no host figures of nodes "
         "elsewhere, no Train state, no stacks of workers elsewhere",
         _attribute(_CONSTANTS, name))
    for name in ("KV_NAMESPACE_DASHBOARD", "DASHBOARD_ADDRESS")
)  # fmt: skip
TRAIN_RUNS = (
    _add("TrainHead.get_train_v2_runs", "Train's own state of its runs unreadable: runs with "
         "no probe are what the actor table says",
         _defined("ray.dashboard.modules.train.train_head", "TrainHead", "get_train_v2_runs")),
)  # fmt: skip
TRACEBACK = (
    _add("ReportHead.get_traceback", "no stacks of workers with no probe on other nodes",
         _defined("ray.dashboard.modules.reporter.reporter_head", "ReportHead",
                  "get_traceback")),
)  # fmt: skip

# Everything raytop's readers outside the cluster call (``pipeline.collect`` warns of
# what this Ray lacks of them, once a collector reads a cluster).
READING = tuple(dict.fromkeys((
    *NODES, *ACTORS, *PLACEMENT_GROUPS, *KV_GET, *KV_MULTI_GET, *KV_KEYS, *KV_PUT,
    *JOB_TABLE, *DASHBOARD_ADDRESS, *TRAIN_RUNS, *TRACEBACK,
)))  # fmt: skip

# -- inside the cluster: the KV store (``wire.cluster_kv``), Tune's schedulers
# (``wire.tune_schedulers``) and Train's internals the probes read (``wire.train_hooks``)
IN_CLUSTER_KV = tuple(
    _add(f"internal_kv.{name}", "the ledger cannot publish, probes cannot read requests",
         _attribute("ray.experimental.internal_kv", name, "namespace"))
    for name in ("_internal_kv_put", "_internal_kv_get", "_internal_kv_del")
)  # fmt: skip
_ASHA = "ray.tune.schedulers.async_hyperband"
ASHA_RUNG = (
    _add("_Bracket.cutoff", "ASHA's decisions are told without their rung's cutoff",
         _attribute(_ASHA, "_Bracket.cutoff")),
)  # fmt: skip
_MEDIAN = "ray.tune.schedulers.median_stopping_rule"
MEDIAN_COMPARISON = tuple(
    _add(f"MedianStoppingRule.{name}", "median stopping decisions are told without the median",
         _attribute(_MEDIAN, f"MedianStoppingRule.{name}"))
    for name in ("_trials_beyond_time", "_running_mean", "_best_result")
)  # fmt: skip
# Ray 2.58 and 2.59 compare against ``_median_result`` (the median of every running mean);
# Ray 2.60 has none: it takes the median of the finite running means inline.
MEDIAN_RESULT = _add("MedianStoppingRule._median_result", "the median of the finite running "
                     "means is taken, as Ray does without it", choice=True,
                     check=_attribute(_MEDIAN, "MedianStoppingRule._median_result"))  # fmt: skip
_CONTEXT = "ray.train.v2._internal.execution.context"
# The frames the probe reads the arguments of (``wire.train_hooks``): without them a
# report's upload mode, or an upload's folder, is not known.
REPORT_FRAME = _add("TrainContext.report(checkpoint, checkpoint_upload_mode)",
                    "report modes and barrier waits' checkpoints unknown",
                    _attribute(_CONTEXT, "TrainContext.report", "checkpoint",
                               "checkpoint_upload_mode"))  # fmt: skip
UPLOAD_FRAME = _add("TrainContext._upload_checkpoint(checkpoint_dir_name, checkpoint, "
                    "checkpoint_upload_fn)", "checkpoint uploads uncounted",
                    _attribute(_CONTEXT, "TrainContext._upload_checkpoint", "checkpoint_dir_name",
                               "checkpoint", "checkpoint_upload_fn"))  # fmt: skip

# The frames inside ``TrainContext.report`` that tell its parts apart (``wire.train_frames``):
# without them a rank's time in report is one share, not barrier, upload and the wait for
# the controller.
REPORT_PARTS = _add("TrainContext._sync_checkpoint_dir_name_across_ranks, _upload_checkpoint "
                    "and _wait_then_report", "train.report's time is not split into its parts",
                    lambda: all(_attribute(_CONTEXT, f"TrainContext.{name}")() for name in (
                        "_sync_checkpoint_dir_name_across_ranks", "_upload_checkpoint",
                        "_wait_then_report")))  # fmt: skip


@functools.cache
def has(name: str) -> bool:
    """Whether the installed Ray has the capability ``name`` (a key of ``CAPABILITIES``)."""
    try:
        return bool(CAPABILITIES[name].check())
    except Exception:
        return False


def lacking(names: Iterable[str]) -> list[str]:
    """One warning for each of ``names`` this Ray lacks (choices aside), in their order:
    "this Ray (2.61.0) has no GcsClient.internal_kv_keys: cluster KV unlisted: …"."""
    missing = [CAPABILITIES[n] for n in dict.fromkeys(names) if not has(n)]
    return [f"this Ray ({ray_version()}) has no {c.name}: {c.without}"
            for c in missing if not c.choice]  # fmt: skip


def first_lack(names: Iterable[str]) -> str | None:
    """The warning of the first of ``names`` this Ray lacks, or None: what a read that
    needs all of them says instead of reading."""
    return next(iter(lacking(names)), None)
