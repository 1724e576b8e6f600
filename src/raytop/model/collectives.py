"""What raytop shows of PyTorch's Flight Recorder dumps (``status --flight-recorder``):
per process group, how far each rank got and who is missing (``diagnose.collectives``
derives them from the dumps ``model.flight_recorder`` parsed), each run's ranks' answers
to the dump request, and the one line of what was done. Part of the ``Snapshot``'s JSON
(``flight_recorder``, docs/schema.md). Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RankProgress:
    """How far one rank got in one process group."""

    rank: int
    last_enqueued: int | None  # the newest collective it entered
    last_started: int | None
    last_completed: int | None
    last_op: str | None  # that newest collective's profiling name


@dataclass(frozen=True)
class GroupProgress:
    """One process group across the dumps: each rank's progress, the newest collective
    any rank entered (``newest``, ``newest_op``) and the ranks that did not enter it
    (``missing``: the ones the others wait for), plus members with no dump at all."""

    name: str
    desc: str
    ranks: tuple[RankProgress, ...]
    newest: int | None
    newest_op: str | None
    missing: tuple[int, ...]
    no_dump: tuple[int, ...] = ()
    line: str = ""  # ``message``, kept for the JSON form (set by diagnose.collectives)

    @property
    def message(self) -> str:
        """One line: ``group 0 (default_pg): ranks 1 missing from collective #4
        (nccl:all_reduce); rank 0 entered it``."""
        label = f"group {self.name}" + (f" ({self.desc})" if self.desc else "")
        if self.newest is None:
            return f"{label}: no collective recorded"
        op = f" ({self.newest_op})" if self.newest_op else ""
        there = [r.rank for r in self.ranks if r.rank not in self.missing]
        parts = []
        if self.missing:
            parts.append(
                f"{_ranks(self.missing)} missing from collective #{self.newest}{op}; "
                f"{_ranks(there)} entered it"
            )
        else:
            done = [r.rank for r in self.ranks if (r.last_completed or -1) >= self.newest]
            if len(done) == len(self.ranks):
                parts.append(f"every rank completed collective #{self.newest}{op}")
            else:
                parts.append(f"every dumped rank entered collective #{self.newest}{op}; "
                             f"{len(done)} of {len(self.ranks)} saw it complete")  # fmt: skip
        if self.no_dump:
            parts.append(f"no dump from {_ranks(self.no_dump)}")
        return f"{label}: " + "; ".join(parts)


def _ranks(ranks: tuple[int, ...] | list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


@dataclass(frozen=True)
class RankAnswer:
    """A rank's probe's answer to a dump request: one line (dump requested, or why not)."""

    rank: int
    answer: str


@dataclass(frozen=True)
class FlightRecorderRun:
    """One Train run (a torch trial) as ``status --flight-recorder`` shows it: what its
    ranks answered, the dumps found in its folder and what they say per process group."""

    trial_id: str | None
    run_name: str | None
    folder: str | None  # where its ranks' dumps go (None: the run has none)
    answers: tuple[RankAnswer, ...] = ()
    dumped_ranks: tuple[int, ...] = ()
    fresh_ranks: tuple[int, ...] = ()  # ranks whose dump is newer than the request
    groups: tuple[GroupProgress, ...] = ()
    warnings: tuple[str, ...] = ()  # one line per dump file that could not be used


@dataclass(frozen=True)
class FlightRecorderReport:
    """The answer to ``status --flight-recorder``: ``note`` says what was done (dumps
    requested, or not because of read-only), then each run."""

    note: str
    requested_at: float | None = None  # None: no request was made (read-only)
    runs: tuple[FlightRecorderRun, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FlightRecorderReport:
        runs = []
        for r in data.get("runs", ()):
            groups = tuple(
                GroupProgress(**{**g, "ranks": tuple(RankProgress(**p) for p in g["ranks"]),
                                 "missing": tuple(g["missing"]),
                                 "no_dump": tuple(g.get("no_dump", ()))})
                for g in r.get("groups", ())
            )  # fmt: skip
            runs.append(FlightRecorderRun(**{
                **r, "answers": tuple(RankAnswer(**a) for a in r.get("answers", ())),
                "dumped_ranks": tuple(r.get("dumped_ranks", ())),
                "fresh_ranks": tuple(r.get("fresh_ranks", ())),
                "groups": groups, "warnings": tuple(r.get("warnings", ())),
            }))  # fmt: skip
        return cls(note=data["note"], requested_at=data.get("requested_at"), runs=tuple(runs))
