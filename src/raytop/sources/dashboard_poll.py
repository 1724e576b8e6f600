"""How often raytop asks Ray's dashboard: at most every period, less and less while silent.

``sources.train_state`` and ``sources.remote_hosts`` each ask the dashboard one question on
the collector's thread, with a 1 s deadline. Their figures change no faster than a few
seconds, so each asks at most every ``period_s``; a dashboard that does not answer (none in
the cluster, a black-holed address) is asked less and less often, doubling up to
``MAX_BACKOFF_S``, so the deadline is paid rarely. Any answer, good or bad, ends the backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MAX_BACKOFF_S = 60.0


class DashboardPoll:
    """``due()``: is it time to ask again? Then ``asked(answered)`` says how it went, which
    sets the next time: ``period_s`` after an answer, ``period_s × 2^(n-1)`` (at most
    ``MAX_BACKOFF_S``) after the n-th silence in a row."""

    def __init__(self, period_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.period_s = period_s
        self._clock = clock
        self._next_at: float | None = None
        self.silent = 0  # asks in a row nothing answered

    def due(self) -> bool:
        return self._next_at is None or self._clock() >= self._next_at

    def asked(self, answered: bool) -> None:
        self.silent = 0 if answered else self.silent + 1
        self._next_at = self._clock() + self.period()

    def period(self) -> float:
        if not self.silent:
            return self.period_s
        return min(MAX_BACKOFF_S, self.period_s * 2 ** (self.silent - 1))
