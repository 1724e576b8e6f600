"""Stalls, impossible to miss: a line on the overview, a banner on the Run screen.

A ``barrier_stall`` finding (``raytop.diagnose.ledger``) means some ranks wait inside
``ray.train.report`` for ranks that never arrive; the other hang classes
(``model.hangs``: a stuck controller, upload, collective, data loader, I/O) are shown the
same way: the run hangs until someone looks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Digits, Static

from raytop.model import Finding, Severity
from raytop.model.format import fmt_duration
from raytop.model.hangs import HANG_KINDS, HANG_LABELS
from raytop.tui.format import shown_lines
from raytop.tui.widgets.findings_list import repeats
from raytop.tui.widgets.line import Line

RUN_KINDS = (*HANG_KINDS, "report_mispaired", "rank_dead", "rank_silent", "retry_loop",
             "progress_backwards", "budget_exhausted", "straggler")  # fmt: skip
_MAX_DIGITS_CHARS = 11  # big digits are 3 columns each: at most ~33 columns of ranks
_STYLE = {
    Severity.ERROR: "bold $text-error",
    Severity.WARNING: "bold $text-warning",
    Severity.INFO: "bold $text-primary",
}


def stalls(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.kind in HANG_KINDS]


def describe_stall_line(findings: Sequence[Finding]) -> Content:
    """The overview's banner: one paragraph per stalled run, with the way in."""
    lines = []
    for f in findings:
        trial = f.trial_id
        where = f"{f.subject} (trial {trial})" if trial else f.subject
        hint = " — ⏎ or w on the trial for its ranks" if trial else ""
        lines.append(
            Content.assemble(
                Content.styled(f"{HANG_LABELS[f.kind]} {where}: ", "bold"), f.message, hint
            )
        )
    return shown_lines(lines)


class StallLine(Line):
    """Overview: every stall of the snapshot; hidden when there is none."""

    def show(self, findings: Sequence[Finding]) -> None:
        found = stalls(findings)
        self.display = bool(found)
        self.update(describe_stall_line(found))


def _ranks_for_digits(ranks: Sequence[int]) -> tuple[str, int]:
    """As many ranks as fit the big digits, and how many were left out."""
    shown: list[str] = []
    for rank in ranks:
        if len(" ".join([*shown, str(rank)])) > _MAX_DIGITS_CHARS:
            break
        shown.append(str(rank))
    return " ".join(shown), len(ranks) - len(shown)


def describe_stall(finding: Finding) -> Content:
    head = [HANG_LABELS.get(finding.kind, "STALL")]
    if finding.report_index is not None:
        head.append(f"report {finding.report_index}")
    if finding.waited_s is not None:
        head.append(f"waiting {fmt_duration(finding.waited_s)}")
    return shown_lines(
        [
            Content.styled(" · ".join(head), "bold"),
            Content(finding.message),
            Content.styled("s: every rank's Python stack", "italic"),
        ]
    )


class StallBanner(Horizontal):
    """Run screen: the stall of this run, with the ranks it waits for in big digits."""

    def compose(self) -> ComposeResult:
        with Vertical(id="stall-missing"):
            yield Static(id="stall-label")
            yield Digits(id="stall-ranks")
        yield Static(id="stall-message")

    def show(self, finding: Finding | None) -> None:
        self.display = finding is not None
        if finding is None:
            return
        ranks = finding.ranks
        digits, left_out = _ranks_for_digits(ranks)
        label = "MISSING RANK" if len(ranks) == 1 else f"MISSING RANKS ({len(ranks)})"
        if finding.kind != "barrier_stall":
            label = "HOLDING IT UP" if ranks else "ALL RANKS WAIT"
        if left_out:
            label += f" +{left_out} more"
        self.query_one("#stall-label", Static).update(Content(label))
        self.query_one("#stall-ranks", Digits).update(digits)
        self.query_one("#stall-message", Static).update(describe_stall(finding))


class RunFindings(Line):
    """Run screen: the other ledger findings of this run (mis-paired, dead, silent ranks),
    as many as its lines hold (``MAX_LINES``, its CSS ``max-height``), then how many more:
    a run that lost 1,600 of its 2,000 ranks has a finding for each, and the rank table
    under the list shows each rank's state (drawing all 1,600 lines each refresh, for six
    to be seen, was 0.2 s of it)."""

    MAX_LINES = 6

    def show(self, findings: Sequence[Finding]) -> None:
        self.display = bool(findings)
        shown_now = findings if len(findings) <= self.MAX_LINES else findings[: self.MAX_LINES - 1]
        lines = [
            Content.assemble(
                Content.styled(f"{f.severity.value.upper():<7}", _STYLE.get(f.severity, "bold")),
                " ",
                *repeats(f),
            )
            for f in shown_now
        ]
        if len(shown_now) < len(findings):
            more = len(findings) - len(shown_now)
            lines.append(Content.styled(f"… and {more} more", "$text-muted"))
        self.update(shown_lines(lines))
