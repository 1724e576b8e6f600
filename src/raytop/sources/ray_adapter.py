"""The only module that touches private Ray APIs (DESIGN decision 6).

Cluster reads go to the GCS directly, without ``ray.init``: no driver job is registered
and each call takes milliseconds (RAY_NOTES d, i). Every private call is checked against
the Ray line this code was verified on.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from typing import Any

VERIFIED_RAY_LINE = "2.58."


class RayUnsupported(RuntimeError):
    pass


class ClusterUnreachable(RuntimeError):
    pass


def ray_version() -> str:
    import ray

    return ray.__version__


def check_ray_version() -> None:
    version = ray_version()
    if not version.startswith(VERIFIED_RAY_LINE):
        raise RayUnsupported(
            f"raytop reads Ray internals verified on Ray {VERIFIED_RAY_LINE}x; found Ray {version}"
        )


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterUnreachable(f"not a GCS address (host:port): {address!r}")
    return host, int(port)


def probe_tcp(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast (seconds, not Ray's 15 s of retries) when nothing listens there."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ClusterUnreachable(f"cannot reach a Ray cluster at {address}: {exc}") from exc


def local_cluster_address() -> str | None:
    """The GCS address of the cluster last started on this machine with ``ray start``."""
    from ray._private import services

    return services.find_bootstrap_address(None)


class GcsReader:
    """Reads nodes and resources straight from the GCS; reconnects after a failure."""

    def __init__(self, address: str) -> None:
        check_ray_version()
        self.address = address
        self._state: Any = None

    def _global_state(self) -> Any:
        if self._state is None:
            import ray._raylet as raylet
            from ray._private.state import GlobalState

            state = GlobalState()
            options = raylet.GcsClientOptions.create(
                self.address, None, allow_cluster_id_nil=True, fetch_cluster_id_if_nil=False
            )
            state._initialize_global_state(options)
            self._state = state
        return self._state

    def _call(self, fn: str, *args: Any) -> Any:
        return self._call_with_state(lambda state: getattr(state, fn)(*args))

    def _call_with_state(self, read: Any) -> Any:
        try:
            # A dead GCS can make the accessor wait; check the socket before every read.
            probe_tcp(self.address)
            return read(self._global_state())
        except Exception as exc:
            # Drop the client at once: Ray's GCS client ends the whole process when the
            # GCS stays unreachable for 60 s (gcs_rpc_server_reconnect_timeout_s).
            self.reset()
            if isinstance(exc, ClusterUnreachable):
                raise
            raise ClusterUnreachable(
                f"Ray cluster at {self.address} stopped answering: {exc}"
            ) from exc

    def reset(self) -> None:
        if self._state is not None:
            with contextlib.suppress(Exception):
                self._state.disconnect()
        self._state = None

    def placement_groups(self) -> list[dict[str, Any]]:
        return self._call_with_state(placement_groups_from)

    def actors(self) -> dict[str, dict[str, Any]]:
        """Alive actors: ``{actor_id: {class_name, job_id, pid, node_id, address, owner}}``
        (address/owner as ``ip:port``, to tie an actor to the actor that created it)."""
        table = self._call("actor_table", None)
        return {
            actor_id: {
                "class_name": a["ActorClassName"],
                "job_id": a["JobID"],
                "pid": a["Pid"],
                "node_id": a["Address"]["NodeID"],
                "address": f"{a['Address']['IPAddress']}:{a['Address']['Port']}",
                "owner": f"{a['OwnerAddress']['IPAddress']}:{a['OwnerAddress']['Port']}",
            }
            for actor_id, a in table.items()
            if a["State"] == "ALIVE"
        }

    def nodes(self) -> list[dict[str, Any]]:
        """``[{node_id, address, alive, is_head, resources_total, resources_available,
        labels}]``."""
        table = self._call("node_table")
        available = self._call("available_resources_per_node")
        nodes = []
        for row in table:
            node_id = row["NodeID"]
            total = {k: float(v) for k, v in row.get("Resources", {}).items()}
            nodes.append(
                {
                    "node_id": node_id,
                    "address": row.get("NodeManagerAddress", ""),
                    "alive": bool(row.get("Alive")),
                    "is_head": "node:__internal_head__" in total,
                    "resources_total": total,
                    "resources_available": {
                        k: float(v) for k, v in available.get(node_id, {}).items()
                    },
                    "labels": dict(row.get("Labels", {})),
                }
            )
        return nodes


# -- GCS internal KV: how raytop and the ledger talk without raytop joining the cluster ----
# raytop never calls ray.init: a driver whose GCS stays unreachable for 60 s is ended by
# Ray's client, and a supervisor must outlive the cluster it watches. The ledger actor
# publishes into the KV store; raytop reads (and posts commands) with a plain GcsClient.

KV_NAMESPACE = "raytop"
KV_TIMEOUT_S = 2.0


class GcsKv:
    """Internal-KV reads and writes from outside the cluster, with short timeouts."""

    def __init__(self, address: str) -> None:
        check_ray_version()
        self.address = address
        self._client: Any = None

    def _gcs(self) -> Any:
        if self._client is None:
            import ray._raylet as raylet

            probe_tcp(self.address)
            self._client = raylet.GcsClient(address=self.address)
        return self._client

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._gcs(), fn)(*args, namespace=KV_NAMESPACE, timeout=KV_TIMEOUT_S)
        except ClusterUnreachable:
            self._client = None
            raise
        except Exception as exc:
            self._client = None
            raise ClusterUnreachable(
                f"Ray cluster at {self.address}: KV read failed: {exc}"
            ) from exc

    def get(self, key: str) -> bytes | None:
        return self._call("internal_kv_get", key.encode())

    def multi_get(self, keys: list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        found = self._call("internal_kv_multi_get", [k.encode() for k in keys])
        return {k.decode(): v for k, v in found.items()}

    def keys(self, prefix: str) -> list[str]:
        return [k.decode() for k in self._call("internal_kv_keys", prefix.encode())]

    def put(self, key: str, value: bytes) -> None:
        self._call("internal_kv_put", key.encode(), value, True)


def kv_put_in_cluster(key: str, value: bytes) -> None:
    """From inside a Ray process (the ledger actor)."""
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(key.encode(), value, overwrite=True, namespace=KV_NAMESPACE)


def kv_get_in_cluster(key: str) -> bytes | None:
    """From inside a Ray process (a probe's flush thread)."""
    from ray.experimental import internal_kv

    return internal_kv._internal_kv_get(key.encode(), namespace=KV_NAMESPACE)


# -- Train V2 worker internals: the hooks and the identity of the worker group -----------


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


def train_worker_identity() -> dict[str, Any]:
    """Who this Train worker is. ``attempt_id`` is the id of the worker group's
    synchronization actor: every restart or resize creates a new one."""
    import ray
    from ray.train.v2._internal.execution.context import get_train_context

    ctx = get_train_context()
    runtime = ray.get_runtime_context()
    return {
        "run_id": ctx.train_run_context.run_id,
        "run_name": ctx.get_experiment_name(),
        "attempt_id": ctx.execution_context.synchronization_actor._actor_id.hex(),
        "world_rank": ctx.get_world_rank(),
        "world_size": ctx.get_world_size(),
        "local_rank": ctx.get_local_rank(),
        "node_rank": ctx.get_node_rank(),
        "node_id": runtime.get_node_id(),
        "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        "placement_group_id": runtime.get_placement_group_id(),
        "run_path": str(ctx.storage_context.experiment_fs_path),
    }


def kv_del_in_cluster(key: str) -> None:
    from ray.experimental import internal_kv

    internal_kv._internal_kv_del(key.encode(), namespace=KV_NAMESPACE)


def _hex(raw: bytes) -> str:
    return raw.hex()


def _has_id(raw: bytes) -> bool:
    """Ray's nil ids are all 0xff bytes."""
    return bool(raw) and raw != b"\xff" * len(raw)


def placement_groups_from(state: Any) -> list[dict[str, Any]]:
    """Every placement group with what ``placement_group_table()`` leaves out: the creator
    job and actor (and whether they died), detached, and the creation time."""
    from ray.core.generated import common_pb2, gcs_pb2

    states = {
        v.number: v.name
        for v in gcs_pb2.PlacementGroupTableData.PlacementGroupState.DESCRIPTOR.values
    }
    strategies = {v.number: v.name for v in common_pb2.PlacementStrategy.DESCRIPTOR.values}
    sched = gcs_pb2.PlacementGroupStats.SchedulingState.DESCRIPTOR.values_by_number
    groups = []
    for blob in state._connect_and_get_accessor().get_placement_group_table():
        pg = gcs_pb2.PlacementGroupTableData.FromString(blob)
        groups.append(
            {
                "pg_id": _hex(pg.placement_group_id),
                "name": pg.name,
                "strategy": strategies.get(pg.strategy, str(pg.strategy)),
                "state": states.get(pg.state, str(pg.state)),
                "scheduling_state": sched[pg.stats.scheduling_state].name,
                "attempts": pg.stats.scheduling_attempt,
                "created_at": pg.placement_group_creation_timestamp_ms / 1000.0 or None,
                "creator_job_id": _hex(pg.creator_job_id),
                "creator_actor_id": _hex(pg.creator_actor_id),
                # A group made by a driver has no creator actor, and Ray marks that "dead".
                "creator_dead": bool(
                    pg.creator_job_dead or (_has_id(pg.creator_actor_id) and pg.creator_actor_dead)
                ),
                "detached": pg.is_detached,
                "bundles": [
                    {
                        "index": b.bundle_id.bundle_index,
                        "resources": {k: float(v) for k, v in b.unit_resources.items()},
                        "node_id": _hex(b.node_id) or None,
                    }
                    for b in pg.bundles
                ],
            }
        )
    return groups


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


def upload_call_details(max_depth: int = 12) -> dict[str, Any] | None:
    """Inside ``on_checkpoint_transfer``: the checkpoint being uploaded, read from the
    caller's frame (Train's ``TrainContext._upload_checkpoint``; verified on 2.58): its
    destination folder name, its local files, whether a custom upload function is used."""
    local = _caller_locals("_upload_checkpoint", "checkpoint_dir_name", max_depth)
    if local is None:
        return None
    checkpoint = local.get("checkpoint")
    return {
        "dir_name": local["checkpoint_dir_name"],
        "local_path": getattr(checkpoint, "path", None),
        "custom_upload": local.get("checkpoint_upload_fn") is not None,
    }


def report_call_details(max_depth: int = 12) -> dict[str, Any] | None:
    """Inside ``on_checkpoint_sync``: the ``report`` call it belongs to, read from Train's
    ``TrainContext.report`` frame (verified on 2.58): the upload mode asked for and the
    local folder of the attached checkpoint (None: this rank attached none)."""
    local = _caller_locals("report", "checkpoint_upload_mode", max_depth)
    if local is None:
        return None
    mode = local["checkpoint_upload_mode"]
    checkpoint = local.get("checkpoint")
    return {
        "mode": str(getattr(mode, "name", mode)).upper(),
        "local_path": getattr(checkpoint, "path", None) if checkpoint else None,
    }
