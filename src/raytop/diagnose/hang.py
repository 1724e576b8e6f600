"""Hang triage: every way a Train run can stop advancing, classified, with evidence.

The barrier stall (a rank missing from ``ray.train.report``) is in ``diagnose.ledger``.
The classes here are the ones report counts alone cannot see:

- ``controller_stuck``: every rank is inside the same report and none returns: the
  ranks arrived, the controller does not take the report (ray-project/ray PR 53725);
- ``checkpoint_upload_stuck``: an upload in flight far longer than this checkpoint's
  bytes at the run's usual throughput, or than the run's usual report interval;
- ``collective_hang``: no report for longer than the run's threshold, and ranks wait in a
  collective (``torch.distributed.*``, or a backward pass that carries DDP's all_reduce)
  while others have not joined it; ``data_loader_hang`` and ``io_hang`` when the ranks
  holding the run up are in ``torch.utils.data`` or in I/O; ``compute_hang`` when every
  rank sits in the user's own code;
- ``straggler`` (a warning, not a hang): one rank works far longer per step than its
  peers, who wait for it (nvidia-resiliency-ext's relative score).

Where a rank is comes from its probe's once-a-second stack sample (``Worker.activity``).
The threshold is learned from the run (``stall_limit``): a 2-second-step run is
flagged in seconds, a 10-minute-epoch run is not flagged falsely.

Pure: over ``model`` objects only.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from raytop.diagnose.refs import of_attempt
from raytop.model import Finding, Severity, TrainRun, Worker
from raytop.model.thresholds import Thresholds

# Kinds of activity that are waiting on other ranks (``probe.activity``).
WAITING = frozenset({"collective", "backward"})
STRAGGLER_SCORE = 2.0  # a rank working this many times its peers' median is a straggler
STRAGGLER_MIN_SAMPLES = 20  # one-second samples a rank needs before it is scored
STRAGGLER_MIN_REPORTS = 5  # or reports, when it has no samples
ASSUMED_MIN_THROUGHPUT_BPS = 10e6  # before the run's own is known: 10 MB/s is slow


def report_intervals(run: TrainRun) -> list[float]:
    """The gaps between consecutive report entries of every rank (its last 32), each
    rank's ``Worker.report_intervals_s``: the run's rhythm is judged from the same series
    as each rank's own interval."""
    return [gap for w in run.workers for gap in w.report_intervals_s]


@dataclass(frozen=True)
class StallLimit:
    """How long without progress is a stall for one run, why that long, and how many
    report intervals it was learned from (below two, nothing is learned yet). Each run
    has its own: ``diagnose`` makes it once per run and hands it to every judgement of
    that run (up to four ask), so 2,000 ranks' report times are walked once a refresh."""

    seconds: float
    why: str
    intervals: int


def stall_limit(run: TrainRun, t: Thresholds) -> StallLimit:
    """With ``t.learn_stall``, ``max(k × median report interval, 1.5 × the longest recent
    one, floor)`` once the run has two intervals; else (or before) ``t.stall_after_s``."""
    return stall_limit_of(report_intervals(run), t)


def stall_limit_of(gaps: Sequence[float], t: Thresholds) -> StallLimit:
    """``stall_limit`` of a run whose ranks' report intervals, all together, are ``gaps``
    (in any order): a caller that kept each rank's own hands them in."""
    if not t.learn_stall or len(gaps) < 2:
        return StallLimit(t.stall_after_s, f"the {t.stall_after_s:g}s stall threshold", len(gaps))
    median = statistics.median(gaps)
    learned = max(t.stall_factor * median, 1.5 * max(gaps), t.stall_floor_s)
    why = (f"{learned:.0f}s, {t.stall_factor:g}× the run's {median:.1f}s report interval "
           f"(at least {t.stall_floor_s:g}s)")  # fmt: skip
    return StallLimit(learned, why, len(gaps))


def last_progress(run: TrainRun) -> float | None:
    """When any rank last entered or left a report (unix s)."""
    times = [x for w in run.workers for x in (w.last_enter_at, w.last_exit_at) if x]
    return max(times) if times else None


def _ranks(workers: Iterable[Worker]) -> str:
    ranks = sorted(w.rank for w in workers)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _where(workers: list[Worker], now: float) -> str:
    """``rank 1 has been in X for 42s; ranks 0, 2 in Y for 40s``: the ranks grouped by
    where they are."""
    groups: dict[str, list[Worker]] = {}
    for w in workers:
        where = w.activity.where if w.activity else "an unknown place (no sample)"
        groups.setdefault(where, []).append(w)
    parts = []
    for where, members in sorted(groups.items(), key=lambda g: min(w.rank for w in g[1])):
        since = [now - w.activity.since for w in members if w.activity]
        verb = "has" if len(members) == 1 else "have"
        how_long = f" for {max(since):.0f}s" if since else ""
        parts.append(f"{_ranks(members)} {verb} been in {where}{how_long}")
    return "; ".join(parts)


def _evidence(run: TrainRun, now: float, **extra) -> dict:
    return {
        "run_id": run.run_id, "run_name": run.run_name, "attempt_id": run.attempt_id,
        "trial_id": run.trial_id,
        "activity": {str(w.rank): {"kind": w.activity.kind, "where": w.activity.where,
                                   "for_s": round(now - w.activity.since, 1)}
                     for w in run.workers if w.activity},
        **extra,
    }  # fmt: skip


def _entered(w: Worker, report: int) -> float | None:
    """When rank ``w`` entered its report number ``report`` (1-based), from its last 32;
    before those, the oldest known (it entered it no later)."""
    back = w.reports_entered - report
    if back < 0 or not w.report_times:
        return None
    return w.report_times[max(0, len(w.report_times) - 1 - back)]


def _reports_taken(run: TrainRun) -> int | None:
    current = [a for a in run.attempts if a.attempt_id == run.attempt_id]
    return current[-1].reports_taken if current else None


def controller_stuck(run: TrainRun, t: Thresholds, now: float,
                     limit: StallLimit | None = None) -> list[Finding]:  # fmt: skip
    """The ranks made reports the controller does not take, past the run's ``limit`` (by
    default ``stall_limit``'s; so for every function here that takes one). With the
    RunProbe's count, from the moment every rank had sent the first report the controller
    never took (the ranks go on for a report or two, into Train's queue, before they
    block); without it, every rank inside the same report. Not while an upload is in
    flight (that is ``checkpoint_upload_stuck``)."""
    workers = run.workers
    if len(workers) < max(run.world_size, 1) or any(w.done for w in workers):
        return []
    if any(c.state == "uploading" for c in run.checkpoints):
        return []
    taken = _reports_taken(run)
    lowest = min(w.reports_entered for w in workers)
    if taken is not None and lowest > taken:
        first_untaken = taken + 1
        times = [_entered(w, first_untaken) for w in workers]
        if any(x is None for x in times):
            return []
        sent = max(times)  # every rank had sent it by then
        told = f"the controller has taken {taken} report(s); every rank has made {lowest}"
    elif all(w.in_report for w in workers) and len({w.reports_entered for w in workers}) == 1:
        sent = max(w.last_enter_at or 0.0 for w in workers)
        told = f"every rank ({len(workers)}) arrived at report {lowest} and none has returned"
    else:
        return []
    limit = limit or stall_limit(run, t)
    waited = now - sent
    if not sent or waited <= limit.seconds:
        return []
    return [Finding(
        "controller_stuck", Severity.ERROR, f"run {run.run_name} attempt {run.attempt_index}",
        f"{told}, for {waited:.0f}s (past {limit.why}): the Train controller is not taking "
        "the ranks' reports (a metric whose loading does not end, or the controller is stuck)",
        _evidence(run, now, reports_taken=taken, reports_made=lowest, waited_s=waited,
                  threshold_s=limit.seconds),
        **of_attempt(run), waited_s=waited,
    )]  # fmt: skip


def upload_stuck(run: TrainRun, t: Thresholds, now: float,
                 limit: StallLimit | None = None) -> list[Finding]:  # fmt: skip
    """A checkpoint uploading for longer than ``k ×`` its bytes at the run's usual
    throughput (or 10 MB/s before one is known), and than the run's stall threshold."""
    speeds = [c.throughput_bps for c in run.checkpoints
              if c.state != "uploading" and c.throughput_bps]  # fmt: skip
    usual = statistics.median(speeds) if speeds else None
    limit = limit or stall_limit(run, t)
    findings = []
    for c in run.checkpoints:
        if c.state != "uploading" or c.uploading_since is None:
            continue
        elapsed = now - c.uploading_since
        expected = c.bytes / (usual or ASSUMED_MIN_THROUGHPUT_BPS) if c.bytes else 0.0
        if elapsed <= max(limit.seconds, t.stall_factor * expected):
            continue
        pace = (f"the run's usual {usual / 1e6:.2f} MB/s would take {expected:.1f}s" if usual
                else f"no upload of this run has finished yet; past {limit.why}")  # fmt: skip
        ranks = sorted(r for r, (_, end) in c.rank_uploads.items() if end is None)
        findings.append(Finding(
            "checkpoint_upload_stuck", Severity.ERROR, f"run {run.run_name}",
            f"{c.dir_name} ({c.bytes} bytes, {c.mode or '?'}"
            f"{', custom upload function' if c.custom_upload else ''}) has been uploading "
            f"for {elapsed:.0f}s on {_ranks_of(ranks)}: {pace}",
            _evidence(run, now, dir_name=c.dir_name, bytes=c.bytes, uploading_s=elapsed,
                      usual_throughput_bps=usual, uploading_ranks=ranks),
            **of_attempt(run), ranks=tuple(ranks),
        ))  # fmt: skip
    return findings


def _ranks_of(ranks: list[int]) -> str:
    if not ranks:
        return "its ranks"
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def below_report_hang(run: TrainRun, t: Thresholds, now: float,
                      limit: StallLimit | None = None) -> list[Finding]:  # fmt: skip
    """No report entered or left past the threshold while no rank is inside one: where the
    ranks are says which hang it is, and who holds it up. Only once the threshold is
    learned (or fixed by ``--stall-after``): before a run has two report intervals, a long
    first epoch is no evidence of a hang."""
    if any(w.in_report for w in run.workers) or not run.workers:
        return []
    if any(w.done for w in run.workers):
        return []
    limit = limit or stall_limit(run, t)
    if t.learn_stall and limit.intervals < 2:
        return []
    progress = last_progress(run)
    if progress is None or now - progress <= limit.seconds:
        return []
    sampled = [w for w in run.workers if w.activity]
    if not sampled:
        return []  # no evidence of where: the silent-rank finding speaks for it
    stuck_s = now - progress
    waiting = [w for w in sampled if w.activity.kind in WAITING]
    # By identity: a Worker compares field by field, and 2,000 ranks each looked up in a
    # list of 2,000 took seconds.
    waiting_ids = {id(w) for w in waiting}
    holding = [w for w in run.workers if id(w) not in waiting_ids]
    kinds = {w.activity.kind for w in holding if w.activity}
    if "data_loader" in kinds:
        kind, what = "data_loader_hang", "the data loader"
        culprits = [w for w in holding if w.activity and w.activity.kind == "data_loader"]
    elif "io" in kinds:
        kind, what = "io_hang", "I/O"
        culprits = [w for w in holding if w.activity and w.activity.kind == "io"]
    elif waiting:
        kind, what, culprits = "collective_hang", "a collective", holding
    else:
        kind, what, culprits = "compute_hang", "the train loop's own code", holding
    if kind == "collective_hang" and not holding:
        verdict = ("every rank waits in the collective: it does not complete (mismatched "
                   "calls between ranks, or the network)")  # fmt: skip
    elif kind == "collective_hang":
        verdict = f"{_ranks(culprits)} {'has' if len(culprits) == 1 else 'have'} not joined it"
    else:
        verdict = f"{_ranks(culprits)} {'is' if len(culprits) == 1 else 'are'} stuck in {what}"
    holding, waiting_ranks = sorted(w.rank for w in culprits), sorted(w.rank for w in waiting)
    return [Finding(
        kind, Severity.ERROR, f"run {run.run_name} attempt {run.attempt_index}",
        f"no report for {stuck_s:.0f}s (past {limit.why}): {_where(list(run.workers), now)}: "
        f"{verdict}",
        _evidence(run, now, stuck_s=stuck_s, threshold_s=limit.seconds,
                  holding_ranks=holding, waiting_ranks=waiting_ranks),
        **of_attempt(run), ranks=tuple(holding), waiting_ranks=tuple(waiting_ranks),
    )]  # fmt: skip


def _work(w: Worker, now: float) -> tuple[float, int] | None:
    """(share of its time the rank works rather than waits, how much evidence): from its
    stack samples, else from its reports (time outside ``report``, a barrier)."""
    if w.activity and w.activity.samples >= STRAGGLER_MIN_SAMPLES:
        return 1.0 - w.activity.waiting, w.activity.samples
    pairs = [(a, b) for a, b in zip(w.report_times, w.report_exits, strict=False) if b]
    if len(pairs) < STRAGGLER_MIN_REPORTS:
        return None
    span = now - pairs[0][0]
    inside = sum(b - a for a, b in pairs)
    return (max(0.0, 1.0 - inside / span), len(pairs)) if span > 0 else None


def median_without(ordered: Sequence[float], i: int) -> float:
    """``statistics.median`` of the sorted ``ordered`` less its element ``i``, in O(1): a
    rank's peers are every rank but itself, and 2,000 ranks each taking the median of the
    other 1,999 cost ~100 ms a refresh."""
    n = len(ordered) - 1

    def at(k: int) -> float:
        return ordered[k if k < i else k + 1]

    if n % 2:
        return at(n // 2)
    return (at(n // 2 - 1) + at(n // 2)) / 2


def stragglers(run: TrainRun, t: Thresholds, now: float) -> list[Finding]:
    """A rank whose working share is ``STRAGGLER_SCORE`` times its peers' median: it
    works while they wait for it each step. A warning: the run advances, slowly."""
    if len(run.workers) < 2 or any(w.done for w in run.workers):
        return []
    work = {w.rank: _work(w, now) for w in run.workers}
    if any(v is None for v in work.values()):
        return []
    findings = []
    shares = sorted(s for s, _ in work.values())
    # The lowest of the peers' medians is the one without the largest share: a rank
    # whose share is under STRAGGLER_SCORE times it is under its own peers' too, and is
    # passed without its median (at 2,000 ranks, each one's was ~2 ms a judgement).
    lowest = median_without(shares, len(shares) - 1)
    for rank, (share, evidence) in work.items():
        if share < 0.2 or (lowest > 0 and share < STRAGGLER_SCORE * lowest):
            continue
        median = median_without(shares, bisect.bisect_left(shares, share))
        score = share / median if median > 0 else (float("inf") if share > 0.2 else 0.0)
        if score < STRAGGLER_SCORE:
            continue
        shown = f"{score:.1f}×" if score != float("inf") else "far more than"
        findings.append(Finding(
            "straggler", Severity.WARNING, f"run {run.run_name} attempt {run.attempt_index}",
            f"rank {rank} is a straggler: it works {share:.0%} of the time, {shown} its "
            f"peers' {median:.0%}, who wait for it every step (slow node, CPU contention, "
            "or more data on this rank); not a hang",
            _evidence(run, now, rank=rank, score=None if score == float("inf") else score,
                      work_share=share, peers_work_share=median, evidence_points=evidence),
            **of_attempt(run), ranks=(rank,),
        ))  # fmt: skip
    return findings


def hang_findings(run: TrainRun, t: Thresholds, now: float,
                  limit: StallLimit | None = None) -> list[Finding]:  # fmt: skip
    """Every hang class of one running attempt (``diagnose.ledger`` has the barrier)."""
    limit = limit or stall_limit(run, t)
    hung = controller_stuck(run, t, now, limit) + upload_stuck(run, t, now, limit)
    hung += below_report_hang(run, t, now, limit)
    return hung or stragglers(run, t, now)
