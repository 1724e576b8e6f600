"""The diagnoses raytop made about the run, worst first; hidden when there are none."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from raytop.model import Finding, Severity
from raytop.model.hangs import HANG_KINDS
from raytop.tui.format import fit_words, shown, shown_lines
from raytop.tui.glyphs import glyphs_of
from raytop.tui.widgets.line import Line

_MAX_SHOWN = 4
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
# Within a severity, a hung run outranks everything else: it burns the whole allocation.
_URGENT_KINDS = (*HANG_KINDS, "report_mispaired", "rank_dead")
_STYLE = {
    Severity.ERROR: "bold $text-error",
    Severity.WARNING: "bold $text-warning",
    Severity.INFO: "bold $text-primary",
}


def describe_findings(
    findings: Sequence[Finding], width: int | None = None, ellipsis: str = "…"
) -> Content:
    """Worst first, a line each, cut at a word when wider than ``width``."""
    ordered = sorted(findings, key=_urgency)
    lines = [
        Content.assemble(
            Content.styled(f"{f.severity.value.upper():<7}", _STYLE.get(f.severity, "bold")),
            " ",
            Content.styled(f.subject, "bold"),
            "  ",
            *repeats(f),
        )
        for f in ordered[:_MAX_SHOWN]
    ]
    lines = [shown(line) for line in lines]
    if width is not None:
        lines = [fit_words(line, width, ellipsis) for line in lines]
    if len(ordered) > _MAX_SHOWN:
        lines.append(Content.styled(f"… and {len(ordered) - _MAX_SHOWN} more", "$text-muted"))
    return shown_lines(lines)


def repeats(finding: Finding) -> tuple[Content | str, ...]:
    """The message of ``finding`` with its repeats: the count first (a line cut to the
    width keeps it), the first and latest occurrence after the message."""
    times, span = finding.times(), finding.span()
    return (
        *((Content.styled(times, "bold"), " ") if times else ()),
        finding.message,
        *((f" ({span})",) if span else ()),
    )


def lines_taken(findings: Sequence[Finding]) -> int:
    """How many lines the list takes: its rule, the findings shown, the "more" line."""
    if not findings:
        return 0
    return 1 + min(len(findings), _MAX_SHOWN) + (len(findings) > _MAX_SHOWN)


def _urgency(finding: Finding) -> tuple[int, int]:
    kind = (
        _URGENT_KINDS.index(finding.kind) if finding.kind in _URGENT_KINDS else len(_URGENT_KINDS)
    )
    return (_RANK.get(finding.severity, len(_RANK)), kind)


class FindingsList(Line):
    def show(self, findings: Sequence[Finding]) -> None:
        self.display = bool(findings)
        self.border_title = Content(f"findings ({len(findings)})")
        width = (self.size.width or self.app.size.width) - 2  # padding
        self.update(describe_findings(findings, width, glyphs_of(self).ellipsis))
