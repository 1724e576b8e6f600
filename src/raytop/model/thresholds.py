"""How long is too long: the limits every diagnosis and every derived rank state use.

One value per collector (``--stall-after``, ``--waiting-after``), passed down, never a
second default in a face."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    # A stall: no progress for max(stall_factor × the run's median report interval, 1.5 ×
    # its longest recent one, stall_floor_s), learned per run (``diagnose.hang``); before a
    # run has two intervals, or with ``--stall-after`` given (learn_stall False), this:
    stall_after_s: float = 60.0
    learn_stall: bool = True
    stall_factor: float = 3.0
    stall_floor_s: float = 8.0
    dead_after_s: float = 15.0  # no heartbeat this long (the probe beats every ~1 s)
    silent_factor: float = 10.0  # no report for this many times its usual interval…
    silent_min_s: float = 60.0  # …and at least this long
    waiting_after_s: float = 300.0  # a feasible placement group pending this long
    checkpoint_slow_after_s: float = 300.0  # a checkpoint still uploading this long

    @classmethod
    def given(cls, stall_after_s: float | None, **others: float) -> Thresholds:
        """The thresholds of a command line: ``--stall-after`` given fixes the stall
        threshold; not given (None), it is learned from each run."""
        if stall_after_s is None:
            return cls(**others)
        return cls(stall_after_s=stall_after_s, learn_stall=False, **others)
