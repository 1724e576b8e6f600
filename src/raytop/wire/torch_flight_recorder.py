"""What raytop says to PyTorch's Flight Recorder: its environment variables and its dump
pipe, as torch 2.13 names them (``torch/include/torch/csrc/distributed/c10d/
ProcessGroupNCCL.hpp`` and ``FlightRecorder.hpp``, and the strings in ``libtorch_cpu.so``).

These are torch's environment interface, not a stable API: the pipe and dump-file names
are read by ProcessGroupNCCL's C++ only, and the aliases changed across releases
(``TORCH_FR_*`` beside ``TORCH_NCCL_*``). Both sides use this one module: the launch sets
them on the workers (``launch.flight_recorder``), the probe writes to the pipe
(``probe.flight_recorder``); ``torch_line_note`` says when the workers' torch is not the
line these were verified on.

- ``<TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe``: a FIFO torch creates (``DumpPipe``:
  ``mkfifo`` 0666, opened ``O_RDONLY | O_NONBLOCK``) when the trace buffer is above 0; any
  bytes written to it make ProcessGroupNCCL dump.
- ``<TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>``: the dump, torch's ``DebugInfoWriter``
  (default prefix ``/tmp/nccl_trace_rank_``), a pickled dict; torch 2.13 has no variable
  that makes that file JSON (the JSON form exists only in-process,
  ``torch._C._distributed_c10d._dump_fr_trace_json``), so raytop reads the pickle with its
  restricted unpickler (``model.untrusted_pickle``).
"""

from __future__ import annotations

import sys

VERIFIED_TORCH_LINE = "2.13."

BUFFER_SIZE = "TORCH_NCCL_TRACE_BUFFER_SIZE"
DUMP_ON_TIMEOUT = "TORCH_NCCL_DUMP_ON_TIMEOUT"
DUMP_FILE = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"
PIPE_FILE = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"
# Torch reads each of these under either name (getCvar* lists, the first set one wins).
ALIASES = {
    BUFFER_SIZE: (BUFFER_SIZE, "TORCH_FR_BUFFER_SIZE"),
    DUMP_FILE: (DUMP_FILE, "TORCH_FR_DUMP_TEMP_FILE"),
}
# Every name a user may set for the Flight Recorder (what raytop never overrides).
FLIGHT_RECORDER_VARS = (
    BUFFER_SIZE, "TORCH_FR_BUFFER_SIZE", DUMP_ON_TIMEOUT, DUMP_FILE, "TORCH_FR_DUMP_TEMP_FILE",
    PIPE_FILE,
)  # fmt: skip
# raytop's own mark, beside PIPE_FILE when raytop chose that pipe: the probe writes only
# to a pipe raytop created the name of.
RAYTOP_PIPE = "RAYTOP_FLIGHT_RECORDER_PIPE"


def pipe_path(prefix: str, rank: int) -> str:
    """The FIFO torch makes for ``rank`` (``DumpPipe``: prefix, rank, ``.pipe``)."""
    return f"{prefix}{rank}.pipe"


def torch_line_note() -> str | None:
    """A note when this process's torch is not the line the names were verified on (None:
    it is, or torch is not imported here)."""
    torch = sys.modules.get("torch")
    version = str(getattr(torch, "__version__", "")) if torch is not None else ""
    if not version or version.startswith(VERIFIED_TORCH_LINE):
        return None
    return f"(the Flight Recorder's names were verified on torch {VERIFIED_TORCH_LINE}x; "\
           f"this is {version[:40]})"  # fmt: skip
