"""A rank's optimizer steps, and their rate over the last minute: what tells a rank that
does the same kind of work as its peers, only slower (a slower node or GPU, CPU
contention), before a barrier makes its peers wait for it.

Counted by torch's own process-wide hook, ``torch.optim.optimizer.
register_optimizer_step_post_hook`` (one Python call per ``optimizer.step()``), installed
from the probe's thread once the rank has loaded torch (never imported here: a rank
without torch counts nothing). The rate is taken from one sample a second of the count.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

RATE_WINDOW_S = 60.0
MIN_SPAN_S = 20.0  # a rate over less time than this says more about the start than the pace


class StepCounter:
    """The count (bumped by torch's hook, in the training thread) and its samples."""

    def __init__(self) -> None:
        self.steps = 0
        self._handle: Any = None
        self._samples: deque[tuple[float, int]] = deque()

    def _count(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += 1

    def _install(self) -> None:
        optimizer = sys.modules.get("torch.optim.optimizer")
        register = getattr(optimizer, "register_optimizer_step_post_hook", None)
        if register is not None:
            self._handle = register(self._count)

    def sample(self, now: float) -> None:
        """Once a second, on the probe's thread: install the hook if torch is in, and
        note the count."""
        if self._handle is None:
            self._install()
            return
        if not self.steps:
            return  # the rate starts at the first step: start-ups differ, paces should not
        self._samples.append((now, self.steps))
        while self._samples and self._samples[0][0] < now - RATE_WINDOW_S:
            self._samples.popleft()

    def record(self) -> tuple[int | None, float | None]:
        """(steps counted, steps a second over the last minute since its first step);
        None each before the hook is in, the rate None until ``MIN_SPAN_S`` of steps."""
        if self._handle is None:
            return None, None
        if len(self._samples) < 2:
            return self.steps, None
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        if t1 - t0 < MIN_SPAN_S:
            return self.steps, None
        return self.steps, round((n1 - n0) / (t1 - t0), 3)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


__all__ = ["MIN_SPAN_S", "RATE_WINDOW_S", "StepCounter"]
