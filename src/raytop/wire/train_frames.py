"""The frames of Train V2's ``TrainContext.report`` that tell its parts apart, for the
probe's time shares (``probe.activity``): a rank inside report is either waiting at the
barrier where the ranks agree on the checkpoint's folder name
(``_sync_checkpoint_dir_name_across_ranks``, a Ray call that returns when every rank has
entered the same report), uploading its checkpoint (``_upload_checkpoint``), or waiting
for its turn to put the result in its one-slot result queue (``_wait_then_report``): the
queue holds one result, so a rank blocks there until Train's controller has taken the one
before, which it polls for every ``RAY_TRAIN_HEALTH_CHECK_INTERVAL_S`` (2 s by default).

Verified in ray/train/v2/_internal/execution/context.py of Ray 2.58.1, 2.59.0 and 2.60.0;
checked by what this Ray has (``wire.capabilities.REPORT_PARTS``), never by its version.
"""

from __future__ import annotations

import os

from raytop.wire import capabilities as caps

REPORT_BARRIER, REPORT_UPLOAD, REPORT_WAIT = "report_barrier", "report_upload", "report_wait"
_PARTS = {
    "_sync_checkpoint_dir_name_across_ranks": REPORT_BARRIER,
    "_upload_checkpoint": REPORT_UPLOAD,
    "_wait_then_report": REPORT_WAIT,
}
_POLL_ENV, _POLL_DEFAULT_S = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", 2.0
_CONTEXT_FILE = os.path.join("train", "v2", "_internal", "execution", "context.py")


def controller_poll_s() -> float | None:
    """How often Train's controller polls its ranks, read as the controller reads it (its
    ``__init__``: ``RAY_TRAIN_HEALTH_CHECK_INTERVAL_S``, 2.0 by default): called in the
    controller's own process, by its RunProbe. None: a setting that is no number."""
    try:
        value = float(os.environ.get(_POLL_ENV, _POLL_DEFAULT_S))
    except ValueError:
        return None
    return value if value > 0 else None


def report_parts() -> tuple[str, dict[str, str]]:
    """(the file Train's report frames are in, frame name → part), or ("", {}) on a Ray
    that lacks them: the probe then counts report's time as one share."""
    if not caps.has(caps.REPORT_PARTS):
        return "", {}
    return _CONTEXT_FILE, dict(_PARTS)


__all__ = ["REPORT_BARRIER", "REPORT_UPLOAD", "REPORT_WAIT", "controller_poll_s", "report_parts"]
