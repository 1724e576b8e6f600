"""An experiment's trials with their reasons to wait, its best trial, its counts by status
and its trials' findings, kept while its trials are the very same tuple.

The probe's trial table hands out the same tuple of trials until a segment of it changes
(``sources.probe_table``); at 10,000 trials, giving each waiting trial its reason and
finding the best one again at every refresh was ~15 ms of one in which nothing changed
(docs/PERFORMANCE.md, issue 25). What is kept is what the same trials gave with the same
reasons (``pipeline.joins.pending_reasons``: read from the placement groups each time,
compared by value) and the same metric and mode. The counts by status (the workloads' row,
``pipeline.workloads``) and the findings about its trials (``diagnose.findings.
trial_findings``, handed to ``diagnose``) were each another walk over every trial at every
refresh: ~5 ms of one in which nothing changed, at 10,000 trials.
"""

from __future__ import annotations

import dataclasses

from raytop.diagnose.findings import TrialsFindings, trial_findings
from raytop.model import Experiment, PlacementGroup, Trial
from raytop.model.snapshot import BestTrial, best_trial
from raytop.pipeline.joins import Reasons, pending_reasons, reason_for, with_reasons


def moved(old: tuple[Trial, ...], new: tuple[Trial, ...]) -> list[int] | None:
    """The places of ``new`` whose trial is not the very one ``old`` had there (the ones
    added at its end too); None when that is no cheaper than all of them (a table that
    shrank, or changed in more than half its places)."""
    if len(new) < len(old):
        return None
    places = [i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a is not b]
    places += range(len(old), len(new))
    return places if 2 * len(places) <= len(new) else None


class KeptTrials:
    def __init__(self) -> None:
        # experiment path → (its trials, the reasons, the trials with them)
        self._reasoned: dict[str, tuple[tuple[Trial, ...], Reasons, tuple[Trial, ...]]] = {}
        # experiment path → (its trials, metric, mode, the best of them, its place)
        self._best: dict[str, tuple[tuple[Trial, ...], str | None, str | None,
                                    BestTrial | None, int]] = {}  # fmt: skip
        # experiment path → (its trials, its name and metric, what they were judged)
        self._judged: dict[str, tuple[tuple[Trial, ...], tuple, TrialsFindings]] = {}
        self._counts: dict[str, tuple[tuple[Trial, ...], dict[str, int]]] = {}

    def join(
        self, experiments: list[Experiment], groups: tuple[PlacementGroup, ...]
    ) -> list[Experiment]:
        """Each experiment with its trials' reasons to wait and its best trial; what is
        kept of experiments not among them is dropped."""
        joined = [self.with_best_trial(self.with_pending_reasons(e, groups)) for e in experiments]
        paths = {e.path for e in joined}
        for kept in (self._reasoned, self._best, self._judged, self._counts):
            for gone in set(kept) - paths:
                del kept[gone]
        return joined

    def judge(self, exp: Experiment) -> TrialsFindings:
        """``trial_findings(exp)``, or what the very same trials gave under the same name
        and metric."""
        kept = self._judged.get(exp.path)
        if kept is not None and kept[0] is exp.trials and kept[1] == (exp.name, exp.metric):
            return kept[2]
        judged = trial_findings(exp)
        self._judged[exp.path] = (exp.trials, (exp.name, exp.metric), judged)
        return judged

    def counts(self, exp: Experiment) -> dict[str, int]:
        """``exp.status_counts()``, or what the very same trials gave (not to be changed)."""
        kept = self._counts.get(exp.path)
        if kept is not None and kept[0] is exp.trials:
            return kept[1]
        counts = exp.status_counts()
        self._counts[exp.path] = (exp.trials, counts)
        return counts

    def with_pending_reasons(
        self, exp: Experiment, groups: tuple[PlacementGroup, ...]
    ) -> Experiment:
        """``exp`` with each waiting trial's reason (``joins.pending_reasons``), its trials
        kept while they and their reasons are the same; with the same reasons, only the
        trials that moved (a result rewrites one segment of the table) are given theirs."""
        reasons = pending_reasons(exp, groups)
        if reasons is None:
            self._reasoned.pop(exp.path, None)
            return exp
        kept = self._reasoned.get(exp.path)
        places = None if kept is None or kept[1] != reasons else moved(kept[0], exp.trials)
        if kept is not None and kept[0] is exp.trials and kept[1] == reasons:
            trials = kept[2]
        elif places is not None and kept is not None:
            reasoned = reason_for(exp.name, reasons)
            listed = list(kept[2]) + [None] * (len(exp.trials) - len(kept[2]))
            for i in places:
                listed[i] = reasoned(exp.trials[i])
            trials = tuple(listed)  # type: ignore[arg-type]
            self._reasoned[exp.path] = (exp.trials, reasons, trials)
        else:
            trials = with_reasons(exp, reasons)
            self._reasoned[exp.path] = (exp.trials, reasons, trials)
        return exp if trials is exp.trials else dataclasses.replace(exp, trials=trials)

    def with_best_trial(self, exp: Experiment) -> Experiment:
        """``exp`` with its best trial by its metric and mode (``model.snapshot.best_trial``):
        made here, once, so every face marks the same one; kept while the trials, metric
        and mode are the same, and with the same ones, looked for among the trials that
        moved when they can tell (``_best_after``)."""
        kept = self._best.get(exp.path)
        same = kept is not None and kept[1:3] == (exp.metric, exp.mode)
        if same and kept is not None and kept[0] is exp.trials:
            best, place = kept[3], kept[4]
        else:
            places = moved(kept[0], exp.trials) if same and kept is not None else None
            if places is None or kept is None:
                best, place = None, -2
            else:
                best, place = _best_after(exp, kept[3], kept[4], places)
            if place == -2:  # not known from the moved trials alone
                best = best_trial(exp.trials, exp.metric, exp.mode)
                place = _place(exp.trials, best, range(len(exp.trials)))
            self._best[exp.path] = (exp.trials, exp.metric, exp.mode, best, place)
        return exp if best == exp.best_trial else dataclasses.replace(exp, best_trial=best)


def _best_after(
    exp: Experiment, was: BestTrial | None, at: int, places: list[int]
) -> tuple[BestTrial | None, int]:
    """The best trial of ``exp`` from the one before (``was``, at place ``at``) and the
    trials at ``places`` (those that moved): every other trial is as it was, so none is
    better than ``was``, and one as good comes after it (the first of equals wins). -2 as
    the place: the moved ones cannot tell (the best before moved and none of them is as
    good, or one as good comes after its place)."""
    found = best_trial(tuple(exp.trials[i] for i in places), exp.metric, exp.mode)
    here = _place(exp.trials, found, places)
    if was is None:
        return found, here
    if at in places:  # the best moved: its new value counts among the moved ones
        if found is not None and (_better(found, was, exp.mode)
                                  or found.value == was.value and here <= at):  # fmt: skip
            return found, here
        return None, -2
    if found is not None and (_better(found, was, exp.mode)
                              or found.value == was.value and here < at):  # fmt: skip
        return found, here
    return was, at


def _better(a: BestTrial, b: BestTrial, mode: str | None) -> bool:
    return a.value > b.value if mode == "max" else a.value < b.value


def _place(trials: tuple[Trial, ...], best: BestTrial | None, among) -> int:
    """Where ``best`` is in ``trials`` (looked for at the places ``among``); -1: none."""
    if best is None:
        return -1
    return next(i for i in among if trials[i].trial_id == best.trial_id)
