"""Joins of what the readers read, made once per collection: each experiment's Train
runs (by the raytop trainable's run names), each waiting trial's reason (from the
placement groups; ``pipeline.kept_trials`` keeps them, and the best trial, while the
trials are the same), its runs' storage warnings, and a stacks answer cleaned of stale
stacks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from raytop.model import Experiment, PlacementGroup, TrainRun, Trial
from raytop.model.evolve import evolve
from raytop.model.identity import same_items
from raytop.rundir import train_run_name


def with_run_warnings(exp: Experiment, by_run: dict[str, list[str]]) -> Experiment:
    """Its runs' storage warnings (keyed by run name, never parsed out of the text) join
    its own."""
    mine = tuple(w for r in exp.runs for w in by_run.get(r.run_name, ()))
    return dataclasses.replace(exp, warnings=exp.warnings + mine) if mine else exp


# What a waiting trial's reason is made of (``pending_reasons``): by trial id, by Train run
# name, and the one for trials Tune has not started.
Reasons = tuple[dict[str, str], dict[str, str], str | None]


def pending_reasons(exp: Experiment, groups: tuple[PlacementGroup, ...]) -> Reasons | None:
    """Why ``exp``'s waiting trials wait: its own unplaced group's reason, its Train
    run's, or else the experiment's pending-trial groups' (Tune creates those for trials
    not yet started; they all share the trial shape). None: none of its groups waits."""
    waiting = [g for g in groups if not g.placed and g.why_pending and g.experiment == exp.name]
    if not waiting:
        return None
    own = {g.owner: g.why_pending for g in waiting if g.owner_kind == "trial"}
    runs = {g.owner: g.why_pending for g in waiting if g.owner_kind == "train_run"}
    unassigned = next((g.why_pending for g in waiting if g.owner_kind == "pending_trial"), None)
    return own, runs, unassigned  # type: ignore[return-value]


def reason_for(name: str, reasons: Reasons) -> Callable[[Trial], Trial]:
    """What gives a trial of experiment ``name`` its reason to wait (``pending_reasons``):
    the very trial when its reason stays (10,000 copies a refresh cost ~100 ms)."""
    own, runs, unassigned = reasons

    def reasoned(t: Trial) -> Trial:
        if t.trial_id in own:
            why = own[t.trial_id]
        elif runs and (run := runs.get(train_run_name(name, t.trial_id))) is not None:
            why = "Train workers wait: " + run
        else:
            why = unassigned if t.status == "PENDING" else None
        return t if why == t.pending_reason else evolve(t, pending_reason=why)

    return reasoned


def with_reasons(exp: Experiment, reasons: Reasons) -> tuple[Trial, ...]:
    """``exp``'s trials, each waiting one with its reason (``pending_reasons``); the very
    tuple when no trial's reason moved."""
    reasoned = reason_for(exp.name, reasons)
    trials = tuple(reasoned(t) for t in exp.trials)
    return exp.trials if same_items(trials, exp.trials) else trials


def with_trial(run: TrainRun, trial_id: str) -> TrainRun:
    return evolve(run, trial_id=trial_id)


def attach_runs(
    experiments: list[Experiment],
    runs: tuple[TrainRun, ...],
    tag: Callable[[TrainRun, str], TrainRun] = with_trial,
) -> tuple[list[Experiment], tuple[TrainRun, ...]]:
    """Give each experiment the Train runs of its trials (named ``<experiment>-<trial id>``
    by the raytop trainable); return the runs of no watched experiment separately. A run
    resumed by a new controller keeps its name under a new run id: the newest (the last
    of its name in ``runs``, which the ledger reader orders oldest first) is the trial's,
    and the earlier ones are not "other runs". ``tag``: how a run gets its trial's id
    (``with_trial``, or a caller's that hands out the same tagged run for the same run)."""
    by_name = {r.run_name: r for r in runs}
    attached: set[str] = set()
    result = []
    for exp in experiments:
        # The runs named for a trial of it, by that trial's id: its 10,000 trials are then
        # looked up by id, no run name made for each (``train_run_name``).
        prefix = train_run_name(exp.name, "")
        named = {n[len(prefix) :]: r for n, r in by_name.items() if n.startswith(prefix)}
        mine = []
        for trial in exp.trials if named else ():
            run = named.get(trial.trial_id)
            if run is not None:
                mine.append(tag(run, trial.trial_id))
                attached.add(run.run_name)
        result.append(dataclasses.replace(exp, runs=tuple(mine)))
    return result, tuple(r for r in runs if r.run_name not in attached)
