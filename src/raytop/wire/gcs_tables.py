"""The GCS's node, actor and placement group tables, row by row: Ray's serialized
protobufs (``gcs_pb2.GcsNodeInfo``, ``AvailableResources``, ``ActorTableData``,
``PlacementGroupTableData``) as the plain dicts raytop uses.

``wire.gcs.GcsReader`` asks the GCS for the rows (``wire.gcs_rpc``); the fields read here
are private Ray API, each one a capability of ``wire.capabilities`` (``NODES``,
``ACTORS``, ``PLACEMENT_GROUPS``) the reader checks before it reads.
"""

from __future__ import annotations

from typing import Any

from raytop.wire.version import import_ray


def _hex(raw: bytes) -> str:
    return raw.hex()


def _has_id(raw: bytes) -> bool:
    """Ray's nil ids are all 0xff bytes."""
    return bool(raw) and raw != b"\xff" * len(raw)


def _rows(blobs: list[bytes], parse: Any, known: dict[bytes, Any]) -> tuple[list, dict]:
    """Each serialized row parsed, except those whose bytes are in ``known`` (an earlier
    read's rows by their bytes): those are reused. Returns the rows and the new ``known``."""
    table = {}
    rows = []
    for blob in blobs:
        row = known[blob] if blob in known else parse(blob)
        table[blob] = row
        rows.append(row)
    return rows, table


def _pb2() -> Any:
    import_ray()
    # heavy: Ray's protobufs (~1 s), only once a cluster is read
    from ray.core.generated import gcs_pb2

    return gcs_pb2


def node_rows(blobs: list[bytes], known: dict[bytes, Any]) -> tuple[list, dict]:
    """Each ``GcsNodeInfo`` as ``{node_id, address, alive, is_head, resources_total,
    labels}``; a dead node's resources are empty, as Ray's own node table has them."""
    return _rows(blobs, _node_row, known)


def _node_row(blob: bytes) -> dict[str, Any]:
    gcs_pb2 = _pb2()
    info = gcs_pb2.GcsNodeInfo.FromString(blob)
    alive = info.state == gcs_pb2.GcsNodeInfo.ALIVE
    total = {k: float(v) for k, v in info.resources_total.items()} if alive else {}
    return {
        "node_id": info.node_id.hex(),
        "address": info.node_manager_address,
        "alive": alive,
        "is_head": "node:__internal_head__" in total,
        "resources_total": total,
        "labels": dict(info.labels),
    }


def available_per_node(
    blobs: list[bytes], known: dict[bytes, Any]
) -> tuple[dict[str, dict[str, float]], dict[bytes, Any]]:
    """``{node id: {resource: available}}`` from ``AvailableResources`` rows, and the new
    ``known`` (``_rows``): a node whose row has the very bytes of the last read keeps its
    parsed figures (the same dict: not to be changed). Read at every refresh (the nodes'
    channel says nothing of what they hold free), 500 nodes' rows parsed again were ~1.5 ms
    of a refresh in which nothing changed (docs/PERFORMANCE.md, issue 25)."""
    rows, known = _rows(blobs, _available_row, known)
    return dict(rows), known


def _available_row(blob: bytes) -> tuple[str, dict[str, float]]:
    row = _pb2().AvailableResources.FromString(blob)
    return row.node_id.hex(), {k: float(v) for k, v in row.resources_available.items()}


def alive_filter() -> Any:
    """The actor table's filter for alive actors, applied in the GCS (what Ray's
    ``GlobalState.actor_table(None, None, "ALIVE")`` asks)."""
    import_ray()
    # heavy: Ray's protobufs (~1 s), only once a cluster is read
    from ray.core.generated import gcs_service_pb2

    return gcs_service_pb2.GetAllActorInfoRequest.Filters(state=_pb2().ActorTableData.ALIVE)


def alive_actor_rows(blobs: list[bytes], known: dict[bytes, Any]) -> tuple[list, dict]:
    """The alive actors' rows (``(actor id, row)``), parsed as ``_actor_row``."""
    return _rows(blobs, _actor_row, known)


def _actor_row(blob: bytes) -> tuple[str, dict[str, Any]] | None:
    """One ``ActorTableData``: the fields raytop uses (Ray's ``_gen_actor_info`` keys them
    ActorClassName, JobID, Pid, Address, OwnerAddress; ``placement_group_id`` is the
    proto's own field, which it leaves out); None unless alive."""
    gcs_pb2 = _pb2()
    a = gcs_pb2.ActorTableData.FromString(blob)
    if a.state != gcs_pb2.ActorTableData.ALIVE:
        return None
    return a.actor_id.hex(), {
        "class_name": a.class_name,
        "job_id": a.job_id.hex(),
        "pid": a.pid,
        "node_id": a.address.node_id.hex(),
        "address": f"{a.address.ip_address}:{a.address.port}",
        "owner": f"{a.owner_address.ip_address}:{a.owner_address.port}",
        # The placement group it was scheduled into ("" for none): how a Tune trial
        # actor's group is told apart (pipeline.owners).
        "pg_id": _hex(a.placement_group_id) if _has_id(a.placement_group_id) else "",
    }


def placement_group_rows(blobs: list[bytes], known: dict[bytes, Any]) -> tuple[list, dict]:
    return _rows(blobs, _placement_group_row, known)


def _placement_group_row(blob: bytes) -> dict[str, Any]:
    """One ``PlacementGroupTableData``, with what ``placement_group_table()`` leaves out."""
    import_ray()
    # heavy: Ray's protobufs (~1 s), only once a cluster is read
    from ray.core.generated import common_pb2, gcs_pb2

    pg = gcs_pb2.PlacementGroupTableData.FromString(blob)
    states = gcs_pb2.PlacementGroupTableData.PlacementGroupState.DESCRIPTOR.values_by_number
    strategies = common_pb2.PlacementStrategy.DESCRIPTOR.values_by_number
    sched = gcs_pb2.PlacementGroupStats.SchedulingState.DESCRIPTOR.values_by_number
    return {
        "pg_id": _hex(pg.placement_group_id),
        "name": pg.name,
        "strategy": strategies[pg.strategy].name if pg.strategy in strategies else str(pg.strategy),
        "state": states[pg.state].name if pg.state in states else str(pg.state),
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
