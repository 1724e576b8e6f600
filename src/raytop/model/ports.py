"""What the faces need from the pipeline, declared where every face may import it: a
fresh ``Snapshot`` on demand, and one carrying every rank's Python stack
(``pipeline.collect.SnapshotCollector`` implements both)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from raytop.model import Snapshot

STACKS_TIMEOUT_S = 5.0  # a probe reads the request within a second and answers at once
# Native stacks take longer: each rank's py-spy has up to 5 s (probe.native_stack), then
# its answer waits for the next flush and the ledger's next publish.
NATIVE_STACKS_TIMEOUT_S = 12.0


@runtime_checkable
class Collector(Protocol):
    """Blocking; called from a thread (TUI) or directly (CLI). Must not raise for a
    lost cluster: it returns a snapshot whose ``cluster.connected`` is False.

    Runtime-checkable so that the TUI, which only needs ``collect`` to poll, can tell a
    poll-only source (a replay, a test's fake) from one that can also fetch stacks."""

    def collect(self) -> Snapshot: ...

    def request_stacks(
        self, run_id: str | None = None, timeout_s: float = 5.0, native: bool = False
    ) -> Snapshot:
        """Ask the ranks of ``run_id`` (every run's, if None) for their Python stacks (a
        request written to the cluster's KV store, so never in read-only) and return the
        first snapshot in which every live rank answered, or the last one at
        ``timeout_s``; ``Worker.stack`` is set only on the ranks that answered this
        request. ``native``: their native stacks too (py-spy in each worker,
        ``Worker.native_stack``). Blocks up to ``timeout_s``."""
        ...
