"""Validators of what Ray's dashboard says about the cluster's hosts: its address (a value
of the GCS KV store) and its answer to ``GET /nodes?view=summary``.

raytop measures the host it runs on itself (``sources.host``); for nodes elsewhere it
takes what each node's Ray agent reported to the dashboard head. That answer comes from
another process, maybe of another Ray version, over the network: each validator returns
only what raytop uses, typed and in range, or raises ``Invalid`` naming where
(``data.summary[2].mem``) and what was wrong. Built from ``untrusted``'s checks and caps.

The answer's shape (Ray 2.58: ``dashboard/modules/node/node_head.py`` ``get_all_nodes``,
``datacenter.py`` ``get_node_info``, ``modules/reporter/reporter_agent.py``
``_async_collect_stats``; keys camel-cased by ``dashboard.utils.to_google_style``)::

    {"result": true, "msg": "Node summary fetched.",
     "data": {"summary": [{"raylet": {"nodeId": "<hex>", "state": "ALIVE", …},
                           "cpu": 12.5,                     # psutil.cpu_percent(), 0–100
                           "cpus": [8, 4],                  # [logical, physical or null]
                           "mem": [total, available, percent, used],   # bytes, bytes, %, bytes
                           "loadAvg": [[1m, 5m, 15m], [per-cpu …] or null],
                           "ip": "10.0.0.5", "hostname": "…", "now": 1796374267.2, …}],
              "nodeLogicalResources": {…}}}

A node whose agent has not reported yet (or a dead node) has ``raylet`` (and ``tpus``)
only: no figures, not a fault. In a pod, ``cpu`` is the container's share of its CPUs
(``k8s_utils.cpu_percent``, capped at 100), ``cpus[0]`` the container's CPU count and
``mem`` the cgroup's limit and usage (``get_system_memory``, ``get_used_memory``).

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from raytop.model.cluster import HOST_FROM_RAY, HostStats
from raytop.model.untrusted import (
    Invalid,
    MiB,
    at,
    fail,
    integer,
    number,
    obj,
    seq,
    text,
)

# The answer is about 14 KB a node (most of it the raylet's and the agent's command
# lines): 8 MiB is some 580 nodes. Above it the answer is refused unread, with a warning.
MAX_DASHBOARD_BYTES = 8 * MiB
MAX_NODES = 10_000
MAX_ADDRESS_CHARS = 256
MAX_NODE_ID_CHARS = 128  # Ray's are 56 hex digits
MAX_CPUS = 1 << 16
MAX_MEMORY_BYTES = 1 << 60  # 1 EiB
MAX_LOAD = 1e6  # a load average (runnable tasks): far above any real host's

_HOST = re.compile(r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]")
_HEX = re.compile(r"[0-9a-f]+")


# -- the dashboard's address: KV namespace "dashboard", key "dashboard" (dashboard/head.py) ----


def dashboard_address(raw: Any) -> tuple[str, str, int]:
    """``host:port`` (Ray writes ``build_address(ip, port)``; an ``http://`` or ``https://``
    in front is accepted, as Ray's own readers do) → (scheme, host, port). The host has
    no user, path or query: raytop only ever asks it ``/nodes?view=summary``."""
    if not isinstance(raw, (bytes, str)):
        raise fail("", "bytes", raw)
    if len(raw) > MAX_ADDRESS_CHARS:
        raise Invalid(f"{len(raw)} characters, over the cap of {MAX_ADDRESS_CHARS}")
    value = raw.decode() if isinstance(raw, bytes) else raw  # UnicodeDecodeError: not text
    scheme, sep, rest = value.strip().partition("://")
    if not sep:
        scheme, rest = "http", value.strip()
    if scheme not in ("http", "https"):
        raise Invalid(f"'{value[:80]}' is not an http address")
    host, _, port = rest.rpartition(":")
    if not _HOST.fullmatch(host) or not port.isascii() or not port.isdigit():
        raise Invalid(f"'{value[:80]}' is not host:port")
    if not 0 < int(port) < 65536:
        raise Invalid(f"'{value[:80]}': port {port} is out of range")
    return scheme, host.strip("[]"), int(port)


# -- GET /nodes?view=summary ------------------------------------------------------------------


def _in_range(value: float, where: str, low: float, high: float) -> float:
    if value < low:
        raise Invalid(f"{where}: {value:g} is below {low:g}")
    if value > high:
        raise Invalid(f"{where}: {value:g} is over {high:g}")
    return value


def _figures(raw: Any, where: str, count: int) -> dict[Any, Any]:
    """A list of exactly ``count`` entries (Ray's tuples arrive as JSON lists), by index:
    the checks of ``untrusted`` then name an entry ``mem[3]``."""
    if not isinstance(raw, list):
        raise fail(where, "a list", raw)
    if len(raw) != count:
        raise Invalid(f"{where}: {len(raw)} entries, expected {count}")
    return dict(enumerate(raw))


def _memory(node: dict[str, Any], where: str) -> tuple[int, int]:
    """``mem`` = [total, available, percent, used] → (used, total), bytes."""
    where = at(where, "mem")
    values = _figures(node.get("mem"), where, 4)
    total, used = (
        _in_range(number(values, i, where), at(where, i), 0, MAX_MEMORY_BYTES) for i in (0, 3)
    )
    if used > total:
        raise Invalid(f"{where}: used {used:g} is more than the total {total:g}")
    return int(used), int(total)


def _cpus(node: dict[str, Any], where: str) -> int:
    """``cpus`` = [logical, physical]: the logical count (psutil's, as raytop's own host
    figure is; null when psutil could not tell → 0)."""
    where = at(where, "cpus")
    values = _figures(node.get("cpus"), where, 2)
    logical, _physical = (
        integer(values, i, where, optional=True, maximum=MAX_CPUS) for i in (0, 1)
    )
    return logical or 0


def _load_1m(node: dict[str, Any], where: str) -> float | None:
    """``loadAvg`` = [[1m, 5m, 15m], per-CPU or null] → the 1-minute load (absent: None)."""
    if node.get("loadAvg") is None:
        return None
    where = at(where, "loadAvg")
    load = _figures(_figures(node["loadAvg"], where, 2)[0], at(where, 0), 3)
    figures = [number(load, i, at(where, 0)) for i in range(3)]
    for i, value in enumerate(figures):
        _in_range(value, at(at(where, 0), i), 0, MAX_LOAD)
    return figures[0]


def _node_id(node: dict[str, Any], where: str) -> str:
    raylet = obj(node.get("raylet"), at(where, "raylet"))
    node_id = text(raylet, "nodeId", at(where, "raylet"), nonempty=True)
    if len(node_id) > MAX_NODE_ID_CHARS or not _HEX.fullmatch(node_id):
        raise Invalid(f"{at(at(where, 'raylet'), 'nodeId')}: '{node_id[:40]}' is not a node id")
    return node_id


def node_host_stats(node: Any, where: str) -> HostStats | None:
    """One entry of ``summary`` → its host figures; None while its agent has not reported
    (the entry has ``raylet`` but none of ``cpu``, ``cpus``, ``mem``)."""
    node = obj(node, where)
    if all(node.get(key) is None for key in ("cpu", "cpus", "mem")):
        return None
    cpu = _in_range(number(node, "cpu", where), at(where, "cpu"), 0.0, 100.0)
    used, total = _memory(node, where)
    return HostStats(
        cpu_percent=cpu,
        cpus=_cpus(node, where),
        memory_used=used,
        memory_total=total,
        load_1m=_load_1m(node, where),
        source=HOST_FROM_RAY,
    )


def node_summary(data: Any) -> dict[str, HostStats]:
    """The answer to ``GET /nodes?view=summary`` → ``{node id (hex): HostStats}`` for
    every node that has figures. One bad entry makes the answer bad: the caller keeps its
    last good copy (the entries of one answer come from one Ray version)."""
    answer = obj(data)
    if answer.get("result") is not True:
        said = answer.get("msg")
        why = said.strip().splitlines()[0][:200] if isinstance(said, str) and said.strip() else ""
        raise Invalid(f"result: the dashboard did not answer ok{': ' + why if why else ''}")
    body = obj(answer.get("data"), "data")
    nodes = seq(body.get("summary"), "data.summary", MAX_NODES)
    stats: dict[str, HostStats] = {}
    for i, node in enumerate(nodes):
        where = at("data.summary", i)
        node_id = _node_id(obj(node, where), where)
        figures = node_host_stats(node, where)
        if figures is not None:
            stats[node_id] = figures
    return stats
