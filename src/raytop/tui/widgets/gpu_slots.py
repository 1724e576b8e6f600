"""Who holds each GPU: one line per alive node with GPUs, a slot per logical GPU index.

``a3f9c2d1 GPU [0 t1·r0][1 t1·r1][2 ·][3 ·]``: the ranks of the runs raytop sees claim
their ``gpu_ids`` on their node; a free slot is ``·``. GPUs Ray counts as used that no
run claims are held by something raytop cannot see, and the line says how many.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from raytop.model import Node, Snapshot, TrainRun
from raytop.model.format import fmt_value
from raytop.tui.format import shown_lines

FREE = "·"
NO_GPUS = "no alive node has GPUs"


def gpu_holders(runs: Sequence[TrainRun]) -> dict[tuple[str, str], list[str]]:
    """(node id, GPU id) -> who holds it (``t1·r0``: trial id, else run name, and rank).

    A finished run's ranks have let go of theirs."""
    holders: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        if run.finished:
            continue
        owner = run.trial_id or run.run_name
        for worker in sorted(run.workers, key=lambda w: w.rank):
            if worker.node_id is None:
                continue
            for gpu in worker.gpu_ids:
                holders.setdefault((worker.node_id, gpu), []).append(f"{owner}·r{worker.rank}")
    return holders


def node_slots(node: Node, holders: dict[tuple[str, str], list[str]]) -> list[Content]:
    """The node's slots, then (if any) how many used GPUs no run claims."""
    slots = []
    claimed = 0
    for index in range(int(node.resources_total.get("GPU", 0))):
        who = holders.get((node.node_id, str(index)))
        claimed += bool(who)
        label = Content.styled(",".join(who), "$text-accent") if who else (
            Content.styled(FREE, "$text-muted")
        )  # fmt: skip
        slots.append(Content.assemble(f"[{index} ", label, "]"))
    others = node.used("GPU") - claimed
    if others > 0:
        slots.append(Content.styled(f" {fmt_value(others)} used by others", "$text-warning"))
    return slots


def slot_lines(snapshot: Snapshot | None, width: int) -> list[Content]:
    """One line per alive node with GPUs; a node whose slots overflow ``width``
    continues on indented lines (``width`` <= 0: never wrap)."""
    if snapshot is None:
        return []
    holders = gpu_holders(snapshot.all_runs())
    lines: list[Content] = []
    for node in snapshot.cluster.nodes:
        if not node.alive or node.resources_total.get("GPU", 0) <= 0:
            continue
        prefix = Content.assemble(Content.styled(node.node_id[:8], "bold"), " GPU ")
        indent = prefix.cell_length
        line = prefix
        for slot in node_slots(node, holders):
            full = 0 < width < line.cell_length + slot.cell_length
            if full and line.cell_length > indent:  # a slot that fits nowhere gets a line
                lines.append(line)
                line = Content(" " * indent)
            line = line + slot
        lines.append(line)
    return lines or [Content.styled(NO_GPUS, "$text-muted")]


class GpuSlots(Static):
    """Redraws on each snapshot and when its width changes (the slots wrap by width)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._snapshot: Snapshot | None = None

    def show(self, snapshot: Snapshot | None) -> None:
        self._snapshot = snapshot
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self.update(shown_lines(slot_lines(self._snapshot, self.content_region.width)))
