"""The finding kinds that say a run is stuck (``diagnose.ledger``, ``diagnose.hang``,
``diagnose.retries``) and the banner each gets: shared by every face, so a new class shows
everywhere a barrier stall does. The ranks each names as holding the run up are its
``Finding.ranks``.
"""

from __future__ import annotations

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
