"""What the pipeline derives from what the sources read, before any face sees it.

Each fact about a rank is made here, once per snapshot, with the collector's
``Thresholds`` (never a second default), and carried on the ``Worker`` (``TrainRun.gone``
for the attempt): its state, reports behind, its one report interval and rate, whether it
is silent, its part in the report barrier, the run's time shares with its goodput (a
rank's own are its ``Activity``'s, made once when first read). The judgements
(``diagnose``) and every face read those fields; none works them out again. What an
attempt restored is joined here too: the probe's checkpoint folder name with Train's own
record of that checkpoint's metrics on storage; and the line on Ray's NCCL hang detector,
with its verdict so far.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

from raytop.diagnose.ray_hang import detector_line
from raytop.model import Activity, TrainRun, Worker
from raytop.model.evolve import evolve
from raytop.model.identity import same_items
from raytop.model.records import MAX_METRIC_KEY_CHARS, MAX_REPORT_METRICS
from raytop.model.thresholds import Thresholds
from raytop.model.time_shares import shares, summed
from raytop.model.train_run import (
    BARRIER_HOLDING,
    BARRIER_WAITING,
    report_intervals,
    seconds_since,
)


def report_interval(w: Worker) -> float | None:
    """The rank's one report interval: the median of its recent report-to-report times
    (``Worker.report_intervals_s``, its last 32 reports); the probe's own figure only when
    it sent no history. The median, not the mean rate over the window: one slow report
    (a checkpoint, an evaluation) would move a mean for 32 reports, and what a user reads
    beside a rank's state, and what ``rank_silent`` judges a silence against, is its usual
    rhythm. The history is the one every face also draws (the rank screen's bars)."""
    if not w.report_times:
        return w.usual_interval_s
    return _median_gap(w.report_times)


# Distinct histories whose median is kept: more than the ranks of the largest runs
# measured (2,000), so a rank that sent no new report costs a lookup, not a median.
MEDIANS_KEPT = 8_192


@functools.lru_cache(maxsize=MEDIANS_KEPT)
def _median_gap(times: tuple[float, ...]) -> float | None:
    """``statistics.median`` of ``report_intervals(times)``, once per history: the reader
    keeps an unchanged rank's ``report_times``, and 2,000 ranks' medians made again each
    refresh doubled this step's CPU (10 ms more)."""
    gaps = sorted(report_intervals(times))
    if not gaps:
        return None
    middle = len(gaps) // 2
    return gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2


# rank → (the rank's Worker as read, the top report and whether a rank is short then, the
# Worker derived from them, the time it was derived as of and until when that stands
# (``_derived``):
# what ``with_rank_states`` keeps for a caller, per run; and under ``SHARES`` (not a
# rank), the run's time shares and the activities they were summed from: a run made
# again with the very same activities (one rank reported) keeps them, and summing 8
# ranks' shares again was a third of deriving each of 250 such runs.
KeptRanks = dict[int, tuple]
SHARES = -1


def with_rank_states(
    run: TrainRun, t: Thresholds, now: float, kept: KeptRanks | None = None
) -> TrainRun:
    """``run`` with every rank's derived facts filled in (``state``, ``behind``,
    ``usual_interval_s``, ``rate_per_min``, ``silent``, ``barrier``) and ``gone``, in one
    pass (O(ranks): once per snapshot, not per row per redraw), as of ``now`` (the
    ledger's last publish: ``Snapshot.ages_at``); ``derived_run`` says until when."""
    return derived_run(run, t, now, kept)[0]


def derived_run(
    run: TrainRun, t: Thresholds, now: float, kept: KeptRanks | None = None
) -> tuple[TrainRun, float]:
    """``with_rank_states``, and the first time after ``now`` at which it could say
    otherwise of the very same ``run``: a rank's heartbeat or report crossing its
    threshold, or the run's last heartbeat going past ``dead_after_s`` (``gone``); ``inf``
    when no clock moves it. The run carries times, not ages: until then a caller keeps
    what was derived (``pipeline.kept_runs``). ``kept``: a caller's record of this run's
    ranks as last derived (with the same ``t``): a rank whose ``Worker`` is the very one,
    with the same top report and shortfall, and whose state stands at ``now`` is not
    derived again (the ledger reader hands out the same ``Worker`` while nothing moved)."""
    if not run.workers:
        return run, math.inf
    top = max(w.reports_entered for w in run.workers)
    seen = {w.rank for w in run.workers}
    waits = any(w.in_report and w.reports_entered == top for w in run.workers)
    short = waits and (
        any(w.reports_entered < top for w in run.workers)
        or any(r not in seen for r in range(run.world_size))
    )
    if kept is None:
        made = [_derived(w, top, short, t, now) for w in run.workers]
    else:
        made = [_kept_derived(w, top, short, t, kept, now) for w in run.workers]
    workers = tuple(w for w, _ in made)
    until = min(u for _, u in made)
    beats = [w.heartbeat_at for w in workers if w.heartbeat_at is not None]
    gone = bool(beats) and now - max(beats) > t.dead_after_s
    if beats and not gone:
        until = min(until, max(beats) + t.dead_after_s)
    activities = [w.activity for w in run.workers if w.activity is not None]
    was = kept.get(SHARES) if kept is not None else None
    if was is not None and same_items(was[0], activities):
        fields = was[1]
    else:
        fields = _run_shares(activities)
        if kept is not None:
            kept[SHARES] = (activities, fields)
    return evolve(run, workers=workers, gone=gone, **fields), until


def _run_shares(activities: list[Activity]) -> dict[str, Any]:
    """The run's time shares, recent ones, seconds sampled and goodput, over its ranks'."""
    seconds = summed(a.time_s for a in activities)
    attempt = shares(seconds)
    return {
        "time_shares": attempt, "time_sampled_s": round(sum(seconds.values()), 2),
        "recent_time_shares": shares(summed(a.recent_time_s for a in activities)),
        "goodput": attempt["compute"] if attempt else None,
    }  # fmt: skip


def _kept_derived(
    w: Worker, top: int, short: bool, t: Thresholds, kept: KeptRanks, now: float
) -> tuple[Worker, float]:
    was = kept.get(w.rank)
    if (
        was is not None
        and was[0] is w
        and was[1] == top
        and was[2] == short
        and was[4] <= now <= was[5]
    ):
        return was[3], was[5]
    derived, until = _derived(w, top, short, t, now)
    kept[w.rank] = (w, top, short, derived, now, until)
    return derived, until


def _silent_after(w: Worker, t: Thresholds, interval: float | None) -> float | None:
    """How long out of report makes the rank silent; None: it cannot be (done, fewer than
    three reports, no interval known)."""
    if w.done or w.reports_entered < 3 or interval is None:
        return None
    return max(t.silent_min_s, t.silent_factor * interval)


def _derived(w: Worker, top: int, short: bool, t: Thresholds, now: float) -> tuple[Worker, float]:
    """The rank derived as of ``now``, and when the clock alone next moves its state: its
    heartbeat going past ``dead_after_s``, or its report past its silence limit (``inf``:
    never, as a beat never gets younger: dead stays dead until one comes)."""
    at, beat = w.last_enter_at, w.heartbeat_at
    report_age, beat_age = seconds_since(now, at), seconds_since(now, beat)
    behind = top - w.reports_entered
    interval = report_interval(w)
    inside = w.in_report
    dead = not w.done and beat_age is not None and beat_age > t.dead_after_s
    limit = _silent_after(w, t, interval)
    silent = not (inside or dead) and limit is not None and report_age is not None
    silent = silent and report_age > limit
    if w.done:
        state = "done"
    elif dead:
        state = "dead"
    elif inside:
        state = "waiting"
    elif behind > 0:
        state = "behind"
    elif silent:
        state = "silent"
    else:
        state = "training"
    until = math.inf
    if not (w.done or dead):
        if beat is not None:
            until = beat + t.dead_after_s
        if not (silent or inside) and limit is not None and at is not None:
            until = min(until, at + limit)
        if until < now:
            until = math.inf
    barrier = ""
    if short:
        barrier = BARRIER_HOLDING if behind > 0 else BARRIER_WAITING if inside else ""
    derived = evolve(
        w,
        state=state,
        behind=behind,
        usual_interval_s=interval,
        rate_per_min=60.0 / interval if interval else None,
        silent=silent,
        barrier=barrier,
    )
    return derived, until


def with_restored_checkpoint(run: TrainRun, snapshot: dict[str, Any] | None) -> TrainRun:
    """``run`` with its current attempt's restored checkpoint named, and its metrics filled
    in from the run's checkpoint snapshot (``checkpoint_manager_snapshot.json``, already
    shape-checked) when the RunProbe could not know them: the first attempt of a new
    controller that resumed the run (``raytop resume``, a re-run with the same name) starts
    from a checkpoint an earlier controller reported. Only on positive evidence: every rank
    that said names the same folder, and Train's snapshot holds that folder's metrics."""
    names = {w.restored_from for w in run.workers if w.restored_from}
    if len(names) != 1 or not run.attempts:
        return run
    (name,) = names
    current = [a for a in run.attempts if a.attempt_id == run.attempt_id] or [run.attempts[-1]]
    attempt = current[-1]
    restored = attempt.restored
    if restored is None:
        restored = _checkpoint_metrics(snapshot, name)
    filled = dataclasses.replace(attempt, restored=restored, restored_from=name)
    attempts = tuple(filled if a is attempt else a for a in run.attempts)
    return dataclasses.replace(run, attempts=attempts)


def _checkpoint_metrics(snapshot: dict[str, Any] | None, name: str) -> dict[str, float] | None:
    """The finite scalar metrics Train recorded for checkpoint folder ``name``."""
    for result in (snapshot or {}).get("checkpoint_results", []):
        if result.get("checkpoint_dir_name") != name:
            continue
        metrics = result.get("metrics") or {}
        kept: dict[str, float] = {}
        for key, value in metrics.items():
            if len(kept) >= MAX_REPORT_METRICS:
                break
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if isinstance(key, str) and math.isfinite(value):
                kept[key[:MAX_METRIC_KEY_CHARS]] = float(value)
        return kept or None
    return None


def with_ray_detector(run: TrainRun) -> TrainRun:
    """``run`` with the line on Ray's NCCL hang detector made, once, from what its RunProbe
    saw and Ray's verdict so far (``TrainRun.ray_hang``, read before this)."""
    detector = run.ray_detector
    if detector is None:
        return run
    line = detector_line(detector, run.ray_hang)
    if line == detector.line:
        return run
    return dataclasses.replace(run, ray_detector=dataclasses.replace(detector, line=line))
