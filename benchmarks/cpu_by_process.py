"""Where a command's CPU goes, by kind of process (docs/PERFORMANCE.md, "The test suite").

Runs ``COMMAND`` and samples ``/proc`` every half second: every process descended from it
(a process whose parent was seen descended when it was first seen, so Ray's raylet,
workers and actors count, and the detached drivers ``raytop run`` starts) is kept with its
latest user+system CPU time. At the end: CPU-seconds by kind, most first. A kind is a Ray
actor's class (``actor:TrainController``), a ``raytop`` subcommand (``raytop:status``), a
cluster process (``raylet``, ``gcs_server``, …) or the first characters of the command.

The suite is CPU-bound on 2 cores (both busy from its first test on): what a test costs is
what its processes burn, and this says which of them. A process that lives less than one
sample is missed; a Linux ``/proc`` is needed.

    .venv/bin/python benchmarks/cpu_by_process.py .venv/bin/pytest -q tests/integration/x.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter

TICKS = os.sysconf("SC_CLK_TCK")
PERIOD_S = 0.5
COMMANDS = ("run", "plan", "status", "check", "resume", "stop", "down", "themes")
CLUSTER = (("raylet", "raylet"), ("gcs_server", "gcs_server"), ("log_monitor", "log_monitor"),
           ("monitor.py", "autoscaler_monitor"), ("dashboard.py", "dashboard"),
           ("raytop.launch.driver", "raytop:driver"), ("pytest", "pytest"))  # fmt: skip


def kind(command: str) -> str:
    """The kind a process's command line belongs to."""
    if command.startswith("ray::"):
        return "actor:" + re.split(r"[ .(]", command[5:])[0]
    if command.startswith("ray-dashboard"):
        return "dashboard module"
    if re.search(r"-m raytop(\s|$)|bin/raytop(\s|$)", command):
        named = [word for word in command.split() if word in COMMANDS]
        return "raytop:" + (named[0] if named else "tui")
    for part, name in CLUSTER:
        if part in command:
            return name
    return command[:60]


def sample(tree: set[int], seen: dict[tuple[int, str], tuple[float, str]]) -> None:
    """Every process of ``tree`` (grown by parent) with its CPU time so far."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        pid, parent, started = int(name), int(fields[1]), fields[19]
        if pid not in tree:
            if parent not in tree or (pid, started) in seen:
                continue
            tree.add(pid)
        cpu_s = (int(fields[11]) + int(fields[12])) / TICKS
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        seen[(pid, started)] = (cpu_s, command or comm)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    seen: dict[tuple[int, str], tuple[float, str]] = {}
    child = subprocess.Popen(argv)
    tree = {child.pid}
    while child.poll() is None:
        sample(tree, seen)
        time.sleep(PERIOD_S)
    sample(tree, seen)
    by_kind: Counter[str] = Counter()
    for cpu_s, command in seen.values():
        by_kind[kind(command)] += cpu_s
    for name, cpu_s in by_kind.most_common(40):
        print(f"{cpu_s:8.1f}  {name}")
    print(f"{sum(by_kind.values()):8.1f}  in all (CPU-s)")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
