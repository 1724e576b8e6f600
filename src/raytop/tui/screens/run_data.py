"""What the Run and Rank screens look up in a snapshot: the run attempt by id, its
findings, and the line that says the report ledger's counts may be off.

Both screens follow one run across snapshots by ``run_id``; the findings are the
pipeline's (``diagnose``), only picked out here, never judged again."""

from __future__ import annotations

from raytop.model import Finding, LedgerStatus, Snapshot, TrainRun
from raytop.model.format import fmt_duration
from raytop.tui.widgets.stall_banner import RUN_KINDS


def find_run(snapshot: Snapshot | None, run_id: str) -> TrainRun | None:
    if snapshot is None:
        return None
    return next((r for r in snapshot.all_runs() if r.run_id == run_id), None)


def run_findings(
    snapshot: Snapshot | None, run: TrainRun, kinds: tuple[str, ...] = RUN_KINDS
) -> list[Finding]:
    """The findings of ``kinds`` about this attempt of ``run`` (or about the run as a
    whole: no ``attempt_id``), in the order of ``kinds`` (by default the ledger's, stall
    first)."""
    if snapshot is None:
        return []
    found = [
        f
        for f in snapshot.findings
        if f.kind in kinds and f.run_id == run.run_id and f.attempt_id in (None, run.attempt_id)
    ]
    return sorted(found, key=lambda f: kinds.index(f.kind))


def describe_ledger(ledger: LedgerStatus | None, now: float) -> str | None:
    if ledger is None:
        return None
    if not ledger.available:
        why = f": {ledger.error}" if ledger.error else ""
        return f"report ledger unavailable{why}; these counts may be stale"
    if ledger.restarted_at is not None:
        gap = f" (gap {fmt_duration(ledger.gap_s)})" if ledger.gap_s is not None else ""
        ago = fmt_duration(now - ledger.restarted_at)
        return f"ledger restarted {ago} ago{gap}: counts resumed from the probes"
    return None
