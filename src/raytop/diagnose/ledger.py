"""Report-ledger diagnosis: barrier stalls, mis-paired reports, silent and dead ranks.

In Ray Train V2 ``ray.train.report`` is a barrier across ranks
(docs/RAY_FACTS.md#report-barrier): a rank inside report n waits until every rank has
entered report n. Entered counts can therefore differ by at most one between ranks, and
"rank r is k reports behind" is the gap to the most advanced rank. Everything here is about
one attempt (one worker group): a restart or an elastic resize starts a new ledger page with
fresh counts.

The rank facts judged here (reports behind, dead, silent, waiting at or holding up the
barrier, the attempt gone) are made once by the pipeline (``pipeline.derive``) and read off
the ``Worker`` and ``TrainRun``: the judgement and the rows a face shows cannot disagree.
"""

from __future__ import annotations

from raytop.diagnose.hang import StallLimit, stall_limit
from raytop.diagnose.refs import of_attempt
from raytop.model import Finding, Severity, TrainRun, Worker
from raytop.model.thresholds import Thresholds
from raytop.model.train_run import BARRIER_HOLDING, BARRIER_WAITING


def _ranks(workers: list[Worker]) -> str:
    ranks = [str(w.rank) for w in workers]
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(ranks)


def _barrier_kind(missing: list[Worker], never_seen: list[int]) -> str:
    """A rank missing from the barrier is a ``barrier_stall``, unless every missing rank
    was sampled in the data loader (``data_loader_hang``) or in I/O (``io_hang``): then
    that is where the run is stuck, and the barrier only shows it."""
    kinds = {w.activity.kind if w.activity else None for w in missing}
    if not never_seen and kinds == {"data_loader"}:
        return "data_loader_hang"
    if not never_seen and kinds == {"io"}:
        return "io_hang"
    return "barrier_stall"


def lost_ranks(run: TrainRun, dead_nodes: frozenset[str]) -> list[Worker]:
    """The attempt's unfinished ranks on a node the cluster reports dead."""
    return [w for w in run.workers if not w.done and w.node_id in dead_nodes]


def _lost_findings(run: TrainRun, lost: list[Worker], evidence_base: dict) -> list[Finding]:
    """A rank whose node died is not stalled and not hung: it is gone, whatever its last
    heartbeat says (its probe died with the node seconds ago). Its peers wait for it until
    Train notices and, per the run's FailureConfig, starts a new attempt or fails the run;
    naming the barrier or a collective here would send the user after the wrong rank."""
    subject = f"run {run.run_name} attempt {run.attempt_index}"
    return [
        Finding(
            kind="rank_dead",
            severity=Severity.ERROR,
            subject=f"{subject} rank {w.rank}",
            message=(
                f"rank {w.rank} (pid {w.pid}) was on node {(w.node_id or '')[:12]}, which the "
                "cluster reports dead; Train retries the worker group if its FailureConfig allows"
            ),
            evidence={
                **evidence_base,
                "rank": w.rank,
                "pid": w.pid,
                "node_id": w.node_id,
                "node_dead": True,
            },  # fmt: skip
            **of_attempt(run),
            ranks=(w.rank,),
        )
        for w in lost
    ]


def run_findings(
    run: TrainRun,
    t: Thresholds,
    now: float,
    dead_nodes: frozenset[str] = frozenset(),
    limit: StallLimit | None = None,
) -> list[Finding]:
    """Barrier stalls, mis-paired reports, dead and silent ranks of one attempt.
    ``dead_nodes`` are the nodes the cluster reports dead: a rank on one is lost, and the
    attempt's waits are the consequence, not a stall. ``now``: the time its ages are said
    as of (``Snapshot.ages_at``). ``limit``: the run's stall limit (by default
    ``hang.stall_limit``'s). ``run`` as the pipeline hands it on, its rank
    facts derived (``pipeline.derive.with_rank_states``)."""
    if run.over or not run.workers:
        return []
    subject = f"run {run.run_name} attempt {run.attempt_index}"
    evidence_base = {"run_id": run.run_id, "run_name": run.run_name,
                     "attempt_id": run.attempt_id, "trial_id": run.trial_id}  # fmt: skip
    lost = lost_ranks(run, dead_nodes)
    if lost:
        return _lost_findings(run, lost, evidence_base)
    findings: list[Finding] = []
    waiting = [w for w in run.workers if w.barrier == BARRIER_WAITING]
    missing = [w for w in run.workers if w.barrier == BARRIER_HOLDING]
    seen = {w.rank for w in run.workers}
    never_seen = [r for r in range(run.world_size) if r not in seen]
    stalled_ranks: set[int] = set()
    if waiting:  # the pipeline marks them only while a rank is missing from the barrier
        top = waiting[0].reports_entered
        since = min(w.last_enter_at or 0.0 for w in waiting)
        waited = max(w.since_report(now) or 0.0 for w in waiting)
        limit = limit or stall_limit(run, t)
        if waited > limit.seconds:
            behind = {w.rank: w.behind for w in missing}
            places = {w.rank: f", in {w.activity.where}" for w in missing if w.activity}
            parts = [f"rank {r} is {k} report{'s' if k > 1 else ''} behind{places.get(r, '')}"
                     for r, k in sorted(behind.items())]  # fmt: skip
            parts += [f"rank {r} never reported" for r in never_seen]
            stalled_ranks = set(behind) | set(never_seen)
            findings.append(
                Finding(
                    kind=_barrier_kind(missing, never_seen),
                    severity=Severity.ERROR,
                    subject=subject,
                    message=(
                        f"{'; '.join(parts)}: {_ranks(waiting)} "
                        f"{'has' if len(waiting) == 1 else 'have'} waited in report {top} "
                        f"for {waited:.0f}s"
                    ),
                    evidence={
                        **evidence_base,
                        "report_index": top,
                        "waiting_ranks": [w.rank for w in waiting],
                        "missing_ranks": sorted(stalled_ranks),
                        "behind_by": {str(r): k for r, k in behind.items()},
                        "waiting_since": since,
                        "waited_s": waited,
                        "threshold_s": limit.seconds,
                        "missing_activity": {
                            str(w.rank): {"kind": w.activity.kind, "where": w.activity.where}
                            for w in missing
                            if w.activity
                        },
                    },
                    **of_attempt(run),
                    ranks=tuple(sorted(stalled_ranks)),
                    waiting_ranks=tuple(w.rank for w in waiting),
                    report_index=top,
                    waited_s=waited,
                )
            )
            finished_early = [w for w in missing if w.done]
            if finished_early:
                findings.append(
                    Finding(
                        kind="report_mispaired",
                        severity=Severity.ERROR,
                        subject=subject,
                        message=(
                            f"{_ranks(finished_early)} finished the train loop after "
                            f"{min(w.reports_entered for w in finished_early)} reports while "
                            f"{_ranks(waiting)} made {top}: a skipped report paired later "
                            "reports with the wrong ones"
                        ),
                        evidence={
                            **evidence_base,
                            "reports": {str(w.rank): w.reports_entered for w in run.workers},
                        },
                        **of_attempt(run),
                        ranks=tuple(sorted(w.rank for w in finished_early)),
                        waiting_ranks=tuple(w.rank for w in waiting),
                    )  # fmt: skip
                )
    for w in run.workers:
        if w.rank in stalled_ranks:
            continue
        if w.state == "dead":
            kind, severity = "rank_dead", Severity.ERROR
            beat_age = w.since_beat(now)
            message = (
                f"rank {w.rank} (pid {w.pid}) sent no heartbeat for "
                f"{beat_age or 0.0:.0f}s; its process is gone or frozen"
            )
            particular = {"pid": w.pid, "heartbeat_age_s": beat_age}
        elif w.silent:
            kind, severity = "rank_silent", Severity.WARNING
            report_age = w.since_report(now)
            message = (
                f"rank {w.rank} is alive but has not reported for "
                f"{report_age or 0.0:.0f}s (usually every {w.usual_interval_s:.1f}s)"
            )
            particular = {
                "last_report_age_s": report_age,
                "usual_interval_s": w.usual_interval_s,
            }
        else:
            continue
        findings.append(
            Finding(
                kind=kind,
                severity=severity,
                subject=f"{subject} rank {w.rank}",
                message=message,
                evidence={**evidence_base, "rank": w.rank, **particular},
                **of_attempt(run),
                ranks=(w.rank,),
            )
        )
    return findings
