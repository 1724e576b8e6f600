"""The findings of the foundation: a lost cluster, a metric never reported, errored
trials, a driver that exited with work unfinished; and ``diagnose``, which gathers every
module's findings about a snapshot and folds the repeats (``diagnose.repeats``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from raytop.diagnose.checkpoints import checkpoint_findings
from raytop.diagnose.hang import StallLimit, hang_findings, stall_limit
from raytop.diagnose.ledger import lost_ranks, run_findings
from raytop.diagnose.placement import placement_findings
from raytop.diagnose.ray_hang import ray_hang_findings
from raytop.diagnose.repeats import fold
from raytop.diagnose.retries import attempt_findings
from raytop.diagnose.time_sinks import slow_rank_findings, time_sink_findings
from raytop.model import (
    Cluster,
    Experiment,
    ExperimentStatus,
    Finding,
    LedgerStatus,
    Node,
    PlacementGroup,
    Severity,
    Snapshot,
    TrainRun,
)
from raytop.model.thresholds import Thresholds


def cluster_findings(cluster: Cluster) -> list[Finding]:
    if cluster.connected or cluster.history_only:  # no cluster asked for: history, no fault
        return []
    return [
        Finding(
            kind="cluster_unreachable",
            severity=Severity.ERROR,
            subject=f"cluster {cluster.address or '(none)'}",
            message=cluster.error or "no Ray cluster reachable",
            evidence={"address": cluster.address},
        )
    ]


def metric_findings(experiment: Experiment) -> list[Finding]:
    """The ``[tune] metric`` must appear in what trials report; say so on the first
    result without it, with what was reported instead."""
    metric = experiment.metric
    if not metric:
        return []
    missing = [t for t in experiment.trials if t.iterations > 0 and metric not in t.metrics]
    if not missing:
        return []
    reported = sorted({k for t in missing for k in t.metrics if k != "training_iteration"})
    ids = [t.trial_id for t in missing]
    return [
        Finding(
            kind="metric_missing",
            severity=Severity.ERROR,
            subject=f"experiment {experiment.name}",
            message=(
                f"metric '{metric}' named in [tune] was never reported by "
                f"{len(ids)} trial(s) ({', '.join(ids[:3])}{'…' if len(ids) > 3 else ''}); "
                f"they report: {', '.join(reported) or 'nothing'}"
            ),
            evidence={"metric": metric, "trials": ids, "reported": reported},
        )
    ]


def trial_error_findings(experiment: Experiment) -> list[Finding]:
    return [
        Finding(
            kind="trial_error",
            severity=Severity.ERROR,
            subject=f"trial {t.trial_id}",
            message=f"errored after {t.num_failures} failure(s): {t.error or 'see its error.txt'}",
            evidence={"experiment": experiment.name, "num_failures": t.num_failures},
            trial_id=t.trial_id,
        )
        for t in experiment.trials
        if t.status == "ERROR"
    ]


def driver_findings(experiment: Experiment) -> list[Finding]:
    if experiment.status != ExperimentStatus.INTERRUPTED:
        return []
    unfinished = [t.trial_id for t in experiment.trials if not t.ended]
    return [
        Finding(
            kind="driver_exited",
            severity=Severity.WARNING,
            subject=f"experiment {experiment.name}",
            message=(
                f"the Tune driver (pid {experiment.driver_pid}) is gone with "
                f"{len(unfinished)} trial(s) unfinished; the experiment can be resumed"
            ),
            evidence={"driver_pid": experiment.driver_pid, "unfinished": unfinished},
        )
    ]


def ledger_findings(ledger: LedgerStatus | None, has_runs: bool) -> list[Finding]:
    if ledger is None:
        return []
    findings = []
    if has_runs and not ledger.available:
        findings.append(
            Finding(
                kind="ledger_unavailable",
                severity=Severity.WARNING,
                subject="report ledger",
                message=ledger.error or "the report ledger is not publishing",
                evidence={"published_at": ledger.published_at},
            )
        )
    if ledger.restarted_at is not None:
        findings.append(
            Finding(
                kind="ledger_restarted",
                severity=Severity.INFO,
                subject="report ledger",
                message=(
                    f"the report ledger was recreated after a gap of {ledger.gap_s:.0f}s; "
                    "the probes resent their counts"
                ),
                evidence={"restarted_at": ledger.restarted_at, "gap_s": ledger.gap_s},
            )
        )
    return findings


@dataclass(frozen=True)
class RunContext:
    """What a run's judgement needs beside the run: whether its trial ended (then it is
    over, whatever its ranks last said), whether the ledger is publishing (its counts
    judged at all), when what it holds is known true, and the dead nodes; and when the
    snapshot was taken (the wall clock: a caller keeping a run's waits keeps them within
    its second, ``model.refresh``)."""

    ended: bool
    ledger_available: bool
    known_at: float
    dead_nodes: frozenset[str]
    taken_at: float
    # The run's stall limit when a caller kept it (``stall_limit`` is a function of the
    # ranks' report histories alone); None: made here.
    stall: StallLimit | None = None


# Its checkpoints', its attempts' and its ranks' findings, apart: ``diagnose`` lists each
# kind for every run in turn.
RunFindings = tuple[list[Finding], list[Finding], list[Finding]]
RunJudge = Callable[[TrainRun, Thresholds, RunContext], RunFindings]
# An experiment's findings about its trials, and the ids of those that ended: each a walk
# over every trial (10,000 in the benchmark), so a caller may keep them while the trials
# are the very same tuple (``pipeline.kept_trials``).
TrialsFindings = tuple[list[Finding], frozenset[str]]
TrialsJudge = Callable[[Experiment], TrialsFindings]
GroupsJudge = Callable[[tuple[PlacementGroup, ...], tuple[Node, ...], float], list[Finding]]


def trial_findings(experiment: Experiment) -> TrialsFindings:
    """The metric never reported and the errored trials (``metric_findings``,
    ``trial_error_findings``), and the ids of the trials that ended."""
    findings = metric_findings(experiment) + trial_error_findings(experiment)
    return findings, frozenset(t.trial_id for t in experiment.trials if t.ended)


def judge_run(run: TrainRun, thresholds: Thresholds, context: RunContext) -> RunFindings:
    """Every finding about one instrumented run: a function of the run and ``context``
    alone, so that a caller may keep it while both are the same (``pipeline.kept_runs``):
    the part the clock cannot move (``steady_findings``) while the run is the same, the
    rest (``timed_findings``) within the same second of ``context.taken_at`` too."""
    checkpoints, attempts, sinks = steady_findings(run, thresholds, context)
    return checkpoints, attempts, timed_findings(run, thresholds, context) + sinks


def steady_findings(run: TrainRun, thresholds: Thresholds, context: RunContext) -> RunFindings:
    """What the run alone says, whatever the time: its checkpoints', its attempts' and its
    ranks' time sinks (each a function of what the run carries)."""
    checkpoints = checkpoint_findings(run, thresholds.checkpoint_slow_after_s)
    attempts = attempt_findings(run, context.ended)
    sinks: list[Finding] = []
    if context.ledger_available and not context.ended and not run.over:
        sinks = time_sink_findings(run) + slow_rank_findings(run)
    return checkpoints, attempts, sinks


def timed_findings(run: TrainRun, thresholds: Thresholds, context: RunContext) -> list[Finding]:
    """Its ranks' waits, silences and hangs as of ``context.known_at``: each says how long,
    and crosses its threshold with the clock."""
    if not context.ledger_available:
        return []
    if context.ended or run.over:
        return ray_hang_findings(run, [], thresholds, over=True)
    limit = context.stall or stall_limit(run, thresholds)  # the run's own, made once
    ranks = run_findings(run, thresholds, context.known_at, context.dead_nodes, limit)
    if not lost_ranks(run, context.dead_nodes):  # a lost rank explains every wait
        ranks += hang_findings(run, thresholds, context.known_at, limit)
    return ranks + ray_hang_findings(run, ranks, thresholds, over=False, limit=limit)


def diagnose(
    snapshot: Snapshot,
    thresholds: Thresholds | None = None,
    judge: RunJudge = judge_run,
    judge_groups: GroupsJudge = placement_findings,
    judge_trials: TrialsJudge = trial_findings,
) -> tuple[Finding, ...]:
    """Every finding about a snapshot (its own ``findings`` are ignored), the repeats of
    one kind on one subject folded into one with their count. Its runs' rank facts are the
    pipeline's (``pipeline.derive``): judged here, never worked out again. ``judge``,
    ``judge_groups`` and ``judge_trials``: how each run, the placement groups and each
    experiment's trials are judged (``judge_run``, ``placement_findings``,
    ``trial_findings``, or a caller's that keeps their results)."""
    thresholds = thresholds or Thresholds()
    findings = cluster_findings(snapshot.cluster)
    ended: list[frozenset[str]] = []  # each experiment's trials that ended: a run whose
    for experiment in snapshot.experiments:  # trial ended is over, whatever its ranks said
        about_trials, ended_here = judge_trials(experiment)
        findings += about_trials
        findings += driver_findings(experiment)
        ended.append(ended_here)
    # Runs with no probe have no counts to judge: a rank of theirs is never "silent".
    runs = tuple(r for r in snapshot.all_runs() if r.instrumented)
    findings += judge_groups(
        snapshot.placement_groups, snapshot.cluster.nodes, thresholds.waiting_after_s
    )
    findings += ledger_findings(snapshot.ledger, bool(runs))
    ledger = snapshot.ledger
    available = ledger is not None and ledger.available
    known_at = snapshot.ages_at
    dead_nodes = frozenset(n.node_id for n in snapshot.cluster.nodes if not n.alive)

    def context(run: TrainRun) -> RunContext:
        over = any(run.trial_id in e for e in ended)
        return RunContext(over, available, known_at, dead_nodes, snapshot.taken_at)

    judged = [judge(run, thresholds, context(run)) for run in runs]
    for part in range(3):  # every run's checkpoints, then attempts, then ranks
        for each in judged:
            findings += each[part]
    return tuple(fold(findings))
