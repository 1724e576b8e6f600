"""The one environment variable raytop reads of another process: the ``RAY_TRAIN_CALLBACKS``
of the process that built a Train run's trainer, when that process runs on this node.

Train reads the variable there (``model.no_probe``), so it is the evidence for why a run
has no probe. Read from ``/proc/<pid>/environ``: the environment the process started with
(a job's runtime-env variables included), capped, and only that one variable is kept: no
other value of another process's environment is held, shown or logged. A process is
read only when it is the one the cluster names (its pid on this node, started no later
than the cluster says it did); anything else is "not read", never a guess. An
environment never changes after start, so each process is read once.
"""

from __future__ import annotations

from collections import OrderedDict

import psutil

from raytop.model.no_probe import CALLBACKS_ENV, TrainerEnv

MAX_ENVIRON = 1 << 20  # bytes of /proc/<pid>/environ read (Linux's own limit is lower)
START_SLACK_S = 5.0  # a process the cluster says started at T was created by T + this
MAX_CACHED = 1_000  # processes remembered


def callbacks_in(environ: bytes) -> str | None:
    """``RAY_TRAIN_CALLBACKS`` in a NUL-separated environment block (None: not set)."""
    prefix = CALLBACKS_ENV.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("utf-8", "replace")
    return None


class TrainerEnvReader:
    """Reads, once per process, whether a trainer's process names the probe."""

    def __init__(self, proc: str = "/proc") -> None:
        self._proc = proc
        self._seen: OrderedDict[tuple[int, float], str | None] = OrderedDict()

    def read(self, who: str, pid: int | None, local: bool,
             started_by: float | None = None) -> TrainerEnv:  # fmt: skip
        """``who``: the process in words; ``pid``: as the cluster names it; ``local``:
        it runs on this node; ``started_by``: when the cluster says it started (unix s)."""
        if not local or not pid or pid <= 0:
            return TrainerEnv(who)
        try:
            created = psutil.Process(pid).create_time()
        except (psutil.Error, OSError):
            return TrainerEnv(who)
        if started_by is not None and created > started_by + START_SLACK_S:
            return TrainerEnv(who)  # the pid is another process's now
        key = (pid, created)
        if key not in self._seen:
            try:
                with open(f"{self._proc}/{pid}/environ", "rb") as file:
                    self._seen[key] = callbacks_in(file.read(MAX_ENVIRON))
            except OSError:
                return TrainerEnv(who)
            while len(self._seen) > MAX_CACHED:
                self._seen.popitem(last=False)
        return TrainerEnv(who, read=True, callbacks=self._seen[key])
