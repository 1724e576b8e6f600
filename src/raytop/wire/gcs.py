"""The GCS from outside the cluster: nodes, placement groups, actors and the internal KV.

raytop never calls ``ray.init``: Ray ends a driver whose GCS stays unreachable for 60 s, and
a supervisor must outlive the cluster it watches. So these clients talk to the GCS directly,
with no driver job registered and milliseconds per call
(docs/RAY_FACTS.md#gcs-direct-reads), and fail fast with ``ClusterUnreachable`` when it is
gone. Each client checks the Ray line first (``wire.version``): the calls here are private
Ray APIs; and each read checks that this Ray has what it calls (``wire.capabilities``):
where it lacks something, the read raises ``RayLacks`` naming it instead of reading.
``ray_version`` is part of this face: a snapshot says which Ray read it.
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import Any

from raytop.model import Node
from raytop.model.identity import same_values
from raytop.wire import capabilities as caps
from raytop.wire.gcs_auth import auth_refusal
from raytop.wire.gcs_pubsub import Changes
from raytop.wire.gcs_rpc import GcsTables, NoAnswer, TooLarge, capped_channel
from raytop.wire.gcs_tables import (
    alive_actor_rows,
    alive_filter,
    available_per_node,
    node_rows,
    placement_group_rows,
)
from raytop.wire.jobs import job_row
from raytop.wire.kv_keys import KV_NAMESPACE
from raytop.wire.version import check_ray_version, import_ray, ray_version

__all__ = [
    "ClusterUnreachable",
    "GcsKv",
    "GcsReader",
    "KeptNodes",
    "RayLacks",
    "local_cluster_address",
    "nodes_from_gcs",
    "probe_tcp",
    "ray_version",
]


# Every read of the GCS's tables has this deadline (gRPC's own, ``wire.gcs_rpc``): a GCS
# that accepts the connection but does not answer (stopping, frozen, overloaded) is shown
# as not connected after it, and the next poll asks again on a new channel.
READ_DEADLINE_S = 10.0
# How long after a group is first read with its creator gone the groups are read at every
# refresh (``GcsReader.placement_groups``): Ray removes such a group moments later.
CREATOR_GONE_REREAD_S = 10.0


class ClusterUnreachable(RuntimeError):
    """No GCS answers at the address (or it stopped answering): the callers show the
    cluster as not connected and try again on their next poll."""


class RayLacks(ClusterUnreachable):
    """The installed Ray lacks a private API this read calls (``wire.capabilities``); the
    message is the warning naming it. Nothing was asked of the cluster, and asking again
    cannot help: its callers treat it as any unreadable cluster (no traceback), and the
    collector's warnings say what is missing (``pipeline.collect``)."""


def require(names: tuple[str, ...]) -> None:
    """``RayLacks`` unless this Ray has every capability in ``names``."""
    lack = caps.first_lack(names)
    if lack is not None:
        raise RayLacks(lack)


def unanswered(address: str, exc: Exception, what: str) -> ClusterUnreachable:
    """``exc`` from Ray's GCS client as one line; a GCS that refuses raytop for Ray's token
    authentication is said to (``wire.gcs_auth``), with what to set."""
    refusal = auth_refusal(address)
    return ClusterUnreachable(refusal or f"Ray cluster at {address}{what}: {exc}")


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


def probe_named(address: str) -> None:
    """``probe_tcp``, then whether the GCS refuses raytop for Ray's token authentication:
    for a cluster the user named, where that refusal is an error in one line, not a view
    of a cluster that never connects (``wire.gcs_auth``; ~2 ms once Ray is imported)."""
    probe_tcp(address)
    refusal = auth_refusal(address)
    if refusal is not None:
        raise ClusterUnreachable(refusal)


def local_cluster_address() -> str | None:
    """The GCS address of the cluster last started on this machine with ``ray start``."""
    require(caps.LOCAL_ADDRESS)
    import_ray()  # every first import of Ray here goes through it (its give-up time)
    # heavy: Ray (~1 s), only when the local cluster is looked up
    from ray._private import services

    return services.find_bootstrap_address(None)


class _OutsideClient:
    """What both clients start with: the Ray line checked (their calls are private Ray
    APIs) and no connection yet: it is made on first use, and dropped after a failure."""

    def __init__(self, address: str) -> None:
        check_ray_version()
        self.address = address
        self._client: Any = None


class GcsReader(_OutsideClient):
    """Reads nodes, actors and placement groups straight from the GCS (``wire.gcs_rpc``);
    makes a new channel after a failure.

    The tables come whole at every read (the GCS has no "what changed since"): a row whose
    serialized bytes did not change since the last read is not parsed again (its dict is
    reused: callers only read them). With ``follow`` (a raytop that reads again and again:
    the TUI, ``run --no-tui``) the actor and node tables are read again only once the GCS
    published a change of them, the placement groups then or every 5 s (``wire.gcs_pubsub``),
    and the last read is answered meanwhile; one-shot commands read everything, once."""

    def __init__(self, address: str, follow: bool = False) -> None:
        super().__init__(address)
        self._known_actors: dict[bytes, tuple[str, dict[str, Any]] | None] = {}
        self._known_groups: dict[bytes, dict[str, Any]] = {}
        self._known_nodes: dict[bytes, dict[str, Any]] = {}
        self._known_available: dict[bytes, Any] = {}  # a node's free resources, by its row
        self._follow = follow
        self._changes: Changes | None = None
        self._alive: dict[str, dict[str, Any]] | None = None  # the last actor read's
        self._node_rows: list[dict[str, Any]] | None = None  # the last node read's
        self._groups: list[dict[str, Any]] | None = None  # the last group read's
        # When each held group was first read with its creator gone (``placement_groups``).
        self._creator_gone_at: dict[str, float] = {}
        self.clock = time.monotonic

    def _tables(self) -> GcsTables:
        if self._client is None:
            self._client = GcsTables(self.address)
        return self._client

    def _read(self, table: str, needs: tuple[str, ...], parse: Any, request: Any = dict) -> Any:
        """``parse`` of ``table``'s serialized rows, asked with ``request()``'s fields, once
        this Ray has the capabilities it ``needs`` (checked after the socket: an address
        that does not answer costs no ``import ray``; and before the request is built of
        Ray's messages). Rows that do not parse fail the read as an unanswered one."""
        try:
            # Fail in milliseconds where nothing listens, not after gRPC's deadline.
            probe_tcp(self.address)
            require(needs)
            return parse(self._tables().rows(table, READ_DEADLINE_S, **request()))
        except Exception as exc:
            self.reset()
            if self._changes is not None:  # what is held may be stale from now on
                self._changes.lost()
            if isinstance(exc, ClusterUnreachable):
                raise
            if isinstance(exc, NoAnswer):  # no refusal to ask about: nothing answers
                raise ClusterUnreachable(
                    f"Ray cluster at {self.address} accepted the connection but did not "
                    f"answer in {READ_DEADLINE_S:g} s"
                ) from None
            if isinstance(exc, TooLarge):  # it answers: what it said is refused
                raise ClusterUnreachable(f"Ray cluster at {self.address}: {exc}") from None
            raise unanswered(self.address, exc, " stopped answering") from exc

    def reset(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None

    def close(self) -> None:
        """Stop following the GCS's changes (the collector's ``close``)."""
        if self._changes is not None:
            self._changes.close()
            self._changes = None
        self.reset()

    def _changed(self, table: str) -> bool:
        """Whether ``table`` is to be read whole now (``wire.gcs_pubsub``): always, unless
        this reader follows the GCS's changes and this Ray has its channels."""
        if self._changes is None:
            # Begun once a read answered: where nothing listens, no thread, no import.
            if not self._follow or self._client is None or not caps.has(caps.TABLE_CHANGES):
                return True
            self._changes = Changes(self._pubsub_channel)
            self._changes.start()
        return self._changes.changed(table)

    def _pubsub_channel(self) -> Any:
        """A channel of its own for the long polls (the reads' is made anew after a failure)."""
        return capped_channel(self.address)

    def placement_groups(self) -> list[dict[str, Any]]:
        # A group whose creator is gone is removed by Ray moments later, unannounced: for
        # CREATOR_GONE_REREAD_S after one is first read so, the groups are read again at
        # every refresh, or the view would call it leaked until the next read (as it did
        # for up to 5 s). One still held after that is a leak (``placement_leaked``), read
        # again at the usual pace: a leak that lasts does not cost a read every refresh.
        now = self.clock()
        if (self._changed("groups") or self._groups is None
                or any(now - at < CREATOR_GONE_REREAD_S
                       for at in self._creator_gone_at.values())):  # fmt: skip
            self._groups = None
            self._groups, self._known_groups = self._read(
                "groups", caps.PLACEMENT_GROUPS,
                lambda b: placement_group_rows(b, self._known_groups),
            )  # fmt: skip
            gone = self._creator_gone_at
            self._creator_gone_at = {
                g["pg_id"]: gone.get(g["pg_id"], now)
                for g in self._groups if g["creator_dead"] and not g["detached"]
            }  # fmt: skip
        return list(self._groups)

    def actors(self) -> dict[str, dict[str, Any]]:
        """Alive actors: ``{actor_id: {class_name, job_id, pid, node_id, address, owner}}``
        (address/owner as ``ip:port``, to tie an actor to the actor that created it).

        Filtered by state in the GCS: it keeps up to 100,000 dead actors
        (``maximum_gcs_destroyed_actor_cached_count``), and a sweep of thousands of trials
        leaves that many (its trial actors, controllers and workers); reading them all
        cost seconds a refresh (docs/PERFORMANCE.md, "Synthetic scale")."""
        if self._changed("actors") or self._alive is None:
            self._alive = None  # a read that fails holds nothing stale
            rows, self._known_actors = self._read(
                "actors", caps.ACTORS, lambda b: alive_actor_rows(b, self._known_actors),
                lambda: {"filters": alive_filter()},
            )  # fmt: skip
            self._alive = dict(row for row in rows if row is not None)
        return dict(self._alive)

    def nodes(self) -> list[dict[str, Any]]:
        """``[{node_id, address, alive, is_head, resources_total, resources_available,
        labels}]``."""
        if self._changed("nodes") or self._node_rows is None:
            self._node_rows = None
            self._node_rows, self._known_nodes = self._read(
                "nodes", caps.NODES, lambda b: node_rows(b, self._known_nodes)
            )
        available, self._known_available = self._read(
            "available", caps.NODES, lambda b: available_per_node(b, self._known_available)
        )
        return [{**row, "resources_available": available.get(row["node_id"], {})}
                for row in self._node_rows]  # fmt: skip


def nodes_from_gcs(rows: list[dict[str, Any]]) -> tuple[Node, ...]:
    """``GcsReader.nodes()``'s rows as ``model.Node``s: the one place their keys meet the
    model's fields (the collector's cluster and the reuse guard's both read it)."""
    return tuple(Node(**row) for row in rows)


class KeptNodes:
    """``nodes_from_gcs`` for a reader asked at every refresh: a row whose every value is
    the very object of the row it was made from last time (``GcsReader`` keeps a node's
    parsed row, and its figures of what is free, while their bytes are the same) is that
    very ``Node``. 500 nodes made again at each refresh were ~1.5 ms of one in which
    nothing changed (docs/PERFORMANCE.md, issue 25)."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[dict[str, Any], Node]] = {}  # node id → (row, Node)

    def of(self, rows: list[dict[str, Any]]) -> tuple[Node, ...]:
        made: dict[str, tuple[dict[str, Any], Node]] = {}
        nodes = []
        for row in rows:
            kept = self._made.get(row["node_id"])
            if kept is None or not same_values(kept[0], row):
                kept = (row, Node(**row))
            made[row["node_id"]] = kept
            nodes.append(kept[1])
        self._made = made
        return tuple(nodes)


# -- GCS internal KV: how raytop and the ledger talk without raytop joining the cluster ----
# The ledger actor publishes into the KV store; raytop reads (and posts commands) with a
# plain GcsClient. Inside the cluster the same store is reached through wire.cluster_kv.

KV_TIMEOUT_S = 2.0
JOB_TABLE_TIMEOUT_S = 5.0  # the whole job table, in one answer


class GcsKv(_OutsideClient):
    """Internal-KV reads and writes from outside the cluster, with short timeouts."""

    def _gcs(self) -> Any:
        if self._client is None:
            import_ray()
            # heavy: Ray (~1 s), only once a cluster is read
            import ray._raylet as raylet

            probe_tcp(self.address)
            self._client = raylet.GcsClient(address=self.address)
        return self._client

    def _call(
        self, fn: str, *args: Any, namespace: str = KV_NAMESPACE, timeout_s: float = KV_TIMEOUT_S
    ) -> Any:
        return self._invoke(fn, *args, namespace=namespace, timeout=timeout_s)

    def _invoke(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self._gcs(), fn)(*args, **kwargs)
        except ClusterUnreachable:
            self._client = None
            raise
        except Exception as exc:
            self._client = None
            raise unanswered(self.address, exc, ": KV read failed") from exc

    def get(self, key: str) -> bytes | None:
        require(caps.KV_GET)
        return self._call("internal_kv_get", key.encode())

    def get_from(self, namespace: str, key: str, timeout_s: float = KV_TIMEOUT_S) -> bytes | None:
        """A key of one of Ray's own namespaces (e.g. where its dashboard listens,
        ``wire.dashboard``), not raytop's."""
        require(caps.KV_GET)
        return self._call("internal_kv_get", key.encode(), namespace=namespace,
                          timeout_s=timeout_s)  # fmt: skip

    def multi_get(self, keys: list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        require(caps.KV_MULTI_GET)
        found = self._call("internal_kv_multi_get", [k.encode() for k in keys])
        return {k.decode(): v for k, v in found.items()}

    def multi_get_from(self, namespace: str, keys: list[str]) -> dict[str, bytes]:
        """Keys of one of Ray's own namespaces (its job submission records, ``wire.jobs``)."""
        if not keys:
            return {}
        require(caps.KV_MULTI_GET)
        found = self._call("internal_kv_multi_get", [k.encode() for k in keys],
                           namespace=namespace)  # fmt: skip
        return {k.decode(): v for k, v in found.items()}

    def keys_from(self, namespace: str, prefix: str) -> list[str]:
        """Keys of one of Ray's own namespaces under ``prefix``."""
        require(caps.KV_KEYS)
        found = self._call("internal_kv_keys", prefix.encode(), namespace=namespace)
        return [k.decode() for k in found]

    def job_table(self) -> list[dict[str, Any]]:
        """Every job the GCS knows (``wire.jobs.job_row``: drivers, alive or dead), with
        Ray's submission records left out of the call (``wire.jobs.submission_records``
        reads those of the jobs that need them, when this Ray's call can leave them out)."""
        require(caps.JOB_TABLE)
        skips = {"skip_submission_job_info_field": True, "skip_is_running_tasks_field": True}
        table = self._invoke("get_all_job_info", timeout=JOB_TABLE_TIMEOUT_S,
                             **(skips if caps.has(caps.JOB_TABLE_SKIPS) else {}))  # fmt: skip
        return [job_row(entry) for entry in table.values()]

    def put(self, key: str, value: bytes) -> None:
        require(caps.KV_PUT)
        self._call("internal_kv_put", key.encode(), value, True)
