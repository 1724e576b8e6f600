"""The host view of the nodes raytop cannot measure itself: Ray's figures, from its dashboard.

``sources.host`` measures the nodes on raytop's own host (psutil: fresh). For the others,
each node's Ray agent reports its host's CPU %, CPU count, memory and load to the
dashboard head every ~5 s; one request (``wire.dashboard``) fetches them all. The
collector asks only while some alive node is elsewhere (a laptop cluster, all local,
costs nothing), on its own thread, with a 1 s deadline, and at most every ``CACHE_S``:
the figures change no faster.

The answer is untrusted input (``model.untrusted_dashboard``): one that is bad (wrong
shape, out of range, over its size cap) is a one-line warning naming the endpoint, and
the last good figures are kept. A dashboard that does not answer (none in the cluster,
not reachable from here) is no fault: the nodes elsewhere have no figures (never stale
ones), ``note`` says why in one line, and it is asked again later, less and less often
(``sources.dashboard_poll``), so a black-holed address costs the 1 s deadline rarely.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from raytop.model import HostStats, untrusted, untrusted_dashboard
from raytop.sources.dashboard_poll import DashboardPoll
from raytop.wire.dashboard import DashboardUnreachable

CACHE_S = 5.0  # the agents report every 5 s (REPORTER_UPDATE_INTERVAL_MS)


class NodeSummarySource(Protocol):
    """``wire.dashboard.DashboardClient``, or a stand-in for it in tests."""

    endpoint: str

    def node_summary(self) -> bytes: ...


class RemoteHosts:
    """``stats()``: ``{node id: HostStats}`` of every node the dashboard has figures for,
    as of its last good answer; ``warning`` and ``note`` say how the last ask went."""

    def __init__(
        self, client: NodeSummarySource, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._poll = DashboardPoll(CACHE_S, clock)
        self._stats: dict[str, HostStats] = {}
        self.warning: str | None = None  # the last answer was bad: its last good copy is kept
        self.note: str | None = None  # the dashboard did not answer: no figures

    def stats(self) -> dict[str, HostStats]:
        if self._poll.due():
            self._poll.asked(answered=self._fetch())
        return self._stats

    def _fetch(self) -> bool:
        """Ask once; whether the dashboard answered."""
        try:
            raw = self._client.node_summary()
            data = untrusted.parse(raw, untrusted_dashboard.MAX_DASHBOARD_BYTES)
            stats = untrusted_dashboard.node_summary(data)
        except DashboardUnreachable as exc:
            self._stats, self.warning = {}, None
            self.note = f"Ray's dashboard {exc}"
            return False
        except ValueError as exc:  # Invalid, Refused, not JSON, not text
            self.warning = untrusted.problem(self._client.endpoint, exc) + (
                "; host figures of nodes elsewhere are from its last good answer"
                if self._stats
                else ""
            )
            self.note = None
            return True
        self._stats, self.warning, self.note = stats, None, None
        return True
