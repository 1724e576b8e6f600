"""The characters raytop draws pictures with: Unicode blocks, or plain ASCII (``--ascii``)
for terminals and fonts without them. Widgets ask ``glyphs_of(self)`` and never spell a
block character themselves, so one flag changes every picture."""

from __future__ import annotations

from dataclasses import dataclass

from textual.dom import DOMNode


@dataclass(frozen=True)
class Glyphs:
    spark: str  # sparkline levels, lowest first
    bar_full: str  # a progress bar's done part
    bar_empty: str  # and its rest
    ellipsis: str  # a cut text's end
    arrow: str  # "this leads to that"
    at_least: str  # "for ≥12s": counted from raytop's first look
    unlimited: str = "∞"  # a retry budget of -1
    best: str = "★"  # the experiment's best trial (``Experiment.best_trial``)


UNICODE = Glyphs(
    spark="▁▂▃▄▅▆▇█", bar_full="█", bar_empty="░", ellipsis="…", arrow="→", at_least="≥"
)
ASCII = Glyphs(
    spark="_.-:=+*#",
    bar_full="#",
    bar_empty=".",
    ellipsis="~",
    arrow=">",
    at_least=">=",
    unlimited="inf",
    best="*",
)


def glyphs_of(node: DOMNode) -> Glyphs:
    """The app's glyph set (``RaytopApp.glyphs``); Unicode outside raytop's app."""
    try:
        return getattr(node.app, "glyphs", UNICODE)
    except Exception:  # not mounted yet: no app
        return UNICODE
