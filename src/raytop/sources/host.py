"""The host view of the node raytop runs on: the OS's figures beside Ray's logical ones.

Ray's resources are bookkeeping, not OS limits (docs/RAY_FACTS.md#logical-resources): a node
"4/4 CPU" may be idle or pegged. On a head pod raytop shares its host with the head node
(and on a laptop with every node of a loopback cluster), so psutil answers for the nodes
whose address is one of this host's. Other nodes get Ray's own figures from its dashboard
(``sources.remote_hosts``), or none: never a guess.
"""

from __future__ import annotations

import os
import socket

import psutil

from raytop.model import HostStats

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def local_addresses() -> frozenset[str]:
    """Every address of this host's interfaces, loopback included."""
    found = set(LOOPBACK)
    try:
        for addresses in psutil.net_if_addrs().values():
            found.update(
                a.address for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6)
            )
    except OSError:
        pass
    return frozenset(found)


class HostProbe:
    """This host's CPU, memory and load, cheap enough for every refresh: the CPU % is
    psutil's since the previous call (no sleeping sample)."""

    def __init__(self) -> None:
        self.addresses = local_addresses()
        psutil.cpu_percent(None)  # primes the interval the first figure is measured over

    def is_local(self, address: str) -> bool:
        return address.split(":")[0] in self.addresses

    def stats(self) -> HostStats | None:
        try:
            memory = psutil.virtual_memory()
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            return HostStats(
                cpu_percent=psutil.cpu_percent(None),
                cpus=psutil.cpu_count() or 0,
                memory_used=int(memory.total - memory.available),
                memory_total=int(memory.total),
                load_1m=load,
            )
        except (OSError, psutil.Error):
            return None
