"""How long is too long: the limits every diagnosis and every derived rank state use.

One value per collector (``--stall-after``, ``--waiting-after``), passed down, never a
second default in a face."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    stall_after_s: float = 60.0  # a rank waiting in report this long for another = stall
    dead_after_s: float = 15.0  # no heartbeat this long (the probe beats every ~1 s)
    silent_factor: float = 10.0  # no report for this many times its usual interval…
    silent_min_s: float = 60.0  # …and at least this long
    waiting_after_s: float = 300.0  # a feasible placement group pending this long
    checkpoint_slow_after_s: float = 300.0  # a checkpoint still uploading this long
