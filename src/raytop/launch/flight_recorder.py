"""PyTorch's Flight Recorder for the NCCL runs raytop launches: the workers' environment.

The Flight Recorder keeps a ring buffer of each rank's recent collectives (which process
group, which sequence number, started or completed). ProcessGroupNCCL writes it to a file
when a collective times out (``TORCH_NCCL_DUMP_ON_TIMEOUT``) or when anything is written
to its dump pipe (``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``), which its monitor thread polls;
side by side, the dumps say which rank never entered the collective the others wait in.
Torch 2.13's names (``ProcessGroupNCCL.hpp``, ``FlightRecorder.hpp``, libtorch strings):

- ``TORCH_NCCL_TRACE_BUFFER_SIZE`` (alias ``TORCH_FR_BUFFER_SIZE``): entries kept; 0 is off.
- ``TORCH_NCCL_DUMP_ON_TIMEOUT``: dump on a watchdog timeout or an NCCL error.
- ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` (alias ``TORCH_FR_DUMP_TEMP_FILE``): the dump
  file's prefix; torch appends the global rank. Default ``/tmp/nccl_trace_rank_``: on the
  node, gone with it. raytop sets ``<experiment>/.raytop/flight_recorder/<trial id>/rank_``,
  on the storage the user keeps.
- ``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``: the pipe's prefix; torch makes the FIFO
  ``<prefix><rank>.pipe`` (``mkfifo``; a failure stops the process group's creation, so
  it goes in ``/tmp``, which every node has) when the buffer size is above 0.

Only for torch trials with ``use_gpu = true`` and the NCCL backend (Ray's choice with
GPUs): gloo has no dump trigger and no timeout dump. Only for an experiment folder on a
local (or shared) filesystem: torch writes with ``std::ofstream``, not to ``s3://``.
Never over a value the user set: a variable (or its alias) set where ``raytop run`` ran
is passed to the workers unchanged, one already in the cluster's environment is left as it
is, and raytop's pipe exists only when raytop chose it (``RAYTOP_FLIGHT_RECORDER_PIPE``
says so to the probe, which writes only to that pipe: ``probe.flight_recorder``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from raytop.launch.spec import RunSpec
from raytop.model.paths import is_uri
from raytop.rundir import FLIGHT_RECORDER_DIR, raytop_dir_for
from raytop.wire.torch_flight_recorder import (
    ALIASES,
    BUFFER_SIZE,
    DUMP_FILE,
    DUMP_ON_TIMEOUT,
    PIPE_FILE,
    RAYTOP_PIPE,
)

DEFAULT_BUFFER_SIZE = "2000"
PIPE_DIR = "/tmp"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def why_not(spec: RunSpec) -> str | None:
    """Why raytop sets no Flight Recorder for ``spec``'s workers (None: it does)."""
    if spec.trainable.kind != "torch":
        return "not a torch trainable"
    if not spec.scaling.use_gpu:
        return "no GPUs ([scaling] use_gpu = false): gloo has no Flight Recorder dump"
    if spec.scaling.backend not in (None, "nccl"):
        return f"backend {spec.scaling.backend}: only NCCL dumps its Flight Recorder"
    if is_uri(spec.experiment_path):
        return "the experiment is on remote storage: torch writes its dumps to local files"
    return None


def dump_prefix(spec: RunSpec, trial_id: str) -> Path:
    """Where a trial's ranks write their dumps, less the rank torch appends."""
    raytop_dir = raytop_dir_for(spec.experiment_path, spec.experiment.name)
    return raytop_dir / FLIGHT_RECORDER_DIR / trial_id / "rank_"


def pipe_prefix(spec: RunSpec, trial_id: str) -> str:
    """The per-node pipe prefix of a trial's ranks (torch adds ``<rank>.pipe``)."""
    name = _UNSAFE.sub("_", spec.experiment.name)[:60]
    return f"{PIPE_DIR}/raytop-fr-{name}-{_UNSAFE.sub('_', trial_id)[:60]}-rank_"


def _set(name: str, environments: tuple[Mapping[str, str], ...]) -> bool:
    return any(n in env for env in environments for n in ALIASES.get(name, (name,)))


def worker_env(
    spec: RunSpec, trial_id: str, *, user_env: Mapping[str, str], node_env: Mapping[str, str]
) -> dict[str, str]:
    """The Flight Recorder variables for a trial's Train workers (``RunConfig``'s
    ``worker_runtime_env``). ``user_env``: those set where ``raytop run`` ran (passed on
    unchanged); ``node_env``: the trial's own environment, the cluster's (left alone)."""
    if why_not(spec) is not None:
        return {}
    both = (user_env, node_env)
    env = {name: value for name, value in user_env.items() if name not in node_env}
    defaults = {
        BUFFER_SIZE: DEFAULT_BUFFER_SIZE,
        DUMP_ON_TIMEOUT: "1",
        DUMP_FILE: str(dump_prefix(spec, trial_id)),
    }
    env.update({name: value for name, value in defaults.items() if not _set(name, both)})
    if not _set(PIPE_FILE, both):
        env[PIPE_FILE] = env[RAYTOP_PIPE] = pipe_prefix(spec, trial_id)
    return env
