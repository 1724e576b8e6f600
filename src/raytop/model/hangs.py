"""The finding kinds that say a run is stuck (``diagnose.ledger``, ``diagnose.hang``,
``diagnose.retries``), the banner each gets, and the ranks each names as holding the run
up: shared by every face, so a new class shows everywhere a barrier stall does."""

from __future__ import annotations

from raytop.model.finding import Finding

HANG_LABELS = {
    "barrier_stall": "BARRIER STALL",
    "controller_stuck": "CONTROLLER STUCK",
    "report_undeliverable": "REPORT UNDELIVERABLE",
    "checkpoint_upload_stuck": "UPLOAD STUCK",
    "collective_hang": "COLLECTIVE HANG",
    "data_loader_hang": "DATA LOADER HANG",
    "io_hang": "I/O HANG",
    "compute_hang": "NO PROGRESS",
}
HANG_KINDS = tuple(HANG_LABELS)
# Evidence keys that list the ranks a hang waits for, by kind of hang.
_RANK_KEYS = ("missing_ranks", "holding_ranks", "uploading_ranks")


def hang_ranks(finding: Finding | None) -> list[int]:
    """The ranks the others wait for (a barrier's missing ones, a collective's holders,
    the ranks still uploading); empty when the hang names none (a stuck controller)."""
    if finding is None:
        return []
    for key in _RANK_KEYS:
        ranks = finding.evidence.get(key)
        if ranks:
            return [int(r) for r in ranks]
    return []
