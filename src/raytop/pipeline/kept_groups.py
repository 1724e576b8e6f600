"""Why each placement group waits, and the findings about the groups, kept while the
groups are the very same tuple and the nodes hold what they held.

The placement reader hands out the same tuple of groups while what they are made of is
the same, until the wall clock's next second (``model.refresh``); then the same groups
with their ages moved on (``PlacementReader.aged_from``). At 2,000 groups on 500 nodes,
saying again why each of ~1,000 waits, and judging them, was ~15 ms of a refresh in which
nothing changed (docs/PERFORMANCE.md, issue 25); and saying it again once a second, as
they aged, ~10 ms. Groups that only aged keep what was said of them in resources, said
again at their new age (``diagnose.placement.waited``). The nodes are compared by what a
reason depends on: which are alive and the resources each has in all and free (not their
host figures, which move every refresh).
"""

from __future__ import annotations

from raytop.diagnose.placement import placement_findings
from raytop.model import Finding, Node, PlacementGroup
from raytop.pipeline.pending import waiting_reasons, with_why_pending

Groups = tuple[PlacementGroup, ...]


def _capacity(nodes: tuple[Node, ...]) -> tuple:
    return tuple((n.node_id, n.alive, n.resources_total, n.resources_available) for n in nodes)


class KeptGroups:
    def __init__(self) -> None:
        # groups, nodes, the groups with their reasons, each waiting one's reason by id
        self._why: tuple[Groups, tuple, Groups, dict[str, str]] | None = None
        # groups, nodes, threshold, findings, what was said of each (``placement_findings``)
        self._judged: tuple[Groups, tuple, float, list[Finding], dict] | None = None
        self._aged: tuple[Groups, Groups] | None = None  # (reasoned, the same aged)

    def with_why_pending(
        self, groups: Groups, nodes: tuple[Node, ...], aged_from: Groups | None = None
    ) -> Groups:
        """Each unplaced group with its ``why_pending`` sentence (``pipeline.pending``), or
        what was said of these very groups on nodes that hold the same. ``aged_from``:
        the groups these are, with only their ages moved (``PlacementReader.aged_from``);
        on the same nodes, they keep their reasons."""
        capacity = _capacity(nodes)
        kept = self._why
        if kept is not None and kept[1] == capacity:
            if kept[0] is groups:
                return kept[2]
            if aged_from is not None and kept[0] is aged_from:
                reasoned = with_why_pending(groups, kept[3])
                self._why = (groups, capacity, reasoned, kept[3])
                self._aged = (kept[2], reasoned)
                return reasoned
        self._aged = None
        why = waiting_reasons(groups, nodes)
        reasoned = with_why_pending(groups, why)
        self._why = (groups, capacity, reasoned, why)
        return reasoned

    def findings(self, groups: Groups, nodes: tuple[Node, ...], waiting_after_s: float):
        """``diagnose.placement.placement_findings``, or what it gave for these very
        groups on nodes that hold the same, with the same threshold; for the same groups
        aged, what it said of each but their ages (its ``said``)."""
        capacity = _capacity(nodes)
        kept = self._judged
        said: dict = {}
        if kept is not None and kept[1] == capacity and kept[2] == waiting_after_s:
            if kept[0] is groups:
                return kept[3]
            aged = self._aged
            if aged is not None and aged[0] is kept[0] and aged[1] is groups:
                said = kept[4]
        judged = placement_findings(groups, nodes, waiting_after_s, said)
        self._judged = (groups, capacity, waiting_after_s, judged, said)
        return judged
