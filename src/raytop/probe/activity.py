"""Where a rank's train loop is, sampled: one ``sys._current_frames()`` read a second.

A hang below the report level (ranks stuck in a collective, the data loader or I/O) shows
in no report count: every rank has made the same number of reports and none is inside
one. What shows is where each train-loop thread is. The probe's flush thread samples it
once a second (one dict lookup and a walk of at most ``MAX_DEPTH`` frames: microseconds,
on the probe thread, never on the training thread) and sends the newest classification
with when it began. How much of its recent time the rank spent waiting (in a collective,
a backward pass that carries DDP's all_reduce, or a report: ``WAITING_KINDS``), which is
what tells a straggler (works while the others wait) from its peers, is counted with its
time shares, ten samples a second (``probe.time_shares``).

Kinds: ``collective`` (a ``torch.distributed`` call), ``backward`` (autograd's backward:
with DDP, where gradients are all-reduced), ``data_loader`` (``torch.utils.data``), ``io``
(sockets, HTTP, cloud storage clients, file copies), ``report`` (``ray.train.report``,
its barrier and checkpoint upload), ``user`` (anything else: the user's own code).
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from types import FrameType
from typing import Any

MAX_DEPTH = 64  # frames walked from the innermost outwards
MAX_WHERE = 200

WAITING_KINDS = frozenset({"collective", "backward", "report"})

# torch.distributed calls that are collectives or point-to-point waits (a frame of one of
# these functions in a file under torch/distributed/).
_COLLECTIVES = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
    "barrier", "monitored_barrier", "reduce", "all_to_all", "all_to_all_single", "gather",
    "scatter", "send", "recv", "wait", "_wait", "gather_object", "scatter_object_list",
})  # fmt: skip
# Path parts of modules whose frames mean "waiting on I/O".
_IO_PARTS = (
    f"{os.sep}socket.py", f"{os.sep}ssl.py", f"{os.sep}selectors.py",
    f"{os.sep}http{os.sep}client.py", f"{os.sep}shutil.py", f"{os.sep}urllib3{os.sep}",
    f"{os.sep}requests{os.sep}", f"{os.sep}botocore{os.sep}", f"{os.sep}s3fs{os.sep}",
    f"{os.sep}gcsfs{os.sep}", f"{os.sep}fsspec{os.sep}", f"{os.sep}pyarrow{os.sep}",
)  # fmt: skip
_LIBRARY_PARTS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}",
                  os.path.dirname(os.__file__) + os.sep)  # fmt: skip


def _is_library(filename: str) -> bool:
    return filename.startswith("<") or any(part in filename for part in _LIBRARY_PARTS)


def _user_frame(frames: list[FrameType]) -> str | None:
    """``train_loop (loop.py:30) time.sleep(600)``: the innermost frame of the user's
    own code (not a library), with its source line when the file can be read."""
    for frame in frames:
        code = frame.f_code
        if _is_library(code.co_filename):
            continue
        line = linecache.getline(code.co_filename, frame.f_lineno).strip()
        text = f"{code.co_name} ({os.path.basename(code.co_filename)}:{frame.f_lineno})"
        return f"{text} {line}"[:MAX_WHERE] if line else text
    return None


def walk(frame: FrameType | None) -> list[FrameType]:
    frames: list[FrameType] = []
    while frame is not None and len(frames) < MAX_DEPTH:
        frames.append(frame)
        frame = frame.f_back
    return frames


def classify(frame: FrameType | None) -> tuple[str, str]:
    """(kind, where) of a thread whose innermost frame is ``frame``."""
    frames = walk(frame)
    user = _user_frame(frames)
    found = found_kinds(frames)
    # The outer context wins over what it calls: I/O inside a report is the report's
    # checkpoint upload, I/O or a sleep inside a Dataset is the data loader waiting.
    for kind in PRECEDENCE:
        if kind in found:
            return kind, (found[kind] if kind == "report" else _with_user(found[kind], user))
    return "user", (user or (frames[0].f_code.co_name if frames else "?"))[:MAX_WHERE]


PRECEDENCE = ("report", "collective", "data_loader", "backward", "io")


def found_kinds(frames: list[FrameType]) -> dict[str, str]:
    """Of each kind, the call that names it: the nearest (innermost) frame of that kind."""
    found: dict[str, str] = {}
    for f in frames:  # innermost first: of each kind, the nearest call names it
        hit = _kind_of(f.f_code.co_name, f.f_code.co_filename)
        if hit is not None:
            found.setdefault(*hit)
    return found


@functools.lru_cache(maxsize=4096)
def _kind_of(name: str, filename: str) -> tuple[str, str] | None:
    """(kind, call) of a function, or None: the same for every frame of it, so worked out
    once per function (a sample, ten a second, is then a walk of dictionary lookups)."""
    if f"ray{os.sep}train{os.sep}" in filename and name == "report":
        return "report", "ray.train.report"
    if f"torch{os.sep}distributed{os.sep}" in filename and name in _COLLECTIVES:
        return "collective", f"torch.distributed.{name}"
    if f"torch{os.sep}utils{os.sep}data{os.sep}" in filename:
        return "data_loader", "DataLoader.__next__"
    if f"torch{os.sep}autograd{os.sep}" in filename and name in ("backward", "grad"):
        return "backward", "loss.backward() (DDP gradient all_reduce)"
    if any(part in filename for part in _IO_PARTS):
        return "io", f"{os.path.splitext(os.path.basename(filename))[0]}.{name}"
    return None


def _with_user(call: str, user: str | None) -> str:
    return (f"{call} from {user}" if user else call)[:MAX_WHERE]


class ActivitySampler:
    """Samples one thread (the train loop's) when ``sample`` is called: keeps the current
    (kind, where) and since when."""

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.kind: str | None = None
        self.where: str | None = None
        self.since: float | None = None
        self.sampled_at: float | None = None

    def sample(self, now: float) -> None:
        frame = sys._current_frames().get(self.thread_id)
        if frame is None:
            return
        kind, where = classify(frame)
        del frame  # no frame kept alive past the sample
        if (kind, where) != (self.kind, self.where):
            self.kind, self.where, self.since = kind, where, now
        self.sampled_at = now

    def record(self) -> dict[str, Any] | None:
        """Where the thread is and since when (``model.records.Activity`` less ``samples``
        and ``waiting``, which the probe adds from its time shares); None before any
        sample."""
        if self.kind is None:
            return None
        return {"kind": self.kind, "where": self.where, "since": self.since,
                "sampled_at": self.sampled_at}  # fmt: skip


__all__ = ["PRECEDENCE", "WAITING_KINDS", "ActivitySampler", "classify", "found_kinds", "walk"]
