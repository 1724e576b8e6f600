"""What a resume would do to each trial, before doing it (``raytop resume`` preview).

``Tuner.restore`` resumes unfinished trials from their latest checkpoint (a torch trial's
Train run resumes from its checkpoint snapshot, by its unchanged run name), and treats
errored trials as told: resume them too, restart them from scratch under a new trial id, or
leave them in ERROR. Nothing is deleted either way.
"""

from __future__ import annotations

from raytop.model import Experiment
from raytop.model.resume import Checkpoint, PreviewRow


def _from(checkpoint: Checkpoint | None) -> str:
    if checkpoint is None:
        return "start from scratch (no checkpoint)"
    epoch = f", epoch {checkpoint.epoch}" if checkpoint.epoch is not None else ""
    return f"resume from {checkpoint.dir_name}{epoch}"


def preview(
    experiment: Experiment,
    checkpoints: dict[str, Checkpoint],
    errored: str,
    max_concurrent: int | None,
) -> tuple[list[PreviewRow], list[str]]:
    rows, warnings = [], []
    restarted = 0
    for t in experiment.trials:
        checkpoint = checkpoints.get(t.trial_id)
        shown = "-"
        if checkpoint is not None:
            shown = checkpoint.dir_name + (f" (epoch {checkpoint.epoch})" if checkpoint.epoch
                                           is not None else "")  # fmt: skip
        if t.status == "TERMINATED":
            action = "skip (finished)"
        elif t.status == "ERROR" and errored == "skip":
            action = "skip (stays ERROR)"
        elif t.status == "ERROR" and errored == "restart":
            action = "restart from scratch under a new trial id (the old one stays on disk)"
            restarted += 1
        else:
            action = _from(checkpoint)
        if checkpoint is not None and checkpoint.missing and action.startswith("resume"):
            shown += " PARTIAL?"
            warnings.append(
                f"trial {t.trial_id}: its latest checkpoint {checkpoint.dir_name} lacks "
                f"{', '.join(checkpoint.missing)} that {checkpoint.previous} had: its shards "
                "may not cover every rank (a worker failed while saving?); Train resumes "
                "from it all the same, so check it or resume from an earlier one"
            )
        rows.append(PreviewRow(t.trial_id, t.status, shown, action))
    if restarted and max_concurrent:
        warnings.append(
            f"restarting {restarted} errored trial(s) adds them as new trials: more than "
            f"max_concurrent_trials = {max_concurrent} may run at once"
        )
    if not any(r.action.startswith(("resume", "restart", "start")) for r in rows):
        warnings.append("nothing to resume: every trial is finished (or kept as it is)")
    return rows, warnings
