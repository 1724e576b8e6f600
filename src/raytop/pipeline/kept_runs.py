"""A run's derived facts and its findings, kept while the run is the very same object.

The ledger reader hands out the same ``TrainRun`` while nothing new was said of it (it
carries times, not ages), and ``pipeline.run_checkpoints`` the same run with its
checkpoints while those did not change either. What is made of such a run is then what
was made of it last time: its rank states (``pipeline.derive``, until the clock alone
could move one: ``derive.derived_run``), the run with its trial's id
(``pipeline.joins.attach_runs``) and its judgement (``diagnose.findings.judge_run``, in
the same context: its waits within the same second). At 250 runs of 8 ranks, making
them again was over half of a refresh in which nothing changed (docs/PERFORMANCE.md,
issue 25). A run that changed, or whose context did (its trial ended, a node died, the
ledger stopped publishing), is derived and judged again; its stall limit is made again
only when a rank's report history changed (not when only its beats moved).

Only the pipeline keeps these: ``diagnose`` holds no state, it is handed ``judge``.
"""

from __future__ import annotations

import dataclasses

from raytop.diagnose.findings import RunContext, RunFindings, steady_findings, timed_findings
from raytop.diagnose.hang import StallLimit, stall_limit_of
from raytop.model import TrainRun
from raytop.model.identity import same_items
from raytop.model.refresh import same_second
from raytop.model.thresholds import Thresholds
from raytop.model.train_run import report_intervals
from raytop.pipeline.derive import KeptRanks, derived_run
from raytop.pipeline.joins import with_trial


class KeptRuns:
    def __init__(self) -> None:
        # run id → (the run as read, thresholds, the run derived, the time it was derived
        # as of, the time until which that stands)
        self._derived: dict[str, tuple[TrainRun, Thresholds, TrainRun, float, float]] = {}
        # run id → (thresholds, its ranks as last derived): a run that changed keeps the
        # ranks that did not (``derive.with_rank_states``'s ``kept``)
        self._ranks: dict[str, tuple[Thresholds, KeptRanks]] = {}
        self._tagged: dict[str, tuple[TrainRun, str, TrainRun]] = {}  # with its trial's id
        # run id → (the derived run, thresholds, its context but the time, the wall clock's
        # time it was judged at, its steady findings, all its findings)
        self._judged: dict[str, tuple[TrainRun, Thresholds, tuple, float, RunFindings, RunFindings]]
        self._judged = {}
        # run id → (its ranks' report histories, thresholds, the stall limit made of them)
        self._stalls: dict[str, tuple[tuple, Thresholds, StallLimit]] = {}
        # run id → id(a rank's report history) → (that history, its report intervals)
        self._gaps: dict[str, dict[int, tuple[tuple, tuple[float, ...]]]] = {}
        self._seen: set[str] = set()

    def derive(self, run: TrainRun, thresholds: Thresholds, now: float) -> TrainRun:
        """``with_rank_states(run, thresholds, now)``, or what it gave for this very run
        while the clock alone cannot move it (``derive.derived_run``): a healthy run of
        which nothing new was read is the same object from one second to the next, and so
        is everything made of it downstream."""
        self._seen.add(run.run_id)
        kept = self._derived.get(run.run_id)
        if (
            kept is not None
            and kept[0] is run
            and kept[1] == thresholds
            and kept[3] <= now <= kept[4]
        ):
            return kept[2]
        ranks = self._ranks.get(run.run_id)
        if ranks is None or ranks[0] != thresholds:
            ranks = self._ranks[run.run_id] = (thresholds, {})
        derived, until = derived_run(run, thresholds, now, ranks[1])
        self._derived[run.run_id] = (run, thresholds, derived, now, until)
        return derived

    def with_trial(self, run: TrainRun, trial_id: str) -> TrainRun:
        """``joins.with_trial(run, trial_id)``, or what it gave for this very run."""
        kept = self._tagged.get(run.run_id)
        if kept is not None and kept[0] is run and kept[1] == trial_id:
            return kept[2]
        tagged = with_trial(run, trial_id)
        self._tagged[run.run_id] = (run, trial_id, tagged)
        return tagged

    def judge(self, run: TrainRun, thresholds: Thresholds, context: RunContext) -> RunFindings:
        """``judge_run``, or what it gave for this very run in the same context: all of it
        within the same second of the wall clock (``context.taken_at``; its findings say
        waits in whole seconds, as of ``known_at``, the ledger's publish), and its steady
        part (``steady_findings``) at any time. A run of which nothing new was read is
        judged again once a second, only for its waits (``timed_findings``), at the
        refresh at which the placement groups age too (``model.refresh``): a second of
        its own, the ledger's, put that work on another refresh of each second."""
        self._seen.add(run.run_id)
        same = (context.ended, context.ledger_available, context.dead_nodes)
        kept = self._judged.get(run.run_id)
        if kept is not None and kept[0] is run and kept[1] == thresholds and kept[2] == same:
            if same_second(context.taken_at, kept[3]):
                return kept[5]
            steady = kept[4]
        else:
            steady = steady_findings(run, thresholds, context)
        stall = self._stall(run, thresholds)
        timed = timed_findings(run, thresholds, dataclasses.replace(context, stall=stall))
        judged = (steady[0], steady[1], timed + steady[2])
        self._judged[run.run_id] = (run, thresholds, same, context.taken_at, steady, judged)
        return judged

    def _stall(self, run: TrainRun, thresholds: Thresholds) -> StallLimit:
        """``stall_limit(run, thresholds)``, or what the very same report histories gave:
        a run made again only because its ranks beat has them all, and a 2,000-rank run's
        limit sorts ~62,000 report gaps. When some changed (ranks reported), the ranks
        whose history is the very same keep their intervals (~2 µs a rank to make)."""
        histories = tuple(w.report_times for w in run.workers)
        kept = self._stalls.get(run.run_id)
        if kept is not None and kept[1] == thresholds and same_items(kept[0], histories):
            return kept[2]
        before, made = self._gaps.get(run.run_id, {}), {}
        gaps: list[float] = []
        for times in histories:
            held = before.get(id(times))
            if held is None or held[0] is not times:
                held = (times, report_intervals(times))
            made[id(times)] = held
            gaps += held[1]
        self._gaps[run.run_id] = made
        limit = stall_limit_of(gaps, thresholds)
        self._stalls[run.run_id] = (histories, thresholds, limit)
        return limit

    def forget_unseen(self) -> None:
        """After a collection: drop what is kept for runs it did not see."""
        kinds = (self._derived, self._ranks, self._tagged, self._judged, self._stalls, self._gaps)
        for kept in kinds:
            for gone in set(kept) - self._seen:
                del kept[gone]
        self._seen.clear()
