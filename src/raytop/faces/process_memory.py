"""How many malloc arenas raytop's process may have: set once, before it starts a thread.

glibc's malloc gives a thread that allocates an arena of its own (up to eight per core),
and a page freed in one arena serves no allocation of another thread. In raytop the
poller thread builds each snapshot and the UI thread draws it, gRPC and the folder
watcher have threads of their own, and most of a snapshot's objects (a rank's record, a
``Worker``'s attributes) are over Python's small-object size, so they come from malloc:
at 250 runs of 8 ranks and 10,000 trials the peak RSS grew ~30 MB over the 40 refreshes
of the TUI's polling that way, and with two arenas it did not (docs/PERFORMANCE.md, "Scale,
tenth round"). Two, not one: the UI thread and the poller each keep one while the GIL
passes between them. Only on glibc (Linux); elsewhere nothing is set.
"""

from __future__ import annotations

import ctypes
import sys

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Whether the C library took the limit (glibc's ``mallopt(M_ARENA_MAX)``). Arenas
    made before the call stay: raytop calls it first thing (``cli.main``)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return mallopt(_M_ARENA_MAX, arenas) == 1
