"""The scheduler decisions of this driver process, from ``probe.scheduler_probe``'s
schedulers to the ``TrialProbe``: one line per trial, bounded, thread-safe. Deliberately
free of Ray imports: the probe reads it whether or not the run has a scheduler."""

from __future__ import annotations

import threading
from collections import OrderedDict

from raytop.model.snapshot import MAX_SCHEDULER_DECISION

MAX_TRACKED = 100_000  # trials whose decision is kept (the spec's trial cap)


class Decisions:
    """Trial id -> its latest scheduler decision (a line, or None once it no longer
    holds), shared in the driver process between the scheduler and the TrialProbe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: OrderedDict[str, str | None] = OrderedDict()

    def record(self, trial_id: str, line: str | None) -> None:
        if line is not None:
            line = " ".join(line.split())
            if len(line) > MAX_SCHEDULER_DECISION:
                line = line[: MAX_SCHEDULER_DECISION - 1] + "…"
        with self._lock:
            self._lines[trial_id] = line
            self._lines.move_to_end(trial_id)
            while len(self._lines) > MAX_TRACKED:
                self._lines.popitem(last=False)

    def lookup(self, trial_id: str) -> tuple[bool, str | None]:
        """(whether a scheduler here ever decided about the trial, its line or None)."""
        with self._lock:
            if trial_id not in self._lines:
                return False, None
            return True, self._lines[trial_id]

    def clear(self) -> None:
        with self._lock:
            self._lines.clear()


decisions = Decisions()
