"""Why a placement group (and so a trial, or a Train worker group) is not placed, in words.

One sentence per group (RAY_NOTES d, e): a bundle no node can ever hold, a strategy the
cluster's shape cannot satisfy, or capacity that exists but is held by others (named).
"""

from __future__ import annotations

from raytop.model import Finding, Node, PlacementGroup, Severity

WORKER_GROUP_START_TIMEOUT_S = 60.0  # RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S default


def _largest(nodes: list[Node], resource: str) -> float:
    return max((n.resources_total.get(resource, 0.0) for n in nodes), default=0.0)


def _can_hold(node: Node, bundle: dict[str, float]) -> bool:
    return all(node.resources_total.get(r, 0.0) >= v for r, v in bundle.items() if v > 0)


def infeasible_reason(pg: PlacementGroup, nodes: list[Node]) -> str | None:
    """Why the group can never be placed on these (alive) nodes, or None if it could."""
    for b in pg.bundles:
        for r, need in sorted(b.resources.items()):
            if need <= 0:
                continue
            largest = _largest(nodes, r)
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
                if v > _largest(nodes, r):
                    return (f"STRICT_PACK needs {v:g} {r} on one node; the largest node has "
                            f"{_largest(nodes, r):g}")  # fmt: skip
            return "STRICT_PACK needs all its bundles on one node; no node holds them together"
    if pg.strategy == "STRICT_SPREAD":
        able = sum(1 for n in nodes if any(_can_hold(n, b.resources) for b in pg.bundles))
        if able < len(pg.bundles):
            alive = len(nodes)
            where = f"{alive} are alive" if able == alive else f"{able} of {alive} can hold one"
            return f"STRICT_SPREAD needs {len(pg.bundles)} nodes; {where}"
    return None


def contention_reason(pg: PlacementGroup, nodes: list[Node], groups: list[PlacementGroup]) -> str:
    """A group that could fit: which resource is short, and who holds it."""
    need: dict[str, float] = {}
    for b in pg.bundles:
        for r, v in b.resources.items():
            need[r] = need.get(r, 0.0) + v
    for r, v in sorted(need.items()):
        if v <= 0:
            continue
        total = sum(n.resources_total.get(r, 0.0) for n in nodes)
        free = sum(n.resources_available.get(r, 0.0) for n in nodes)
        if free >= v and pg.strategy not in ("STRICT_PACK", "STRICT_SPREAD"):
            continue
        holders = sorted(
            {g.owner_label for g in groups if g.placed and g.pg_id != pg.pg_id
             and any(b.resources.get(r, 0) > 0 for b in g.bundles)}
        )  # fmt: skip
        who = f"held by {', '.join(holders)}" if holders else "in use outside placement groups"
        return f"fits, but {total - free:g} of {total:g} {r} are {who}"
    return "fits; waiting for the scheduler to place it (resources are spread across nodes)"


def why_pending(pg: PlacementGroup, nodes: list[Node], groups: list[PlacementGroup]) -> str:
    alive = [n for n in nodes if n.alive]
    reason = infeasible_reason(pg, alive) or contention_reason(pg, alive, groups)
    if pg.owner_kind == "train_run" and pg.age_s and pg.age_s >= WORKER_GROUP_START_TIMEOUT_S:
        timeouts = int(pg.age_s // WORKER_GROUP_START_TIMEOUT_S)
        return (f"Train run {pg.owner} has waited in SCHEDULING for {timeouts} worker-group start "
                f"timeout(s); retries are unlimited: {reason}")  # fmt: skip
    return reason


def placement_findings(
    groups: tuple[PlacementGroup, ...], nodes: tuple[Node, ...], waiting_after_s: float
) -> list[Finding]:
    findings = []
    alive = [n for n in nodes if n.alive]
    for pg in groups:
        evidence = {"pg_id": pg.pg_id, "owner_kind": pg.owner_kind, "owner": pg.owner,
                    "experiment": pg.experiment, "age_s": pg.age_s}  # fmt: skip
        subject = f"{pg.owner_label} (group {pg.pg_id[:8]})"
        if pg.leaked:
            holds = "holds" if pg.placed else "waits for"
            message = f"its creator is gone but it still {holds} {len(pg.bundles)} bundle(s)"
            findings.append(Finding("placement_leaked", Severity.WARNING, subject, message,
                                    evidence))  # fmt: skip
        if pg.placed or pg.why_pending is None:
            continue
        if infeasible_reason(pg, alive) is not None or pg.scheduling_state == "INFEASIBLE":
            findings.append(Finding("placement_infeasible", Severity.ERROR, subject,
                                    pg.why_pending, evidence))  # fmt: skip
        elif (pg.age_s or 0.0) > waiting_after_s:
            message = f"pending for {pg.age_s:.0f}s: {pg.why_pending}"
            findings.append(Finding("placement_waiting", Severity.WARNING, subject, message,
                                    evidence))  # fmt: skip
    return findings
