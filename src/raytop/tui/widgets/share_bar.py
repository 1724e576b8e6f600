"""Time-share bars: where a rank's (or a run's) wall time went, as one stacked bar, a
segment per kind of work (``model.time_shares``), in the theme's colours; in ASCII mode
(``--ascii``) each segment is spelled by its kind's letter, so the bar reads without
colour too. The shares are the pipeline's (``Worker.recent_time_shares``, over the last
minute, else over the attempt); this module only draws them."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.content import Content

from raytop.model import TrainRun, Worker
from raytop.model.records import SHARE_KINDS
from raytop.model.time_shares import SHARE_LABELS, report_share
from raytop.tui.widgets.table_cells import Themed

# The theme colour of each kind (the Content styles; the tables' component classes
# ``share-bar--<kind>`` are coloured the same in raytop.tcss).
KIND_STYLE = {
    "compute": "$success", "data_loader": "$warning", "collective": "$secondary",
    "io": "$accent", "report_barrier": "$error", "report_upload": "$primary",
    "report_wait": "$error-lighten-2", "report_other": "$text-muted",
}  # fmt: skip
LETTER = {
    "compute": "c", "data_loader": "d", "collective": "k", "io": "i", "report_barrier": "b",
    "report_upload": "u", "report_wait": "w", "report_other": "r",
}  # fmt: skip
KIND_OF_LETTER = {letter: kind for kind, letter in LETTER.items()}
COMPONENTS = frozenset(f"share-bar--{kind}" for kind in SHARE_KINDS)


def segments(shares: dict[str, float], width: int) -> tuple[tuple[str, int], ...]:
    """(kind, cells) in ``SHARE_KINDS`` order, ``width`` cells in all (largest remainders
    get the rounding), kinds of no cell left out."""
    exact = [(kind, shares.get(kind, 0.0) * width) for kind in SHARE_KINDS]
    cells = {kind: int(value) for kind, value in exact}
    left = width - sum(cells.values())
    for kind, _ in sorted(exact, key=lambda kv: kv[1] - int(kv[1]), reverse=True)[:left]:
        cells[kind] += 1
    return tuple((kind, cells[kind]) for kind in SHARE_KINDS if cells[kind])


def shown_shares(w: Worker) -> dict[str, float] | None:
    """A rank's shares over the last minute, else over its attempt."""
    return w.recent_time_shares or w.time_shares


def bar_text(shares: dict[str, float] | None, width: int) -> str:
    """The bar as letters (what a cell caches by): one per cell, "" without shares."""
    if not shares:
        return ""
    return "".join(LETTER[kind] * n for kind, n in segments(shares, width))


def bar_content(letters: str, block: str, ascii_: bool) -> Content:
    """``letters`` (``bar_text``) drawn in the theme's colours."""
    parts = []
    start = 0
    for i in range(1, len(letters) + 1):
        if i == len(letters) or letters[i] != letters[start]:
            kind = KIND_OF_LETTER[letters[start]]
            glyph = letters[start] if ascii_ else block
            parts.append(Content.styled(glyph * (i - start), KIND_STYLE[kind]))
            start = i
    return Content.assemble(*parts)


@dataclass(frozen=True)
class ShareBarCell:
    """A table cell drawing a bar (``bar_text``'s letters) from its table's component
    classes, so a theme switch recolours it (its table sorts it by the compute share:
    a ``SortedCell`` around it)."""

    letters: str
    ascii_: bool
    block: str
    table: Themed = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.letters

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = Text(end="", no_wrap=True)
        for letter in self.letters:
            style = self.table.component_style(f"share-bar--{KIND_OF_LETTER[letter]}")
            text.append(letter if self.ascii_ else self.block, style)
        yield text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(len(self.letters), len(self.letters))


def legend(shares: dict[str, float], block: str, ascii_: bool, limit: int = 4) -> Content:
    """``█ compute 35% █ waiting for the controller 55% …``: the largest ``limit`` kinds."""
    ranked = sorted(((k, v) for k, v in shares.items() if v >= 0.005), key=lambda kv: -kv[1])
    parts: list[Content | str] = []
    for kind, share in ranked[:limit]:
        glyph = LETTER[kind] if ascii_ else block
        parts += [Content.styled(glyph, KIND_STYLE[kind]), f" {SHARE_LABELS[kind]} {share:.0%}  "]
    return Content.assemble(*parts)


def run_time_line(run: TrainRun, width: int, block: str, ascii_: bool) -> Content | None:
    """``goodput 35% ████░░░░ compute 35% · report 62% …`` for a run with shares."""
    shares = run.recent_time_shares or run.time_shares
    if not shares or run.goodput is None:
        return None
    bar_width = max(8, min(20, width // 5))
    return Content.assemble(
        f"goodput {run.goodput:.0%} ",
        bar_content(bar_text(shares, bar_width), block, ascii_),
        " ",
        legend(shares, block, ascii_, limit=3),
        f"(report {report_share(shares):.0%})" if report_share(shares) >= 0.005 else "",
    )


__all__ = ["COMPONENTS", "KIND_STYLE", "LETTER", "ShareBarCell", "bar_content", "bar_text",
           "legend", "run_time_line", "segments", "shown_shares"]  # fmt: skip
