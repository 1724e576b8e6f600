"""Where a rank's wall time goes: the train loop's thread sampled about ten times a second
(on every wake of the probe's flush thread, never on the training thread), each sample
counting the time since the one before to the kind of work the thread is in.

Until the rank's first optimizer step or report (``startup``: building its model, joining
the process group, making its data loader) the time is its start-up, kept apart: a short
run's start-up would otherwise outweigh where its training's time goes. Then the kinds
(``model.records.SHARE_KINDS``): ``compute`` (the user's own code, the backward pass),
``data_loader``, ``collective``, ``io`` (other I/O), and ``train.report`` split into its
parts where this Ray's frames tell them (``wire.train_frames``): ``report_barrier``
(waiting for the other ranks to enter the same report), ``report_upload`` (the checkpoint
upload), ``report_wait`` (waiting for Train's controller to take the previous result),
``report_other`` (the rest of report, or all of it on a Ray whose frames are not known).

Kept over the attempt (this worker's life) and over the last ``RECENT_S`` seconds, in
seconds: the pipeline turns them into shares. A sample walks at most ``MAX_DEPTH`` frames
and reads no source line: a few microseconds, ten times a second.
"""

from __future__ import annotations

from collections import deque
from types import FrameType

from raytop.model.records import SHARE_KINDS
from raytop.probe.activity import PRECEDENCE, WAITING_KINDS, found_kinds, walk

RECENT_S = 60.0
MAX_STEP_S = 1.0  # a longer gap between samples (a paused process) counts this much
_SHARE_OF = {"collective": "collective", "data_loader": "data_loader", "io": "io",
             "backward": "compute"}  # fmt: skip


def rank_share(
    frame: FrameType | None, report_file: str, parts: dict[str, str], started: bool
) -> tuple[str, bool]:
    """(share, waiting): ``startup`` until the rank has ``started`` (its first optimizer
    step or report: building its model, joining the process group, making its data
    loader), then what its frames say (``classify_share``): a short run's start-up would
    otherwise count as its own code, and hide where its training's time goes."""
    return classify_share(frame, report_file, parts) if started else ("startup", False)


def classify_share(
    frame: FrameType | None, report_file: str, parts: dict[str, str]
) -> tuple[str, bool]:
    """(the share a thread whose innermost frame is ``frame`` is spending its time on,
    whether it is waiting on its peers): ``parts`` are Train's report frames (name →
    part) in files ending ``report_file``. Waiting is being in one of ``WAITING_KINDS``: a
    collective, a report, or a backward pass, which is ``compute`` among the shares yet
    where, under DDP, a rank waits in all_reduce for a slower one."""
    frames = walk(frame)
    found = found_kinds(frames)
    kind = next((k for k in PRECEDENCE if k in found), "user")
    if kind != "report":
        return _SHARE_OF.get(kind, "compute"), kind in WAITING_KINDS
    if parts:
        for f in frames:  # innermost first: the part the report is in now
            part = parts.get(f.f_code.co_name)
            if part is not None and f.f_code.co_filename.endswith(report_file):
                return part, True
    return "report_other", True


class TimeShares:
    """Seconds per kind over the attempt and over the last ``RECENT_S`` seconds, and how
    much of the recent ones the rank waited on its peers (``waiting``)."""

    def __init__(self) -> None:
        self.total = dict.fromkeys(SHARE_KINDS, 0.0)
        self.startup_s = 0.0
        self.recent = dict.fromkeys(SHARE_KINDS, 0.0)
        self.recent_waiting_s = 0.0
        self._window: deque[tuple[float, str, float, bool]] = deque()
        self._last: float | None = None

    def add(self, kind: str, now: float, waiting: bool = False) -> None:
        """The time since the last sample, spent in ``kind`` (the first sample only starts
        the clock), ``waiting`` on the rank's peers or not."""
        last, self._last = self._last, now
        if last is None:
            return
        step = min(max(now - last, 0.0), MAX_STEP_S)
        if kind == "startup":
            self.startup_s += step
            return
        self.total[kind] += step
        self.recent[kind] += step
        self.recent_waiting_s += step if waiting else 0.0
        self._window.append((now, kind, step, waiting))
        while self._window and self._window[0][0] <= now - RECENT_S:
            _, old, gone, waited = self._window.popleft()
            self.recent[old] = max(self.recent[old] - gone, 0.0)
            if waited:
                self.recent_waiting_s = max(self.recent_waiting_s - gone, 0.0)

    def record(self) -> tuple[dict[str, float], dict[str, float], float]:
        """(over the attempt, over the recent window): kind → seconds, the kinds with any;
        and the start-up's seconds."""
        return _rounded(self.total), _rounded(self.recent), round(self.startup_s, 2)

    def waiting(self) -> tuple[float, int]:
        """(the fraction of the recent window's time the rank waited on its peers, the
        whole seconds that window holds). Time-weighted, ten samples a second: what tells
        a straggler from its peers. (One sample a second, as before 2026-12-06, read the
        same phase of a loop of 0.5 s every time: two identical ranks of a sleep-then-report
        loop came out 42 % and 12 % at work, one "a straggler".)"""
        seconds = sum(self.recent.values())
        return (min(1.0, self.recent_waiting_s / seconds) if seconds > 0 else 0.0), int(seconds)


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in seconds.items() if v >= 0.005}


__all__ = ["MAX_STEP_S", "RECENT_S", "TimeShares", "classify_share", "rank_share"]
