"""What the faces need from the pipeline, declared where every face may import it: a
fresh ``Snapshot`` on demand (``pipeline.collect.SnapshotCollector`` implements it)."""

from __future__ import annotations

from typing import Protocol

from raytop.model import Snapshot


class Collector(Protocol):
    """Blocking; called from a thread (TUI) or directly (CLI). Must not raise for a
    lost cluster: it returns a snapshot whose ``cluster.connected`` is False."""

    def collect(self) -> Snapshot: ...
