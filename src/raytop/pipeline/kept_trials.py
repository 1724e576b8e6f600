"""An experiment's trials with their reasons to wait, and its best trial, kept while its
trials are the very same tuple.

The probe's trial table hands out the same tuple of trials until a segment of it changes
(``sources.probe_table``); at 10,000 trials, giving each waiting trial its reason and
finding the best one again at every refresh was ~15 ms of one in which nothing changed
(docs/PERFORMANCE.md, issue 25). What is kept is what the same trials gave with the same
reasons (``pipeline.joins.pending_reasons``: read from the placement groups each time,
compared by value) and the same metric and mode.
"""

from __future__ import annotations

import dataclasses

from raytop.model import Experiment, PlacementGroup, Trial
from raytop.model.snapshot import BestTrial, best_trial
from raytop.pipeline.joins import Reasons, pending_reasons, with_reasons


class KeptTrials:
    def __init__(self) -> None:
        # experiment path → (its trials, the reasons, the trials with them)
        self._reasoned: dict[str, tuple[tuple[Trial, ...], Reasons, tuple[Trial, ...]]] = {}
        # experiment path → (its trials, metric, mode, the best of them)
        self._best: dict[str, tuple[tuple[Trial, ...], str | None, str | None, BestTrial | None]]
        self._best = {}

    def join(
        self, experiments: list[Experiment], groups: tuple[PlacementGroup, ...]
    ) -> list[Experiment]:
        """Each experiment with its trials' reasons to wait and its best trial; what is
        kept of experiments not among them is dropped."""
        joined = [self.with_best_trial(self.with_pending_reasons(e, groups)) for e in experiments]
        paths = {e.path for e in joined}
        for kept in (self._reasoned, self._best):
            for gone in set(kept) - paths:
                del kept[gone]
        return joined

    def with_pending_reasons(
        self, exp: Experiment, groups: tuple[PlacementGroup, ...]
    ) -> Experiment:
        """``exp`` with each waiting trial's reason (``joins.pending_reasons``), its trials
        kept while they and their reasons are the same."""
        reasons = pending_reasons(exp, groups)
        if reasons is None:
            self._reasoned.pop(exp.path, None)
            return exp
        kept = self._reasoned.get(exp.path)
        if kept is not None and kept[0] is exp.trials and kept[1] == reasons:
            trials = kept[2]
        else:
            trials = with_reasons(exp, reasons)
            self._reasoned[exp.path] = (exp.trials, reasons, trials)
        return exp if trials is exp.trials else dataclasses.replace(exp, trials=trials)

    def with_best_trial(self, exp: Experiment) -> Experiment:
        """``exp`` with its best trial by its metric and mode (``model.snapshot.best_trial``):
        made here, once, so every face marks the same one; kept while the trials, metric
        and mode are the same."""
        kept = self._best.get(exp.path)
        if kept is not None and kept[0] is exp.trials and kept[1:3] == (exp.metric, exp.mode):
            best = kept[3]
        else:
            best = best_trial(exp.trials, exp.metric, exp.mode)
            self._best[exp.path] = (exp.trials, exp.metric, exp.mode, best)
        return exp if best == exp.best_trial else dataclasses.replace(exp, best_trial=best)
