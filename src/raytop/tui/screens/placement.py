"""Placement: why a trial or a Train worker group is waiting, at a glance.

Pushed from the overview with ``p``. Top to bottom: the nodes and what is left on each,
who holds each GPU, every placement group (the waiting ones first), and, under the
groups, why the highlighted one (else the first waiting one) cannot be placed, in full.
Like the other screens it renders only while on view and catches up on resume; while
disconnected it shows the last cluster that answered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import DataTable, Static

from raytop.model import PlacementGroup
from raytop.model.format import fmt_duration
from raytop.tui.format import shown, shown_lines
from raytop.tui.screens.base import SnapshotScreen
from raytop.tui.state import ViewState
from raytop.tui.widgets.cluster_bar import ClusterBar
from raytop.tui.widgets.gpu_slots import GpuSlots
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.node_table import NodeTable
from raytop.tui.widgets.placement_table import (
    PlacementTable,
    fmt_bundles,
    state_label,
    waiting_first,
)

NO_GROUPS = "no placement groups in the cluster"
ALL_PLACED = "nothing waits for placement: every group is placed"


def featured_group(groups: Sequence[PlacementGroup], chosen: str | None) -> PlacementGroup | None:
    """The group whose reason to show: the highlighted one if it waits, else the first
    waiting one (both only if the collector said why)."""
    waiting = [g for g in waiting_first(groups) if not g.placed and g.why_pending]
    return next((g for g in waiting if g.pg_id == chosen), waiting[0] if waiting else None)


def describe_why(pg: PlacementGroup) -> Content:
    """The reason in full and bold, then which group it is about, muted."""
    infeasible = state_label(pg) == "INFEASIBLE"
    style = "bold $text-error" if infeasible else "bold $text-warning"
    about = [
        f"group {pg.pg_id[:8]}",
        pg.owner_label,
        pg.strategy,
        f"{pg.attempts} attempt{'' if pg.attempts == 1 else 's'}",
        f"waiting {fmt_duration(pg.age_s)}",
        fmt_bundles(pg),
    ]
    return shown_lines(
        [
            Content.styled(pg.why_pending or "", style),
            Content.styled(" · ".join(about), "$text-muted"),
        ]
    )


def describe_groups(groups: Sequence[PlacementGroup]) -> Content:
    """``placement groups 5 · 2 waiting (1 infeasible) · 1 leaked``."""
    waiting = [g for g in groups if not g.placed]
    infeasible = sum(1 for g in waiting if state_label(g) == "INFEASIBLE")
    leaked = sum(1 for g in groups if g.leaked)
    parts: list[Content | str] = [Content.styled("placement groups", "bold"), f" {len(groups)}"]
    if waiting:
        parts += [" · ", Content.styled(f"{len(waiting)} waiting", "$text-warning")]
    if infeasible:
        parts.append(Content.styled(f" ({infeasible} infeasible)", "$text-error"))
    if leaked:
        parts += [" · ", Content.styled(f"{leaked} leaked", "bold $text-error")]
    return Content.assemble(*parts)


class PlacementScreen(SnapshotScreen):
    """Renders the nodes and placement groups of each new ``ViewState``, while visible."""

    AUTO_FOCUS = "PlacementTable"
    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
    ]

    def __init__(self, *, state: ViewState, clock: Callable[[], float], read_only: bool) -> None:
        super().__init__(state=state, clock=clock, read_only=read_only)

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield NodeTable()
        yield GpuSlots()
        yield Static(id="placement-summary")
        yield PlacementTable()
        yield Static(id="placement-why")
        yield KeyFooter()

    def action_back(self) -> None:
        self.dismiss()

    @on(DataTable.RowHighlighted, "PlacementTable")
    def _group_highlighted(self) -> None:
        self._show_why()

    def _groups(self) -> tuple[PlacementGroup, ...]:
        snapshot = self._state.cluster_snapshot
        return snapshot.placement_groups if snapshot else ()

    def _show_why(self) -> None:
        groups = self._groups()
        chosen = self.query_one(PlacementTable).selected_group_id
        featured = featured_group(groups, chosen)
        why = self.query_one("#placement-why", Static)
        why.set_class(featured is None, "-settled")
        why.set_class(featured is not None and state_label(featured) == "INFEASIBLE", "-error")
        if featured is not None:
            why.border_title = "why it waits"
            why.update(describe_why(featured))
        else:
            why.border_title = "placement"
            why.update(Content(ALL_PLACED if groups else NO_GROUPS))

    def _redraw(self) -> None:
        state = self._state
        snapshot = state.cluster_snapshot
        self.query_one(ClusterBar).show(state.cluster, state.problem)
        self._show_age()
        groups = self._groups()
        nodes = self.query_one(NodeTable)
        nodes.show_nodes(snapshot.cluster.nodes if snapshot else ())
        # Why nodes elsewhere show no host figures (a quiet note: hover, or status --json).
        nodes.tooltip = snapshot.cluster.host_note if snapshot else None
        self.query_one(GpuSlots).show(snapshot)
        self.query_one("#placement-summary", Static).update(shown(describe_groups(groups)))
        self.query_one(PlacementTable).show_groups(groups)
        self._show_why()

    def _show_age(self) -> None:
        self.query_one(ClusterBar).show_age(self._age_text())
