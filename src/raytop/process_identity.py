"""Is a recorded pid still the process raytop started? (driver.json, cluster.json)

A signal goes only to a process proven by pid, start time and command line; a pid that
may have been reused is never signalled, nor taken for stopped.

The start time is recorded twice (``start_stamp``). psutil's ``create_time`` is the wall
clock's: the boot time Linux derives from it (``btime`` in ``/proc/stat``) plus the ticks
since boot at which the process started, so a step of the wall clock between the record
and its check (an NTP step, a virtual machine restored from a snapshot: seen here, a
25 s step during a test run, and ``raytop down`` refused its own cluster) moves it by
the step. On Linux, the kernel's own start of the process, in clock ticks since boot
(``/proc/<pid>/stat``, field 22), with the boot's id (``/proc/sys/kernel/random/boot_id``)
does not move: where both are recorded and readable they prove the process exactly
(``same_start``); elsewhere, the wall-clock time within ``CREATE_TIME_TOLERANCE_S``.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from raytop.jsonfile import read_json
from raytop.model import untrusted

# psutil's create_time is boot time (whole seconds in /proc/stat, moved when the clock is
# stepped) plus clock ticks: a second of slack keeps a real driver proven, and a pid is
# not reused within a second of the process it replaced starting.
CREATE_TIME_TOLERANCE_S = 1.0
# How long after its spawn a driver's command line may not show yet (the exec takes
# milliseconds; a loaded machine's scheduler, a little more).
SPAWNING_S = 10.0
DRIVER_MODULE = "raytop.launch.driver"


@dataclass(frozen=True)
class DriverCheck:
    """What ``driver.json`` says and whether its pid is provably the driver raytop started.

    ``alive``: True (proven, even beside an ``exit.json``), False (gone, finished, or a live
    pid that is clearly another process: see ``problem``), None (cannot tell: another
    host, no valid record (pid None too), or a live raytop driver for this dir whose start
    time cannot be proven — it is never signalled, and never taken for stopped either).
    ``record_problem``: a ``driver.json`` that is there but is no valid record (what is
    wrong, naming it)."""

    pid: int | None
    alive: bool | None
    problem: str | None = None
    process: psutil.Process | None = None
    record_problem: str | None = None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t * 100) % 100:02d}"


def _same_path(arg: str, path: Path) -> bool:
    if arg == str(path):
        return True
    try:
        return os.path.realpath(arg) == os.path.realpath(path)
    except (OSError, ValueError):
        return False


def check_driver(raytop_dir: Path) -> DriverCheck:
    """The driver recorded in ``raytop_dir``, proven by pid, start time and command line
    (the module and this raytop dir). Never raises on a malformed ``driver.json``.

    ``exit.json`` is the driver's last write on its way out, so it says "ended" wherever
    the recorded pid cannot be shown to be that driver still running: the pid is gone or
    provably another process, or it cannot be checked from here (another host). It never
    outweighs a driver proven live (that file can be left behind, or written by anyone),
    nor a live raytop driver of this very dir whose start time cannot be proven."""
    record = raytop_dir / "driver.json"
    info = read_json(record)
    # .exists() stats, never opens: a FIFO planted as exit.json cannot block.
    ended = (raytop_dir / "exit.json").exists()
    try:
        untrusted.driver_record(info)
    except untrusted.Invalid as exc:
        if not os.path.lexists(record):
            return DriverCheck(None, None)
        why = "unreadable, or not JSON" if info is None else str(exc)
        bad = f"{record} is not a valid driver record ({why}): cannot tell whether its driver runs"
        # exit.json is the driver's own word that it ended; without it nothing is proven.
        return DriverCheck(None, False if ended else None,
                           f"{bad}; not signalled", record_problem=bad)  # fmt: skip
    pid = int(info["pid"])
    if pid <= 1:
        return DriverCheck(None, None)
    if info.get("host") != socket.gethostname():
        return DriverCheck(pid, False if ended else None)
    name = info.get("experiment_name")
    name = name if isinstance(name, str) and name else raytop_dir.parent.name
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return DriverCheck(pid, False)
        started = process.create_time()
    except psutil.NoSuchProcess:
        return DriverCheck(pid, False)
    except (psutil.Error, OSError):
        if ended:
            return DriverCheck(pid, False)
        return DriverCheck(pid, None, f"pid {pid} cannot be inspected; not signalled")
    refused = f"pid {pid} is not the driver raytop started for {name}"
    try:
        argv = process.cmdline()
    except psutil.NoSuchProcess:
        return DriverCheck(pid, False)
    except (psutil.Error, OSError):
        if ended:
            return DriverCheck(pid, False)
        return DriverCheck(pid, None, f"{refused} (its command line is unreadable); not signalled")
    recorded = info.get("pid_create_time")
    if (
        DRIVER_MODULE not in argv
        and not ended
        and same_start(info, pid, started)
        and time.time() - started < SPAWNING_S
    ):
        # The very process the launcher spawned and timed, seconds ago, whose command line
        # is not the driver's yet: right after the spawn Linux shows it empty, or the
        # launcher's, for a moment (measured: 1 read in 300). The launcher records a driver
        # once its command line shows (``wait_until_shown``); a record written before (an
        # older raytop, or a wait that ran out on a loaded node) can still name one. Cannot
        # tell yet; never "ended" (a follower once said "the driver ended after 0 s" of a
        # driver that went on running). Older than ``SPAWNING_S``, it is another process.
        why = "its command line does not show the driver yet: it is starting"
        return DriverCheck(pid, None, f"{refused} ({why}); not signalled")
    if DRIVER_MODULE not in argv or not any(_same_path(a, raytop_dir) for a in argv):
        if ended:  # the driver ended and its pid went to another process: nothing to say
            return DriverCheck(pid, False)
        why = f"its command line does not name {DRIVER_MODULE} with {raytop_dir}"
        return DriverCheck(pid, False, f"{refused} ({why}); not signalled")
    # A raytop driver for this very dir: if its start time is not the recorded one it may
    # still be running this experiment, so it is "cannot tell", never "stopped" (exit.json
    # or not: a launch deletes it before it starts a driver).
    if not _is_number(recorded):
        why = "driver.json records no start time (an older raytop), so it cannot be proven"
        return DriverCheck(pid, None, f"{refused} ({why}); not signalled; stop it by hand")
    if not same_start(info, pid, started):
        when = f"started at {_stamp(started)}, recorded {_stamp(float(recorded))}"
        return DriverCheck(pid, None, f"{refused} ({when}); not signalled")
    return DriverCheck(pid, True, None, process)


def driver_alive(raytop_dir: Path) -> tuple[int | None, bool | None]:
    """(pid, alive) of the driver recorded in ``raytop_dir``; alive is None when it ran on
    another host (cannot tell from here), True only for the proven driver (``check_driver``)."""
    check = check_driver(raytop_dir)
    return check.pid, check.alive


def running_experiments(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The registry entries (``home.read_registry``) whose driver is provably running here:
    what a bare ``raytop`` shows and what a bare ``raytop stop`` may act on."""
    return [e for e in entries if driver_alive(Path(e["raytop_dir"]))[1]]


def driver_identity_problem(raytop_dir: Path) -> str | None:
    """One line when ``driver.json`` names a live pid that is not provably raytop's driver."""
    return check_driver(raytop_dir).problem


def wait_until_shown(pid: int, ended: Any, marker: str, timeout_s: float = SPAWNING_S) -> bool:
    """Wait until the process ``pid`` just spawned shows ``marker`` as an argument of its
    command line (its exec done: right after a spawn Linux shows it empty, or the
    spawner's, for a moment), it has ended (``ended()`` true), or ``timeout_s`` passed.
    True once shown. The launcher records a driver only then, so a record names a
    process that provably is the driver from its first read on."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if marker in psutil.Process(pid).cmdline():
                return True
        except (psutil.Error, OSError):
            pass
        if ended() or time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def process_create_time(pid: int) -> float | None:
    """The start time psutil reports for ``pid`` (recorded at launch), None if unknown."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _boot_id() -> str | None:
    try:
        with open(BOOT_ID, encoding="ascii") as file:
            found = file.read(64).strip()
    except (OSError, ValueError):
        return None
    return found or None


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``, field 22:
    the 20th after the command name, which is in parentheses and may hold any byte)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read(4096).rpartition(b")")[2].split()
        return int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def start_stamp(pid: int) -> dict[str, Any]:
    """What a record of ``pid`` holds to prove it later (``same_start``): psutil's
    ``pid_create_time`` (None if unknown) and, on Linux, ``pid_boot_id`` and
    ``pid_start_ticks``."""
    stamp: dict[str, Any] = {"pid_create_time": process_create_time(pid)}
    boot, ticks = _boot_id(), _start_ticks(pid)
    if boot is not None and ticks is not None:
        stamp.update(pid_boot_id=boot, pid_start_ticks=ticks)
    return stamp


def same_start(record: dict[str, Any], pid: int, started: float) -> bool:
    """Whether the live ``pid`` (psutil ``create_time`` ``started``) is the process whose
    ``start_stamp`` is in ``record``: by the boot and the start ticks, exactly, where both
    were recorded and can be read; else by the wall-clock start time within
    ``CREATE_TIME_TOLERANCE_S``."""
    boot, ticks = record.get("pid_boot_id"), record.get("pid_start_ticks")
    if isinstance(boot, str) and _is_number(ticks):
        now_boot, now_ticks = _boot_id(), _start_ticks(pid)
        if now_boot is not None and now_ticks is not None:
            return now_boot == boot and now_ticks == ticks
    recorded = record.get("pid_create_time")
    return _is_number(recorded) and abs(started - float(recorded)) <= CREATE_TIME_TOLERANCE_S
