"""Ray 2.60's NCCL hang detector, read from what it leaves on storage.

With ``RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR`` on, Train's controller polls NVIDIA's
``ncclras`` on the workers (every 15 s by default) and, once a communicator's collective
counts have differed between its ranks with none advancing for the confirmation time
(10 min by default), it confirms a hang: it logs it, raises ``NCCLHangError`` (action
``fail``) or only warns (``observe``), and uploads its evidence under the run's folder
(``ray/train/v2/_internal/callbacks/nccl_ras.py``, Ray 2.60.0)::

    <run>/hang_detector/nccl_ras/ncclras_<timestamp>.json   the polls kept, ncclras's JSON
    <run>/hang_detector/nccl_ras/ncclras_report.txt         ncclras's text report
    <run>/hang_detector/stack_traces/rank_<world rank>.log  each rank's stacks

The files are written only when a hang is confirmed, so their presence is Ray's verdict and
their time its moment. The newest poll says which communicator and which ranks: this module
parses it as untrusted input (size and counts capped) with Ray's own rule: a communicator is
hung when its ranks' counts of a collective differ while every rank is RUNNING.

Before any verdict, whether the detector watches a run at all is ``RayHangDetector``: Ray
decides where the trainer is built, and the RunProbe reads the decision in the controller.

Stdlib only (``model`` floor).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from raytop.model.records import DETECTOR_ON

HANG_DETECTOR_DIR = "hang_detector"  # Ray's HANG_DETECTOR_DIRNAME
RAS_DIR = "nccl_ras"
STACKS_DIR = "stack_traces"
POLL_GLOB = "ncclras_*.json"
MAX_RAS_BYTES = 4 << 20  # one poll's JSON
MAX_COMMS = 4096
MAX_RANKS = 65536
MAX_NAME = 64  # characters of a communicator hash or a collective's name kept
MAX_BEHIND_SHOWN = 8


class Unreadable(ValueError):
    """A poll that is not ``ncclras``'s JSON: why, in a few words."""


# NCCL 2.28.9 writes a ``missing_ranks`` entry without a comma; Ray repairs it the same way
# before parsing (``parse_ras_schema``).
_MISSING_COMMA = re.compile(r'([\d"el])(\s*\n\s*)("[^"\n]*"\s*:)')


@dataclass(frozen=True)
class CommLag:
    """One hung communicator: the collective whose counts differ, the ranks behind (with
    fewer calls), and the counts."""

    comm: str
    op: str
    behind: tuple[int, ...]
    most: int
    fewest: int
    size: int


@dataclass(frozen=True)
class RayHangVerdict:
    """What Ray's detector confirmed: when (the files' time, unix s), in how many of the
    poll's communicators, which lag, and which ranks' stacks it saved, under ``folder``."""

    confirmed_at: float | None
    folder: str
    communicators: int
    lagging: tuple[CommLag, ...]
    stack_ranks: tuple[int, ...] = ()

    def where(self) -> str:
        """``communicator 7f3a…: rank 1 behind on AllReduce (41 calls, others 42)``."""
        if not self.lagging:
            return "its last poll names no lagging communicator"
        parts = []
        for lag in self.lagging[:3]:
            ranks = ", ".join(str(r) for r in lag.behind[:MAX_BEHIND_SHOWN])
            more = "…" if len(lag.behind) > MAX_BEHIND_SHOWN else ""
            who = f"rank{'s' if len(lag.behind) > 1 else ''} {ranks}{more}"
            parts.append(f"communicator {lag.comm}: {who} behind on {lag.op} "
                         f"({lag.fewest} calls, others {lag.most})")  # fmt: skip
        if len(self.lagging) > 3:
            parts.append(f"{len(self.lagging) - 3} more")
        return "; ".join(parts)


@dataclass(frozen=True)
class RayHangDetector:
    """Whether Ray's detector watches a run, before any verdict: as the RunProbe found it
    among the run's callbacks (``model.records.HangDetectorRecord``, whose fields these
    are). ``state``: on, off, or unavailable (this Ray has none: before 2.60). ``line``:
    what the faces show, made once by the pipeline (``diagnose.ray_hang.detector_line``)
    with the run's verdict."""

    state: str
    ray: str = ""
    action: str | None = None
    poll_s: float | None = None
    confirm_s: float | None = None
    disabled: bool = False
    line: str = ""

    @property
    def on(self) -> bool:
        return self.state == DETECTOR_ON


def _status(status: Any) -> str:
    """A rank's state as Ray words it: ABORT, FINALIZE, RUNNING or INIT."""
    if not isinstance(status, dict):
        raise Unreadable("status: expected an object")
    if status.get("abort_flag") is True:
        return "ABORT"
    if status.get("finalize_called") is True or status.get("destroy_flag") is True:
        return "FINALIZE"
    return "RUNNING" if status.get("init_state") == 0 else "INIT"


def _name(value: Any) -> str:
    return str(value)[:MAX_NAME]


def parse_poll(raw: bytes) -> tuple[int, tuple[CommLag, ...]]:
    """(communicators, the lagging ones) of one ``ncclras -f json`` poll; ``Unreadable`` when
    it is not that shape."""
    if len(raw) > MAX_RAS_BYTES:
        raise Unreadable(f"over {MAX_RAS_BYTES} bytes")
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = json.loads(_MISSING_COMMA.sub(r"\1,\2\3", text))
        except ValueError as exc:
            raise Unreadable(f"not JSON ({exc})") from None
    comms = data.get("communicators") if isinstance(data, dict) else None
    if not isinstance(comms, list) or len(comms) > MAX_COMMS:
        raise Unreadable("communicators: expected a list")
    lagging = []
    for comm in comms:
        lag = _lag(comm)
        if lag is not None:
            lagging.append(lag)
    return len(comms), tuple(lagging)


def _lag(comm: Any) -> CommLag | None:
    if not isinstance(comm, dict) or not isinstance(comm.get("ranks"), list):
        raise Unreadable("a communicator: expected an object with ranks")
    ranks = comm["ranks"]
    if len(ranks) > MAX_RANKS:
        raise Unreadable("a communicator: too many ranks")
    counts: dict[int, dict[str, int]] = {}
    for rank in ranks:
        if not isinstance(rank, dict) or not isinstance(rank.get("collective_counts"), dict):
            raise Unreadable("a rank: expected an object with collective_counts")
        if _status(rank.get("status")) != "RUNNING":
            return None  # Ray's rule: a hang needs every rank running
        number = rank.get("rank")
        if not isinstance(number, int) or isinstance(number, bool):
            raise Unreadable("a rank: expected an integer rank")
        try:
            counts[number] = {_name(op): int(n) for op, n in rank["collective_counts"].items()}
        except (TypeError, ValueError):
            raise Unreadable("collective_counts: expected integers") from None
    ops = sorted({op for by_op in counts.values() for op in by_op})
    for op in ops:
        per_rank = {r: by_op.get(op, 0) for r, by_op in counts.items()}
        most, fewest = max(per_rank.values()), min(per_rank.values())
        if most != fewest:
            behind = tuple(sorted(r for r, n in per_rank.items() if n < most))
            return CommLag(_name(comm.get("hash", "?")), op, behind, most, fewest, len(counts))
    return None
