"""The typed references of a finding about a Train run (``model.finding``), made in one
place so that every module that judges a run names it the same way."""

from __future__ import annotations

from typing import Any

from raytop.model import TrainRun


def of_run(run: TrainRun) -> dict[str, Any]:
    """About the run as a whole (its checkpoints, its attempts' history): every attempt
    of it shows the finding. ``Finding(…, **of_run(run))``."""
    return {"run_id": run.run_id, "trial_id": run.trial_id}


def of_attempt(run: TrainRun) -> dict[str, Any]:
    """About this attempt's live state (its ranks, its reports): only this attempt
    shows it."""
    return {**of_run(run), "attempt_id": run.attempt_id}
