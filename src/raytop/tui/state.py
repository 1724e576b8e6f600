"""What the overview shows, as a pure value rebuilt from each poller message.

Keeping this out of the widgets makes the "keep the last good data while disconnected"
rules plain functions that are easy to test and reason about.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from raytop.model import Cluster, Snapshot


@dataclass(frozen=True)
class ViewState:
    latest: Snapshot | None = None
    """The newest snapshot from the collector, connected or not."""
    last_connected: Snapshot | None = None
    """The newest snapshot whose cluster was reachable."""
    problem: str | None = None
    """Why the cluster is unreachable right now; ``None`` when healthy."""
    slow: str | None = None
    """The poller waits longer than asked because reads are slow (``SnapshotReady.slow``)."""

    def with_snapshot(self, snapshot: Snapshot, slow: str | None = None) -> ViewState:
        if snapshot.cluster.connected:
            return ViewState(latest=snapshot, last_connected=snapshot, slow=slow)
        if snapshot.cluster.history_only:  # history from storage (--storage): no fault
            return ViewState(latest=snapshot, last_connected=None, slow=slow)
        reason = snapshot.cluster.error or "cluster unreachable"
        return ViewState(latest=snapshot, last_connected=self.last_connected, problem=reason,
                         slow=slow)  # fmt: skip

    def with_failure(self, error: str, consecutive: int) -> ViewState:
        """The collector raised: keep every snapshot, only the problem changes."""
        attempts = "" if consecutive == 1 else f" ({consecutive} attempts)"
        return replace(self, problem=f"{error}{attempts}")

    @property
    def cluster_snapshot(self) -> Snapshot | None:
        """The snapshot whose cluster (nodes, placement groups) to describe: while
        disconnected, the last one that answered."""
        if self.problem and self.last_connected is not None:
            return self.last_connected
        return self.latest

    @property
    def cluster(self) -> Cluster | None:
        """The cluster to describe: while disconnected, the last one that answered."""
        snapshot = self.cluster_snapshot
        return snapshot.cluster if snapshot else None

    @property
    def body(self) -> Snapshot | None:
        """Where experiments and findings come from.

        A disconnected snapshot may still carry experiments read from storage (newer
        than anything the cluster said); when it carries none, the last good ones stay.
        """
        if self.latest is None or self.latest.experiments or self.last_connected is None:
            return self.latest
        return self.last_connected
