"""A ``Finding``: one diagnosis, and how many times it happened on its subject.

Some findings repeat: a run that saves a colliding ``model.pt`` every epoch collides in
every checkpoint. Thirty lines saying the same thing hide the one line that differs, so
``diagnose`` folds the occurrences of one kind on one subject into one finding
(``diagnose.repeats``) that says how many there were and what the first and the latest
were about (a checkpoint folder); the faces show that count. Kept apart from
``model.snapshot`` (which re-exports it through ``raytop.model``) so that the judgement
and its display share one small definition.

What a finding is about is typed (``run_id``, ``attempt_id``, ``trial_id``, ``ranks``, and
the few facts of a hang a face shows): made once by ``diagnose`` and read by every face
from these fields, never out of ``evidence``, whose keys differ kind by kind (a barrier's
``missing_ranks``, a collective's ``holding_ranks``, an upload's ``uploading_ranks``) and
stay for ``status --json`` readers.

Stdlib only (``model`` floor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raytop.model.stdlib import StrEnum

MAX_OCCURRENCES = 20  # what the latest occurrences were about, kept in a folded finding


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what is wrong (or noteworthy), about what, in one line.

    A finding that can repeat on its subject names what this occurrence is about
    (``first`` = ``latest`` = e.g. the checkpoint folder, ``occurrences`` that one); once
    folded, ``count`` says how many there were, ``first`` and ``latest`` what the first and
    the latest were about, ``occurrences`` the latest ``MAX_OCCURRENCES`` (oldest first),
    and ``message`` / ``evidence`` are the latest's. A finding that never repeats keeps
    ``count`` 1 and ``first`` None.

    ``run_id``, ``trial_id``: the Train run and the Tune trial it is about (None: none).
    ``attempt_id``: the attempt (ledger page) whose live state was judged; None for a
    finding about the run as a whole (its checkpoints, its attempts' history), which is
    about every attempt of it. ``ranks``: the ranks it names (those a hang waits for: a
    barrier's missing ranks, a collective's holders, the ranks still uploading; the rank a
    rank finding is about; a checkpoint's ranks); ``waiting_ranks``: the ranks that wait
    for them. ``report_index``, ``waited_s``: the report a stall waits in and for how
    long, where the kind has them."""

    kind: str
    severity: Severity
    subject: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    count: int = 1
    first: str | None = None
    latest: str | None = None
    occurrences: tuple[str, ...] = ()
    run_id: str | None = None
    attempt_id: str | None = None
    trial_id: str | None = None
    ranks: tuple[int, ...] = ()
    waiting_ranks: tuple[int, ...] = ()
    report_index: int | None = None
    waited_s: float | None = None

    def times(self) -> str:
        """``×30`` for a folded finding; "" for one that happened once."""
        return f"×{self.count}" if self.count > 1 else ""

    def span(self) -> str:
        """``first checkpoint_000000, latest checkpoint_000029`` for a folded finding whose
        occurrences were about different things; "" otherwise."""
        if self.count < 2 or self.first is None or self.first == self.latest:
            return ""
        return f"first {self.first}, latest {self.latest}"

    def line(self) -> str:
        """The message with its repeats, as the text faces show it:
        ``… ×30 (first checkpoint_000000, latest checkpoint_000029)``."""
        span = self.span()
        repeats = f"{self.times()} ({span})" if span else self.times()
        return f"{self.message} {repeats}" if repeats else self.message


def about(what: str) -> dict[str, Any]:
    """The fields of a finding that may repeat, about ``what``: ``Finding(…, **about(x))``."""
    return {"first": what, "latest": what, "occurrences": (what,)}


def from_json(data: dict[str, Any]) -> Finding:
    """A finding of ``status --json`` (any raytop's: the repeat and reference fields are
    optional)."""
    return Finding(**{
        **data,
        "severity": Severity(data["severity"]),
        "occurrences": tuple(data.get("occurrences", ())),
        "ranks": tuple(data.get("ranks", ())),
        "waiting_ranks": tuple(data.get("waiting_ranks", ())),
    })  # fmt: skip
