"""Repeated findings of one kind on one subject are one finding, with a count.

A run that writes a colliding ``model.pt`` every epoch collides in every checkpoint: thirty
ERROR lines for thirty epochs say one thing thirty times and push every other finding off
the screen. A finding that can repeat names what it is about (``model.finding.about``: a
checkpoint folder); ``fold`` keeps one finding per kind, severity, subject and run, with
how many there were, the first and the latest, and the latest's message and evidence, at
the place of the first. Findings that cannot repeat (``first`` None) pass unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from raytop.model import Finding
from raytop.model.finding import MAX_OCCURRENCES


def fold(findings: list[Finding]) -> list[Finding]:
    """``findings`` with the repeats of each (kind, severity, subject, run) folded into
    the first's place; the order of the rest is kept."""
    out: list[Finding] = []
    where: dict[tuple[str, str, str, str], int] = {}
    for finding in findings:
        if finding.first is None:
            out.append(finding)
            continue
        key = (finding.kind, finding.severity.value, finding.subject, str(finding.run_id))
        if key not in where:
            where[key] = len(out)
            out.append(finding)
            continue
        earlier = out[where[key]]
        out[where[key]] = replace(
            finding,
            count=earlier.count + finding.count,
            first=earlier.first,
            occurrences=(earlier.occurrences + finding.occurrences)[-MAX_OCCURRENCES:],
        )
    return out
