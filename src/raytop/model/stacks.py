"""Who took a rank's stack, and what one try to take it answered.

A rank with raytop's probe answers a stacks request itself (``Worker.stack_by`` "probe").
A rank with no probe cannot: raytop reads it from outside, with py-spy, itself when the
worker runs on raytop's own node ("py-spy"), else through Ray's dashboard, whose agent on
the worker's node runs py-spy for it ("dashboard"). Either way the answer is the dump, or
one line saying why there is none (``StackAnswer.problem``): a face shows which.
"""

from __future__ import annotations

from dataclasses import dataclass

STACK_BY_PROBE = "probe"  # the rank's ReportProbe, through the ledger
STACK_BY_PY_SPY = "py-spy"  # py-spy run by raytop, on raytop's own node
STACK_BY_DASHBOARD = "dashboard"  # Ray's dashboard: py-spy run by the worker node's agent
STACK_SOURCES = (STACK_BY_PROBE, STACK_BY_PY_SPY, STACK_BY_DASHBOARD)


@dataclass(frozen=True)
class StackAnswer:
    """One dump of one process: ``text`` (py-spy's dump, capped) or ``problem`` (one line:
    why there is none), and who was asked (``by``, one of ``STACK_SOURCES``)."""

    by: str
    text: str | None = None
    problem: str | None = None
