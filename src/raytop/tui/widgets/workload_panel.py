"""The overview's view of every other run on the cluster, above the experiment it shows.

Plain ``raytop``: the one list (``WorkloadTable``), as many rows as the screen spares
(``rows_for``), when the cluster runs more than the experiment on view. ``raytop run``
(``own_first``): its own experiment stays the screen, and the rest is one line away,
"2 other runs hold 4 CPU · n: every run" (``model.workloads.others_line``).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from raytop.model.workloads import Workload, others_line
from raytop.tui.format import shown
from raytop.tui.widgets.workload_table import WorkloadTable

MOST_ROWS = 8  # rows of the list at most, on any screen
EVERY_RUN_KEY = "n: every run"


def rows_for(screen_height: int) -> int:
    """Rows the list may take on a screen this tall: 3 at 24 lines, 6 at 30, 8 from 34.
    The experiment below keeps the rest."""
    return max(2, min(MOST_ROWS, (screen_height - 18) // 2))


class WorkloadPanel(Vertical):
    """The list, or the one line; hidden when nothing else runs."""

    def compose(self) -> ComposeResult:
        yield Static(id="others-line")
        yield WorkloadTable(id="workloads")

    def show(
        self, rows: tuple[Workload, ...], own: frozenset[str], *, own_first: bool, height: int
    ) -> int:
        """Show ``rows`` (``own``: the keys of the experiments the screen is about) and
        return the lines taken."""
        line, table = self.query_one("#others-line", Static), self.query_one(WorkloadTable)
        others = others_line(rows, own)
        if own_first or others is None:
            table.display = False
            line.display = own_first and others is not None
            self.display = line.display
            if line.display:
                line.update(shown(f"{others} · {EVERY_RUN_KEY}"))
            return int(line.display)
        line.display, table.display, self.display = False, True, True
        table.show_workloads(rows)
        table.styles.height = 1 + min(len(rows), rows_for(height))
        return 1 + min(len(rows), rows_for(height))
