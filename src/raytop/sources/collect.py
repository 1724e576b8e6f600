"""Builds the one ``Snapshot`` every face shows: cluster + experiments + findings."""

from __future__ import annotations

import time
from pathlib import Path

from raytop.diagnose import diagnose
from raytop.home import registered_experiments
from raytop.model import Cluster, Node, Snapshot
from raytop.rundir import driver_alive
from raytop.sources import ray_adapter
from raytop.sources.tune_dir import ExperimentReader


def default_experiments() -> list[tuple[str, Path | None]]:
    """What a bare ``raytop`` shows: every launched experiment whose driver still runs,
    and the most recently launched one either way."""
    entries = registered_experiments()
    chosen = [e for e in entries if driver_alive(Path(e["raytop_dir"]))[1]]
    if entries and entries[-1] not in chosen:
        chosen.append(entries[-1])
    return [(e["path"], Path(e["raytop_dir"])) for e in chosen]


class SnapshotCollector:
    """``collect()`` never raises for a lost cluster: the snapshot says disconnected."""

    def __init__(
        self,
        address: str | None,
        *,
        embedded: bool = False,
        experiments: list[tuple[str, Path | None]] | None = None,
        unreachable_reason: str | None = None,
    ) -> None:
        self.address = address
        self.embedded = embedded
        self._unreachable_reason = unreachable_reason
        self._reader = ray_adapter.GcsReader(address) if address else None
        chosen = experiments if experiments is not None else default_experiments()
        self._experiments = [ExperimentReader(path, rdir) for path, rdir in chosen]

    def _cluster(self) -> Cluster:
        if self._reader is None:
            return Cluster(
                address=None,
                connected=False,
                error=self._unreachable_reason or "no Ray cluster found (none named, none running)",
            )
        try:
            nodes = tuple(Node(**n) for n in self._reader.nodes())
        except ray_adapter.ClusterUnreachable as exc:
            return Cluster(address=self.address, connected=False, error=str(exc),
                           embedded=self.embedded)  # fmt: skip
        return Cluster(
            address=self.address,
            connected=True,
            embedded=self.embedded,
            ray_version=ray_adapter.ray_version(),
            nodes=nodes,
        )

    def collect(self) -> Snapshot:
        cluster = self._cluster()
        experiments = tuple(reader.read() for reader in self._experiments)
        return Snapshot(
            taken_at=time.time(),
            cluster=cluster,
            experiments=experiments,
            findings=diagnose(cluster, experiments),
        )
