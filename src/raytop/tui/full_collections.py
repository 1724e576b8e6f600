"""When Python's full garbage collections run in ``raytop``: in the poller, just before it
collects, at most every ``FULL_EVERY_S``, not whenever Python's counts say.

A full collection walks every object made since the app froze what it held after its
first snapshot (``RaytopApp.on_snapshot_ready``). At 2,000 ranks and 10,000 trials that is
the newest snapshot and the collector's caches, ~100,000 objects: a 0.05-0.1 s pause of
every thread. Python starts one when its allocation counts say so, in the middle of
whatever the app does: applying a snapshot, drawing its frame, handling a key. Here
Python's own full collections are off (its third threshold set out of reach; the young
generations are collected as before), and the poller runs one before a collect: the last
snapshot's frame was drawn a refresh ago and the next is not on its way, so no refresh
waits for it. (Run from the UI after a snapshot's frame, with Textual's
``call_after_refresh``, it waited for the screen's next refresh whenever the frame had
been drawn before the call was handled: that is the next snapshot's, which it delayed by
the whole pause, docs/PERFORMANCE.md.) Cyclic garbage that reaches the old generation
waits ``FULL_EVERY_S`` at most.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

FULL_EVERY_S = 10.0
_OUT_OF_REACH = 1 << 30  # gen-1 collections before Python would start a full one


class FullCollections:
    """Takes Python's full collections over (``take_over``) until ``give_back``."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, every_s: float = FULL_EVERY_S
    ) -> None:
        self._clock = clock
        self._every_s = every_s
        self._thresholds: tuple[int, int, int] | None = None  # Python's, while taken
        self._last = 0.0

    @property
    def taken(self) -> bool:
        return self._thresholds is not None

    def take_over(self) -> None:
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, _OUT_OF_REACH)
            self._last = self._clock()

    def between_refreshes(self) -> None:
        """The poller is about to collect: a full collection, if the last is ``every_s``
        old. Any thread may call it (the collection pauses them all)."""
        if self._thresholds is not None and self._clock() - self._last >= self._every_s:
            gc.collect()
            self._last = self._clock()

    def give_back(self) -> None:
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
