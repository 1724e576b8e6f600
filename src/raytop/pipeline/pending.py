"""Why each unplaced placement group waits, judged once per collection.

``sources.placement_source`` only reads the groups and who they are for; the sentence
saying why one is not placed (a bundle no node can hold, a strategy the cluster's shape
cannot satisfy, capacity held by others: ``diagnose.placement.why_pending``) is a
judgement, made here in the pipeline beside the other joins, before ``diagnose`` runs
and before ``pipeline.kept_trials`` hands the reasons to waiting trials.
"""

from __future__ import annotations

from raytop.diagnose.placement import Capacity, waited
from raytop.model import Node, PlacementGroup
from raytop.model.evolve import evolve

Groups = tuple[PlacementGroup, ...]


def waiting_reasons(groups: Groups, nodes: tuple[Node, ...]) -> dict[str, str]:
    """Group id → why the unplaced group waits, in resources (``Capacity.reason``),
    judged against the alive ``nodes`` and every group (the placed ones hold what the
    waiting ones need): what its age does not move, so groups that only aged keep them
    (``kept_groups``)."""
    if all(g.placed for g in groups):
        return {}
    capacity = Capacity(list(nodes), list(groups))  # asked once, for every waiting group
    return {g.pg_id: capacity.reason(g) for g in groups if not g.placed}


def with_why_pending(groups: Groups, reasons: dict[str, str]) -> Groups:
    """Each unplaced group with ``reasons``' sentence for it, as said at its age
    (``diagnose.placement.waited``); the placed ones as they are."""
    if not reasons:
        return groups
    return tuple(
        g if g.placed else evolve(g, why_pending=waited(g, reasons[g.pg_id])) for g in groups
    )
