"""Where a run's time goes, judged: a finding when one kind of waiting takes most of its
ranks' time (``TrainRun.time_shares``, over the attempt), with its cause in words as far
as the shares show it; and a rank slower at the same work than its peers (its optimizer
step rate against theirs). Information, not an alarm (``check`` exits 0 on it): the run
progresses, and code written the way Ray's examples write it may well spend its time in
``train.report``; what the user learns is where the time went and what would change it.
"""

from __future__ import annotations

from raytop.diagnose.hang import median_without
from raytop.diagnose.refs import of_attempt
from raytop.model import Finding, Severity, TrainRun, Worker
from raytop.model.time_shares import REPORT_PARTS, report_share

DOMINANT = 0.5  # a share of the ranks' time that is "most of it"
JUDGED_S = 20.0  # seconds sampled per rank before the shares are judged


def time_sink_findings(run: TrainRun) -> list[Finding]:
    """At most one finding: the waiting kind that takes ``DOMINANT`` of the time, if any."""
    shares = run.time_shares
    ranks = max(len(run.workers), 1)
    if shares is None or run.time_sampled_s / ranks < JUDGED_S:
        return []
    groups = {
        "report": report_share(shares),
        "data_loader": shares["data_loader"],
        "collective": shares["collective"],
        "io": shares["io"],
    }
    kind, share = max(groups.items(), key=lambda item: item[1])
    if share < DOMINANT:
        return []
    pct = f"{share:.0%}"
    if kind == "report":
        message = f"{pct} of the ranks' time is in train.report" + _report_cause(run, shares)
    elif kind == "data_loader":
        message = (f"data loading takes {pct} of the ranks' time: they wait for their next "
                   "batch (more DataLoader workers, or prefetching, would feed them)")  # fmt: skip
    elif kind == "collective":
        message = (f"collectives take {pct} of the ranks' time: they wait for each other "
                   "(a slower rank, or the network between them)")  # fmt: skip
    else:
        message = f"I/O outside train.report takes {pct} of the ranks' time"
    evidence = {
        "shares": dict(shares), "kind": kind, "share": round(share, 4),
        "sampled_s": run.time_sampled_s, "controller_poll_s": run.controller_poll_s,
    }  # fmt: skip
    return [Finding("time_sink", Severity.INFO,
                    f"run {run.run_name} attempt {run.attempt_index}", message, evidence,
                    **of_attempt(run))]  # fmt: skip


def _report_cause(run: TrainRun, shares: dict[str, float]) -> str:
    """The part of report that takes most of it, in words ("" when none is known)."""
    part = max(REPORT_PARTS, key=lambda p: shares.get(p, 0.0))
    if part == "report_wait":
        poll = f" (it polls every {run.controller_poll_s:.1f} s)" if run.controller_poll_s else ""
        return (
            f": each result waits for Train's controller to take the one before{poll}"
            " — report less often"
        )
    if part == "report_barrier":
        return ": the ranks wait at its barrier for the last rank to reach the same report"
    if part == "report_upload":
        return (
            ": its checkpoint uploads take that time — checkpoint less often, or "
            "upload asynchronously (checkpoint_upload_mode=ASYNC)"
        )
    return ""


SLOWER = 0.67  # a rank at this share of its peers' median step rate, or less, is slow
SAME_MIX = 0.1  # compute shares this close: the same mix of work


def slow_rank_findings(run: TrainRun) -> list[Finding]:
    """A rank whose optimizer steps come at ``SLOWER`` × its peers' median rate or less,
    with the same mix of work as theirs (its compute share within ``SAME_MIX`` of their
    median): it is slower at the same work, not waiting for anything. (A rank that works
    while its peers wait for it is the ``straggler``: there the shares differ.) Lockstep
    training (DDP) steps every rank at one pace: this needs ranks that step on their own."""
    rated = [w for w in run.workers if w.step_rate is not None and not w.done]
    if len(rated) < 2 or len(rated) < len(run.workers):
        return []
    computes = [_compute(w) for w in rated]
    if any(c is None for c in computes):
        return []
    # Each rank's peers are every other rank: their medians are read off one sorted list
    # (``median_without``), not re-sorted per rank (2,000 ranks: seconds, not ms).
    rates = [w.step_rate or 0.0 for w in rated]
    rate_order, rate_place = _ranked(rates)
    mix_order, mix_place = _ranked(computes)
    findings = []
    for i, w in enumerate(rated):
        pace = median_without(rate_order, rate_place[i])
        mine, usual = computes[i], median_without(mix_order, mix_place[i])
        if pace <= 0 or rates[i] > SLOWER * pace or abs(mine - usual) > SAME_MIX:
            continue
        findings.append(Finding(
            "slow_rank", Severity.WARNING, f"run {run.run_name} attempt {run.attempt_index}",
            f"rank {w.rank} makes {w.step_rate:.2f} optimizer steps/s, its peers "
            f"{pace:.2f}, with the same mix of work (compute {mine:.0%}, theirs {usual:.0%}):"
            " a slower node or GPU, or CPU contention on its node",
            {"rank": w.rank, "step_rate": w.step_rate, "peers_step_rate": pace,
             "compute_share": mine, "peers_compute_share": usual},
            **of_attempt(run), ranks=(w.rank,),
        ))  # fmt: skip
    return findings


def _ranked(values: list[float]) -> tuple[list[float], list[int]]:
    """``values`` sorted, and where each of them stands in that order."""
    order = sorted(range(len(values)), key=values.__getitem__)
    place = [0] * len(values)
    for at, i in enumerate(order):
        place[i] = at
    return [values[i] for i in order], place


def _compute(w: Worker) -> float | None:
    shares = w.recent_time_shares or w.time_shares
    return shares["compute"] if shares else None


__all__ = ["DOMINANT", "JUDGED_S", "SAME_MIX", "SLOWER", "slow_rank_findings",
           "time_sink_findings"]  # fmt: skip
