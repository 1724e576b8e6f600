"""Every placement group, the waiting ones first: who it is for, its state, its bundles.

Keyed by placement group id and diff-updated; a group that gets placed moves down to the
placed ones, and the cursor goes with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from raytop.model import Bundle, PlacementGroup
from raytop.model.format import fmt_duration, fmt_value
from raytop.tui.format import fmt_bytes
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.table_cells import StyledCell, left, number

_BYTES = frozenset({"memory", "object_store_memory"})
LEAKED = "LEAKED"

_COLUMNS = (
    ColumnSpec("id", "id", 8),
    ColumnSpec("owner", "owner", 14),
    ColumnSpec("strategy", "strategy", 13),
    ColumnSpec("state", "state", 10),
    ColumnSpec("attempts", "attempts", 8, "right"),
    ColumnSpec("age", "age", 6, "right"),
    ColumnSpec("bundles", "bundles → node", 18),
    ColumnSpec("leaked", "", len(LEAKED)),
)
# Dropped first when the table is too narrow (at 80 columns: strategy and attempts).
_DROP_ORDER = ("strategy", "attempts", "age")
_GROW: dict[str, int | None] = {"owner": 22, "bundles": None}

STATES = ("pending", "infeasible", "rescheduling", "prepared", "created")


def state_label(pg: PlacementGroup) -> str:
    """Its state; an unplaced group the scheduler found infeasible says ``INFEASIBLE``."""
    if not pg.placed and pg.scheduling_state == "INFEASIBLE":
        return "INFEASIBLE"
    return pg.state


def fmt_bundle(bundle: Bundle, label: str | None = None) -> str:
    """``0:{CPU:1,GPU:1}→a3f9c2d1``; ``→·`` while unplaced. ``label`` replaces the index."""
    resources = ",".join(
        f"{r}:{fmt_bytes(v) if r in _BYTES else fmt_value(v)}"
        for r, v in sorted(bundle.resources.items())
    )
    where = bundle.node_id[:8] if bundle.node_id else "·"
    return f"{bundle.index if label is None else label}:{{{resources}}}→{where}"


def fmt_bundles(pg: PlacementGroup) -> str:
    """Each bundle and its node; a run of alike bundles on one node is written once:
    ``0-3:{GPU:1}→a3f9c2d1 4-7:{GPU:1}→·``."""
    runs: list[list[Bundle]] = []
    for bundle in sorted(pg.bundles, key=lambda b: b.index):
        last = runs[-1][-1] if runs else None
        alike = last is not None and (last.resources, last.node_id) == (
            bundle.resources,
            bundle.node_id,
        )
        if alike and last is not None and bundle.index == last.index + 1:
            runs[-1].append(bundle)
        else:
            runs.append([bundle])
    return " ".join(
        fmt_bundle(run[0], f"{run[0].index}-{run[-1].index}" if len(run) > 1 else None)
        for run in runs
    )


def waiting_first(groups: Sequence[PlacementGroup]) -> list[PlacementGroup]:
    """The unplaced groups, then the placed ones; each in the snapshot's order."""
    return sorted(groups, key=lambda g: g.placed)


class PlacementTable(KeyedTable):
    """One row per placement group, keyed by its id; the narrowest columns go first."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        *(f"placement-table--{state}" for state in STATES),
        "placement-table--leaked",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._groups: tuple[PlacementGroup, ...] = ()

    @property
    def selected_group_id(self) -> str | None:
        return self.cursor_key()

    def show_groups(self, groups: tuple[PlacementGroup, ...]) -> None:
        self._groups = groups
        columns = self.fit_columns(_COLUMNS, drop=_DROP_ORDER, grow=_GROW)
        keys = tuple(column.key for column in columns)
        self.sync_rows({g.pg_id: self._cells(g, keys) for g in waiting_first(groups)}, columns)

    def on_resize(self) -> None:
        # Which columns fit depends on our width: rebuild them if that changed.
        self.show_groups(self._groups)

    def _cells(self, pg: PlacementGroup, columns: tuple[str, ...]) -> tuple[object, ...]:
        state = state_label(pg)
        everything: dict[str, object] = {
            "id": left(pg.pg_id[:8]),
            "owner": left(pg.owner_label),
            "strategy": left(pg.strategy),
            "state": StyledCell(state, f"placement-table--{state.lower()}", self),
            "attempts": number(str(pg.attempts), pg.attempts),
            "age": number(fmt_duration(pg.age_s), pg.age_s),
            "bundles": left(fmt_bundles(pg)),
            "leaked": StyledCell(LEAKED if pg.leaked else "", "placement-table--leaked", self),
        }
        return tuple(everything[key] for key in columns)
