"""When an embedded head's ``ray start --head --block`` has started, and why it ended if not.

The head is given ports that were free a moment before (``cluster._free_port`` binds port
0 and lets it go), so another process on the host can bind one of them first: a second
cluster starting, a colleague's job, a test suite's other worker. The head then cannot
bind that server, and ``--block`` ends every process of the node with exit code 1. Its log
says which port (measured on Ray 2.60, another socket holding the Ray client server's
port: ``RuntimeError: Failed to bind to address 127.0.0.1:57031``). Such a start is worth
another try on new ports; any other end is shown as the log's last error line.

That end can come after the head node is alive: the Ray client server is a Python process
of its own that binds its port once it has imported Ray, and ``--block`` notices its death
at its next check (every second). So a start is done only when a process of the head's
own listens on the client server's port (``serves``): positive evidence, since a
connection to that port could be answered by whoever took it.

The log is raytop's own file, but what is in it comes from Ray and the host: it is read
capped, regular files only, and the line goes to the user through ``visible`` like any
other outside text (Ray's colour codes are dropped first: they are not part of the words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import psutil

from raytop.jsonfile import Unread, read_capped

MAX_LOG_BYTES = 4 * 1024 * 1024  # a head that ended during start wrote a few KB
MAX_REASON_CHARS = 300
_PORT_TAKEN = re.compile(
    r"failed to bind|address already in use|port \d+ is (?:already )?in use", re.IGNORECASE
)
_ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception)\b:")
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class HeadExit:
    """What the log says: its last line naming an error ("" when none is found) and
    whether that was a port another process had taken."""

    reason: str
    port_taken: bool


def exit_reason(log: Path) -> HeadExit:
    """The reason the head's log gives for its end; ``HeadExit("", False)`` when the log
    cannot be read or names none."""
    try:
        text = read_capped(log, MAX_LOG_BYTES).decode(errors="replace")
    except Unread:
        return HeadExit("", False)
    lines = [_COLOUR.sub("", line).strip() for line in text.splitlines()]
    taken = [line for line in lines if _PORT_TAKEN.search(line)]
    if taken:
        return HeadExit(taken[-1][:MAX_REASON_CHARS], True)
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    return HeadExit(errors[-1][:MAX_REASON_CHARS] if errors else "", False)


def serves(pid: int, port: int) -> bool:
    """Whether process ``pid`` (the head's ``ray start``) or one of its descendants listens
    on TCP ``port``. Only the head's own processes are looked at, which needs no privilege."""
    try:
        head = psutil.Process(pid)
        family = [head, *head.children(recursive=True)]
    except psutil.Error:
        return False
    for process in family:
        # psutil 6 renamed ``connections`` to ``net_connections``; 5.9 has only the old name.
        listed = getattr(process, "net_connections", None) or process.connections
        try:
            if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in listed(kind="tcp")):  # fmt: skip
                return True
        except psutil.Error:  # it ended meanwhile
            continue
    return False
