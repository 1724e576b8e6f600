"""Asking PyTorch's Flight Recorder for a dump, from inside the rank: one write to the
rank's own dump pipe.

The pipe is per node (``/tmp/...``): raytop's own process cannot reach the workers'
nodes, the probe's thread in each worker can. It writes only to the pipe raytop named
for that worker at launch (``RAYTOP_FLIGHT_RECORDER_PIPE`` equal to
``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``: never a pipe the user set up, never a run raytop did
not launch), only to a FIFO owned by this user (checked with ``lstat``, opened with
``O_NOFOLLOW``), and never blocks: ``O_NONBLOCK`` opens fail at once when no process group
reads the pipe. ProcessGroupNCCL's monitor thread then writes the dump to
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>``, where raytop reads it
(``sources.flight_recorder``). Every outcome is one line for the rank's answer.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping

from raytop.wire.torch_flight_recorder import PIPE_FILE, RAYTOP_PIPE, pipe_path, torch_line_note

NOT_ENABLED = (
    "no Flight Recorder pipe: raytop sets one only for the NCCL runs it launches "
    "(torch trainable, use_gpu = true); gloo on CPU has no dump trigger"
)


def trigger_dump(rank: int, environ: Mapping[str, str] | None = None) -> str:
    """Write to this rank's dump pipe if raytop created its name; say what happened."""
    env = os.environ if environ is None else environ
    ours, prefix = env.get(RAYTOP_PIPE), env.get(PIPE_FILE)
    if not ours:
        return NOT_ENABLED
    if prefix != ours:
        return f"{PIPE_FILE} is not the one raytop set: raytop writes only to pipes it created"
    path = pipe_path(ours, rank)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return f"no dump pipe at {path}: this rank has no NCCL process group (yet)"
    except OSError as exc:
        return f"cannot look at {path}: {exc.strerror or exc}"
    if not stat.S_ISFIFO(info.st_mode):
        return f"{path} is not a pipe: not written"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user: not written"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return f"nobody reads {path}: the process group that made it is gone"
        return f"cannot open {path}: {exc.strerror or exc}"
    try:
        os.write(fd, b"1")
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    note = torch_line_note()
    return f"dump requested through {path}" + (f" {note}" if note else "")
