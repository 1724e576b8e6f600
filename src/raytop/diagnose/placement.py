"""Why a placement group (and so a trial, or a Train worker group) is not placed, in words.

One sentence per group (docs/RAY_FACTS.md#placement-group-table): a bundle no node can ever
hold, a strategy the cluster's shape cannot satisfy, or capacity that exists but is held by
others (named).
"""

from __future__ import annotations

from raytop.model import Finding, Node, PlacementGroup, Severity

WORKER_GROUP_START_TIMEOUT_S = 60.0  # RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S default


class Capacity:
    """What every waiting group's sentence asks of the alive ``nodes`` and the placed
    ``groups``, each answered once: a cluster of hundreds of nodes and thousands of groups
    asks the same questions for every waiting group (docs/PERFORMANCE.md, "Synthetic
    scale": 750 waiting groups on 500 nodes took seconds a refresh)."""

    def __init__(self, nodes: list[Node], groups: list[PlacementGroup] | tuple = ()) -> None:
        self.alive = [n for n in nodes if n.alive]
        self._groups = groups
        self._largest: dict[str, float] = {}
        self._total: dict[str, float] = {}
        self._free: dict[str, float] = {}
        # resource → (the ids of the placed groups using it, their owners' labels sorted)
        self._holders: dict[str, tuple[frozenset[str], list[str]]] | None = None
        self._reasons: dict[tuple, str] = {}  # a group's shape → why such a group waits
        self._infeasible: dict[tuple, str | None] = {}  # a group's shape → why it never fits

    def largest(self, resource: str) -> float:
        if resource not in self._largest:
            self._largest[resource] = max(
                (n.resources_total.get(resource, 0.0) for n in self.alive), default=0.0
            )
        return self._largest[resource]

    def total(self, resource: str) -> float:
        if resource not in self._total:
            self._total[resource] = sum(n.resources_total.get(resource, 0.0) for n in self.alive)
        return self._total[resource]

    def free(self, resource: str) -> float:
        if resource not in self._free:
            self._free[resource] = sum(n.resources_available.get(resource, 0.0) for n in self.alive)
        return self._free[resource]

    def reason(self, pg: PlacementGroup) -> str:
        """Why ``pg`` is not placed, in resources (``infeasible_reason``, else
        ``contention_reason``): the same for every group of one shape, which Tune's
        pending trials share, so it is worked out once per shape."""
        key = (pg.strategy, pg.pg_id if pg.placed else None, _shape(pg))
        if key not in self._reasons:
            self._reasons[key] = self.infeasible(pg) or contention_reason(
                pg, self.alive, list(self._groups), self
            )
        return self._reasons[key]

    def infeasible(self, pg: PlacementGroup) -> str | None:
        """``infeasible_reason`` on these nodes, once per shape of group."""
        key = (pg.strategy, _shape(pg))
        if key not in self._infeasible:
            self._infeasible[key] = infeasible_reason(pg, self.alive, self)
        return self._infeasible[key]

    def holders(self, resource: str, pg: PlacementGroup) -> list[str]:
        """Who holds ``resource``: the owners of the placed groups (other than ``pg``)
        with a bundle that asks for it, sorted."""
        if self._holders is None:
            using: dict[str, list[PlacementGroup]] = {}
            for g in self._groups:
                if g.placed:
                    for r in {r for b in g.bundles for r, v in b.resources.items() if v > 0}:
                        using.setdefault(r, []).append(g)
            self._holders = {
                r: (frozenset(g.pg_id for g in gs), sorted({g.owner_label for g in gs}))
                for r, gs in using.items()
            }
        ids, labels = self._holders.get(resource, (frozenset(), []))
        if pg.pg_id not in ids:
            return labels
        return sorted(
            {g.owner_label for g in self._groups if g.placed and g.pg_id != pg.pg_id
             and any(b.resources.get(resource, 0) > 0 for b in g.bundles)}
        )  # fmt: skip


def _shape(pg: PlacementGroup) -> tuple:
    return tuple(b.shape for b in pg.bundles)


def _can_hold(node: Node, bundle: dict[str, float]) -> bool:
    return all(node.resources_total.get(r, 0.0) >= v for r, v in bundle.items() if v > 0)


def infeasible_reason(
    pg: PlacementGroup, nodes: list[Node], capacity: Capacity | None = None
) -> str | None:
    """Why the group can never be placed on these (alive) nodes, or None if it could.
    ``capacity``: the same nodes' figures, when many groups are asked about."""
    capacity = capacity or Capacity(nodes)
    for b in pg.bundles:
        for r, need in sorted(b.resources.items()):
            if need <= 0:
                continue
            largest = capacity.largest(r)
            if largest == 0:
                return f"bundle {b.index} needs {{{r}: {need:g}}}; no node has {r}"
            if largest < need:
                return f"bundle {b.index} needs {r} {need:g}; the largest node has {largest:g}"
    if pg.strategy == "STRICT_PACK":
        total: dict[str, float] = {}
        for b in pg.bundles:
            for r, v in b.resources.items():
                total[r] = total.get(r, 0.0) + v
        if not any(_can_hold(n, total) for n in nodes):
            for r, v in sorted(total.items()):
                if v > capacity.largest(r):
                    return (f"STRICT_PACK needs {v:g} {r} on one node; the largest node has "
                            f"{capacity.largest(r):g}")  # fmt: skip
            return "STRICT_PACK needs all its bundles on one node; no node holds them together"
    if pg.strategy == "STRICT_SPREAD":
        able = sum(1 for n in nodes if any(_can_hold(n, b.resources) for b in pg.bundles))
        if able < len(pg.bundles):
            alive = len(nodes)
            where = f"{alive} are alive" if able == alive else f"{able} of {alive} can hold one"
            return f"STRICT_SPREAD needs {len(pg.bundles)} nodes; {where}"
    return None


def contention_reason(
    pg: PlacementGroup,
    nodes: list[Node],
    groups: list[PlacementGroup],
    capacity: Capacity | None = None,
) -> str:
    """A group that could fit: which resource is short, and who holds it. ``capacity``:
    the same nodes' and groups' figures, when many groups are asked about."""
    capacity = capacity or Capacity(nodes, groups)
    need: dict[str, float] = {}
    for b in pg.bundles:
        for r, v in b.resources.items():
            need[r] = need.get(r, 0.0) + v
    for r, v in sorted(need.items()):
        if v <= 0:
            continue
        total, free = capacity.total(r), capacity.free(r)
        if free >= v and pg.strategy not in ("STRICT_PACK", "STRICT_SPREAD"):
            continue
        holders = capacity.holders(r, pg)
        who = f"held by {', '.join(holders)}" if holders else "in use outside placement groups"
        return f"fits, but {total - free:g} of {total:g} {r} are {who}"
    return "fits; waiting for the scheduler to place it (resources are spread across nodes)"


def why_pending(
    pg: PlacementGroup,
    nodes: list[Node],
    groups: list[PlacementGroup],
    capacity: Capacity | None = None,
) -> str:
    """``capacity``: ``Capacity(nodes, groups)``, given when many groups are asked about."""
    capacity = capacity or Capacity(nodes, groups)
    return waited(pg, capacity.reason(pg))


def waited(pg: PlacementGroup, reason: str) -> str:
    """``reason`` (``Capacity.reason``, which its age does not move) as ``why_pending``
    says it at the group's age: a Train run's worker group past a start timeout says how
    many it has waited."""
    if pg.owner_kind == "train_run" and pg.age_s and pg.age_s >= WORKER_GROUP_START_TIMEOUT_S:
        timeouts = int(pg.age_s // WORKER_GROUP_START_TIMEOUT_S)
        return (f"Train run {pg.owner} has waited in SCHEDULING for {timeouts} worker-group start "
                f"timeout(s); retries are unlimited: {reason}")  # fmt: skip
    return reason


def placement_findings(
    groups: tuple[PlacementGroup, ...],
    nodes: tuple[Node, ...],
    waiting_after_s: float,
    said: dict[str, tuple[str, bool]] | None = None,
) -> list[Finding]:
    """The findings about the groups: leaked, never placeable, waiting too long.
    ``said``: a caller's record, by group id, of each group's subject and whether it can
    never be placed on these nodes (what its age does not move), used and filled in: the
    caller keeps it while the groups only age on the same nodes (``pipeline.kept_groups``;
    ~1,000 waiting groups' shapes looked up again each second)."""
    findings = []
    capacity: Capacity | None = None
    said = {} if said is None else said
    for pg in groups:
        if not pg.leaked and (pg.placed or pg.why_pending is None):
            continue  # most groups: no finding, nothing made for one
        known = said.get(pg.pg_id)
        if known is None:
            capacity = capacity or Capacity(list(nodes))
            never = (
                not pg.placed
                and pg.why_pending is not None
                and (capacity.infeasible(pg) is not None or pg.scheduling_state == "INFEASIBLE")
            )
            known = said[pg.pg_id] = (f"{pg.owner_label} (group {pg.pg_id[:8]})", never)
        subject, never = known
        evidence = {"pg_id": pg.pg_id, "owner_kind": pg.owner_kind, "owner": pg.owner,
                    "experiment": pg.experiment, "age_s": pg.age_s}  # fmt: skip
        if pg.leaked:
            holds = "holds" if pg.placed else "waits for"
            message = f"its creator is gone but it still {holds} {len(pg.bundles)} bundle(s)"
            findings.append(Finding("placement_leaked", Severity.WARNING, subject, message,
                                    evidence, trial_id=pg.trial_id))  # fmt: skip
        if pg.placed or pg.why_pending is None:
            continue
        if never:
            findings.append(Finding("placement_infeasible", Severity.ERROR, subject,
                                    pg.why_pending, evidence, trial_id=pg.trial_id))  # fmt: skip
        elif (pg.age_s or 0.0) > waiting_after_s:
            message = f"pending for {pg.age_s:.0f}s: {pg.why_pending}"
            findings.append(Finding("placement_waiting", Severity.WARNING, subject, message,
                                    evidence, trial_id=pg.trial_id))  # fmt: skip
    return findings
