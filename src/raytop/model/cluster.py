"""The cluster as raytop sees it: its nodes (Ray's logical resources and the host's own
figures) and its placement groups, with who each group is for."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

HOST_FROM_OS = "os"  # psutil in raytop's own process: a node on raytop's host, fresh
HOST_FROM_RAY = "ray"  # Ray's dashboard: what the node's agent last reported (every ~5 s)
HOST_SOURCES = (HOST_FROM_OS, HOST_FROM_RAY)


@dataclass(frozen=True)
class HostStats:
    """What the OS says of a node's host (not Ray's logical resources): CPU % of all its
    cores, memory in use, the 1-minute load average. ``source`` says who measured it:
    raytop itself (``"os"``) or the node's Ray agent, through the dashboard (``"ray"``:
    seconds old, and in a pod the container's figures)."""

    cpu_percent: float
    cpus: int
    memory_used: int
    memory_total: int
    load_1m: float | None = None
    source: str = HOST_FROM_OS  # one of HOST_SOURCES


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str
    alive: bool
    is_head: bool
    resources_total: dict[str, float] = field(default_factory=dict)
    resources_available: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # The host's own figures: psutil's for a node on the host raytop runs on, Ray's
    # dashboard's for a node elsewhere (``HostStats.source``); None: not known.
    host: HostStats | None = None

    def used(self, resource: str) -> float:
        # Ray leaves fully used resources out of the available map: absent means 0 free.
        total = self.resources_total.get(resource, 0.0)
        return total - self.resources_available.get(resource, 0.0)


@dataclass(frozen=True)
class Cluster:
    """What the GCS says; ``connected=False`` with ``error`` when it cannot be reached."""

    address: str | None
    connected: bool
    error: str | None = None
    embedded: bool = False
    ray_version: str | None = None
    nodes: tuple[Node, ...] = ()
    # No cluster on purpose (``--storage``): the experiments are history read from storage,
    # and ``error`` says so ("no cluster: history from storage"); not a fault to report.
    history_only: bool = False
    # Why nodes elsewhere have no host figures, in one line (Ray's dashboard did not
    # answer, or the cluster has none); None when they have them or all nodes are local.
    # A note, not a fault: no finding, no warning.
    host_note: str | None = None
    # raytop runs on a Ray line it does not support because the user asked
    # (``RAYTOP_ANY_RAY=1``): the top bar says so; the snapshot's warnings too.
    ray_unsupported: bool = False

    def total(self, resource: str) -> float:
        return sum(n.resources_total.get(resource, 0.0) for n in self.nodes if n.alive)

    def used(self, resource: str) -> float:
        return sum(n.used(resource) for n in self.nodes if n.alive)

    @property
    def alive_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.alive)


@dataclass(frozen=True)
class Bundle:
    index: int
    resources: dict[str, float]
    node_id: str | None = None  # None while unplaced

    @cached_property
    def shape(self) -> tuple:
        """(index, its resources sorted): what a waiting group's reason depends on, made
        once per bundle (the placement reader keeps an unchanged group's bundles, so a
        refresh at 2,000 groups does not sort them all again)."""
        return self.index, tuple(sorted(self.resources.items()))


@dataclass(frozen=True)
class PlacementGroup:
    """A placement group and who it is for.

    ``owner_kind``: ``trial`` (a Tune trial's bundle), ``train_run`` (a Train worker group),
    ``pending_trial`` (created by a Tune driver for a trial not started yet) or ``other``.
    ``leaked``: its creator is gone but the group still holds (or waits for) resources."""

    pg_id: str
    strategy: str
    state: str  # PENDING, PREPARED, CREATED, RESCHEDULING, REMOVED
    scheduling_state: str  # INFEASIBLE, NO_RESOURCES, FINISHED, …
    bundles: tuple[Bundle, ...] = ()
    name: str = ""
    attempts: int = 0
    created_at: float | None = None
    age_s: float | None = None
    owner_kind: str = "other"
    owner: str | None = None  # trial id, or Train run name (or creator job)
    experiment: str | None = None
    trial_id: str | None = None  # the Tune trial it serves: its own group or its Train run's
    leaked: bool = False
    why_pending: str | None = None  # one sentence, for a group that is not placed

    @property
    def placed(self) -> bool:
        return self.state == "CREATED"

    @property
    def owner_label(self) -> str:
        """Who the group is for, in a few words: ``trial <id>``, ``Train run <name>``,
        ``pending trial of <experiment>``, or its creator job."""
        if self.owner_kind == "trial":
            return f"trial {self.owner}"
        if self.owner_kind == "train_run":
            return f"Train run {self.owner or '?'}"
        if self.owner_kind == "pending_trial":
            return f"pending trial of {self.experiment or '?'}"
        return self.owner or "other"
