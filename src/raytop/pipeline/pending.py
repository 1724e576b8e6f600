"""Why each unplaced placement group waits, judged once per collection.

``sources.placement_source`` only reads the groups and who they are for; the sentence
saying why one is not placed (a bundle no node can hold, a strategy the cluster's shape
cannot satisfy, capacity held by others: ``diagnose.placement.why_pending``) is a
judgement, made here in the pipeline beside the other joins, before ``diagnose`` runs
and before ``pipeline.kept_trials`` hands the reasons to waiting trials.
"""

from __future__ import annotations

from raytop.diagnose.placement import Capacity, why_pending
from raytop.model import Node, PlacementGroup
from raytop.model.evolve import evolve


def with_why_pending(
    groups: tuple[PlacementGroup, ...], nodes: tuple[Node, ...]
) -> tuple[PlacementGroup, ...]:
    """Each unplaced group with its ``why_pending`` sentence, judged against the alive
    ``nodes`` and every group (the placed ones hold what the waiting ones need); the
    placed ones as they are."""
    if all(g.placed for g in groups):
        return groups
    listed, every = list(nodes), list(groups)
    capacity = Capacity(listed, every)  # asked once, for every waiting group
    return tuple(
        g if g.placed else evolve(g, why_pending=why_pending(g, listed, every, capacity))
        for g in groups
    )
