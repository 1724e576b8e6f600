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

With ``--timeline FILE`` (before the command; the command's ``RAYTOP_TIMELINE``, which
``tests/timeline.py`` writes): also CPU-seconds by test file, each process counted to the
test that was running in the test process it descends from when it was born (its
cluster's processes, for a cluster a test started, to that test; a test process's own
CPU, the pure tests and in-process polls, to that process):

    .venv/bin/python benchmarks/cpu_by_process.py --timeline /tmp/t bash .ci/run
"""

from __future__ import annotations

import bisect
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from typing import NamedTuple

TICKS = os.sysconf("SC_CLK_TCK")


def boot_time() -> int:
    """When the machine booted (epoch seconds): a process's start in ``/proc`` counts from it."""
    with open("/proc/stat") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("btime "))


BOOT = boot_time()
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


class Seen(NamedTuple):
    """A process of the tree: its CPU so far, command, parent and birth (epoch seconds)."""

    cpu_s: float
    command: str
    parent: int
    born: float


def sample(tree: set[int], seen: dict[tuple[int, str], Seen]) -> None:
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
        known = seen.get((pid, started))
        # An ended process nobody has reaped yet (a zombie) has an empty command line: it
        # keeps the one it was last seen with, else its CPU went to a kind named after its
        # executable ("python": 449 CPU-s of a whole-suite run, drivers and actors alike).
        command = command or (known.command if known else comm)
        seen[(pid, started)] = Seen(cpu_s, command, known.parent if known else parent,
                                    BOOT + int(started) / TICKS)  # fmt: skip


def by_test(seen: dict[tuple[int, str], Seen], rows: list[dict]) -> Counter[str]:
    """CPU-seconds by test file (``rows``: the timeline's lines): each process to the test
    running, at its birth, in the test process it descends from."""
    tests: dict[int, list[tuple[float, str]]] = {}
    for row in rows:
        tests.setdefault(row["pid"], []).append((row["start"], row["test"].split("::")[0]))
    for runs in tests.values():
        runs.sort()
    lives: dict[int, list[Seen]] = {}
    for (pid, _), process in seen.items():
        lives.setdefault(pid, []).append(process)
    found: Counter[str] = Counter()
    for (pid, _), process in seen.items():
        owner, at, here = pid, process.born, process
        walked = {pid}  # a reused pid must not walk in a circle
        while owner not in tests:
            earlier = [p for p in lives.get(here.parent, []) if p.born <= at + 1]
            if not earlier or here.parent in walked:
                break
            owner, here = here.parent, max(earlier, key=lambda p: p.born)
            walked.add(owner)
        if owner not in tests:
            continue
        if owner == pid:
            found[f"(test process {pid} itself)"] += process.cpu_s
            continue
        runs = tests[owner]
        index = bisect.bisect_right(runs, (at, "\uffff")) - 1
        found[runs[index][1] if index >= 0 else "(before its first test)"] += process.cpu_s
    return found


def main(argv: list[str]) -> int:
    timeline = None
    if argv[:1] == ["--timeline"] and len(argv) > 1:
        timeline, argv = argv[1], argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    seen: dict[tuple[int, str], Seen] = {}
    env = os.environ | ({"RAYTOP_TIMELINE": timeline} if timeline else {})
    child = subprocess.Popen(argv, env=env)
    tree = {child.pid}
    while child.poll() is None:
        sample(tree, seen)
        time.sleep(PERIOD_S)
    sample(tree, seen)
    by_kind: Counter[str] = Counter()
    for process in seen.values():
        by_kind[kind(process.command)] += process.cpu_s
    for name, cpu_s in by_kind.most_common(40):
        print(f"{cpu_s:8.1f}  {name}")
    print(f"{sum(by_kind.values()):8.1f}  in all (CPU-s)")
    if timeline:
        with open(timeline) as f:
            rows = [json.loads(line) for line in f if line.endswith("\n")]
        print("by test file:")
        for name, cpu_s in by_test(seen, rows).most_common(40):
            print(f"{cpu_s:8.1f}  {name}")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
