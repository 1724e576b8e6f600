"""The one thing every face needs from the sources: a fresh ``Snapshot`` on demand."""

from __future__ import annotations

from typing import Protocol

from raytop.model import Snapshot


class Collector(Protocol):
    """Blocking; called from a thread (TUI) or directly (CLI). Must not raise for a
    lost cluster: it returns a snapshot whose ``cluster.connected`` is False."""

    def collect(self) -> Snapshot: ...
