"""The cluster's nodes and what is left on each: the first place to look when a group waits.

Keyed by node id and diff-updated like the other tables. It is reference, not a list to
walk: it takes no focus and shows no cursor, so the keys go to the placement groups.
"""

from __future__ import annotations

from rich.text import Text

from raytop.model import Node
from raytop.model.format import fmt_value
from raytop.tui.format import fmt_bytes
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import StyledCell, left, number

# Resources with a column of their own; the others are listed together under "other".
_MAIN = ("CPU", "GPU", "memory")
# Ray's bookkeeping resources: one per node address, the object store, the accelerator
# model, and the per-group copies of every bundle's resources.
_INTERNAL_PREFIXES = ("node:", "accelerator_type:")
_INTERNAL_NAMES = frozenset({"object_store_memory"})

_COLUMNS = (
    ColumnSpec("node", "node", 8),
    ColumnSpec("state", "state", 5),
    ColumnSpec("cpu", "CPU", 7, "right"),
    ColumnSpec("gpu", "GPU", 5, "right"),
    ColumnSpec("memory", "memory", 11, "right"),
    ColumnSpec("host", "host cpu mem", 16, "right"),
    ColumnSpec("other", "other", 10),
    ColumnSpec("labels", "labels", 24),
)
_GROW: dict[str, int | None] = {"other": None, "labels": None}


def node_state(node: Node) -> str:
    if not node.alive:
        return "DEAD"
    return "head" if node.is_head else "alive"


def is_custom(resource: str) -> bool:
    """A resource someone asked for (``TPU``, ``hi_mem``), not Ray's bookkeeping."""
    return (
        resource not in _MAIN
        and resource not in _INTERNAL_NAMES
        and not resource.startswith(_INTERNAL_PREFIXES)
        and "_group_" not in resource
    )


def fmt_usage(node: Node, resource: str) -> str:
    """``used/total`` (``-/total`` on a dead node: nothing runs there; ``-`` if none)."""
    if resource not in node.resources_total:
        return "-"
    total = node.resources_total[resource]
    fmt = fmt_bytes if resource == "memory" else fmt_value
    used = fmt(node.used(resource)) if node.alive else "-"
    return f"{used}/{fmt(total)}"


def used_key(node: Node, resource: str) -> float | None:
    """What ``fmt_usage``'s cell sorts by: the amount used (``None``: none shown)."""
    if resource not in node.resources_total or not node.alive:
        return None
    return node.used(resource)


def custom_resources(node: Node) -> str:
    """``TPU 1/4, hi_mem 0/2``: the node's custom resources, used/total, by name."""
    names = sorted(r for r in node.resources_total if is_custom(r))
    return ", ".join(f"{r} {fmt_usage(node, r)}" for r in names)


def host_figures(node: Node) -> str:
    """``35% 12.1G/24G``: the OS's CPU % and memory of the node's host, beside Ray's
    logical columns (they are not OS limits): measured by raytop on its own host, else
    as the node's Ray agent reported them to the dashboard; ``-`` where neither can be
    had (no dashboard answers, or the node's agent has not reported yet)."""
    host = node.host
    if host is None or not node.alive:
        return "-"
    return f"{host.cpu_percent:.0f}% {fmt_bytes(host.memory_used)}/{fmt_bytes(host.memory_total)}"


def host_key(node: Node) -> float | None:
    """``host_figures`` sorts by the host's CPU %, the first thing it shows."""
    return node.host.cpu_percent if node.host is not None and node.alive else None


def node_labels(node: Node) -> str:
    """``zone=us-west-2a``; a label that only repeats the node id is left out."""
    return " ".join(f"{k}={v}" for k, v in sorted(node.labels.items()) if v != node.node_id)


class NodeTable(KeyedTable):
    """One row per node (head first, dead last); labels only when there is room."""

    can_focus = False
    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        "node-table--head",
        "node-table--alive",
        "node-table--dead",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cursor_type = "none"
        self._cluster_nodes: tuple[Node, ...] = ()

    def show_nodes(self, nodes: tuple[Node, ...]) -> None:
        self._cluster_nodes = nodes
        ordered = sorted(nodes, key=lambda n: (not n.alive, not n.is_head))
        columns = self._columns(any(node_labels(n) for n in nodes))
        keys = tuple(column.key for column in columns)
        self.sync_rows({n.node_id: self._cells(n, keys) for n in ordered}, columns)

    def on_resize(self) -> None:
        # Whether the labels fit depends on our width: rebuild the columns if that changed.
        self.show_nodes(self._cluster_nodes)

    def _cells(self, node: Node, columns: tuple[str, ...]) -> tuple[object, ...]:
        state = node_state(node)
        everything: dict[str, object] = {
            "node": Text(node.node_id[:8], no_wrap=True),
            "state": StyledCell(state, f"node-table--{state.lower()}", self),
            "cpu": number(fmt_usage(node, "CPU"), used_key(node, "CPU")),
            "gpu": number(fmt_usage(node, "GPU"), used_key(node, "GPU")),
            "memory": number(fmt_usage(node, "memory"), used_key(node, "memory")),
            "host": number(host_figures(node), host_key(node)),
            "other": left(custom_resources(node)),
            "labels": left(node_labels(node)),
        }
        return tuple(everything[key] for key in columns)

    def _columns(self, labelled: bool) -> tuple[ColumnSpec, ...]:
        columns = [c for c in _COLUMNS if labelled or c.key != "labels"]
        return self.fit_columns(columns, drop=("labels", "host"), grow=_GROW)
