"""The one list of everything that runs (``Snapshot.workloads``), derived once here.

Rows: every experiment of the snapshot (raytop's, and Tune's it did not launch), every
Train run of no experiment, and every job running neither that is live or ended within
``RECENT_JOB_S`` (a plain Ray script; one stopped a minute ago shows how it ended). Live
rows first. Each says where it comes from: raytop, or its job (``Job.label``: "Ray job
<submission id>: <command>", "driver script: <command>"), its status, how it ended, and
the CPU and GPU its placement groups hold now.

Which groups are whose: a Train run's own group (the ledger's, or the one its controller
created); every other group by the job that created it: an experiment's driver job (raytop
records it, ``pipeline.foreign`` finds a foreign one's), else the job's own row. A Train
run's job: its group's creator job (remembered once Ray removed the group), or its
controller actor's, or its workers' actors' (by pid).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raytop.model import Experiment, ExperimentStatus, PlacementGroup, TrainRun
from raytop.model.format import plural
from raytop.model.identity import same_items
from raytop.model.jobs import Job
from raytop.model.workloads import (
    ENDED,
    FINISHED,
    KIND_EXPERIMENT,
    KIND_JOB,
    KIND_TRAIN_RUN,
    ORIGIN_DRIVER,
    ORIGIN_RAY_JOB,
    ORIGIN_RAYTOP,
    ORIGIN_UNKNOWN,
    RUNNING,
    Workload,
)

# No job of this cluster is known to run it: none ran it, or the evidence names none for
# sure (jobs submitted together, ``model.jobs.driver_of``).
NO_JOB_KNOWN = "its job not known"
RECENT_JOB_S = 600.0  # an ended job of no other row is listed this long after it ended
MAX_JOB_ROWS = 50  # job rows at most, live first then the latest ended
RANKS_GONE = "its ranks stopped beating"  # how a run with no known job ended
ACTOR_RUN_PREFIX = "actor-"  # pipeline.uninstrumented: a run known from its controller
LIVE_STATUSES = frozenset({ExperimentStatus.RUNNING, ExperimentStatus.STARTING})
_KIND_ORDER = {KIND_EXPERIMENT: 0, KIND_TRAIN_RUN: 1, KIND_JOB: 2}


@dataclass
class RunJobs:
    """Each Train run's job, remembered by run id: its group (and the actors that told
    which job it is) are gone once it ended, and how its job ended is still wanted."""

    known: dict[str, str] = field(default_factory=dict)

    def update(self, runs: tuple[TrainRun, ...], creators: Mapping[str, tuple[str, str]],
               actors: Mapping[str, dict[str, Any]]) -> dict[str, str]:  # fmt: skip
        """The job of each of ``runs`` that can be told (run id → job id); runs not among
        ``runs`` are forgotten."""
        by_pid = {(a["node_id"], a["pid"]): a["job_id"] for a in actors.values()}
        found: dict[str, str] = {}
        for run in runs:
            job = self.known.get(run.run_id) or _job_of_run(run, creators, actors, by_pid)
            if job:
                found[run.run_id] = job
        self.known = found
        return found


def _job_of_run(run, creators, actors, by_pid) -> str | None:
    if run.placement_group_id and run.placement_group_id in creators:
        return creators[run.placement_group_id][0]
    if run.run_id.startswith(ACTOR_RUN_PREFIX):
        controller = actors.get(run.run_id[len(ACTOR_RUN_PREFIX) :])
        if controller is not None:
            return controller["job_id"]
    jobs = {by_pid.get((w.node_id, w.pid)) for w in run.workers} - {None}
    return jobs.pop() if len(jobs) == 1 else None


@dataclass(frozen=True)
class Holdings:
    """CPU and GPU held (placed groups) and groups waiting, of one row."""

    cpu: float = 0.0
    gpu: float = 0.0
    waiting: int = 0


def _holdings(groups: Iterable[tuple[str, PlacementGroup]]) -> dict[str, Holdings]:
    """Each key's CPU and GPU held and groups waiting, over its (key, group) pairs: summed
    in place (2,000 groups a refresh made as many ``Holdings`` one by one: ~4 ms)."""
    totals: dict[str, list[float]] = {}
    for key, g in groups:
        total = totals.setdefault(key, [0.0, 0.0, 0])
        if not g.placed:
            total[2] += 1
            continue
        total[0] += sum(b.resources.get("CPU", 0.0) for b in g.bundles)
        total[1] += sum(b.resources.get("GPU", 0.0) for b in g.bundles)
    return {key: Holdings(cpu, gpu, int(waiting)) for key, (cpu, gpu, waiting) in totals.items()}


Held = tuple[dict[str, Holdings], dict[str, Holdings]]  # by run id, by job id


class KeptHoldings:
    """What each run's and each job's groups hold (``_holdings``), kept while the groups,
    their creators and the runs are the very same objects and each run's job and each
    experiment's job are the same: 2,000 groups told apart and summed again at every
    refresh were ~3 ms of one in which nothing changed (docs/PERFORMANCE.md, issue 25)."""

    def __init__(self) -> None:
        self._basis: tuple = ()
        self._made: Held | None = None

    def of(self, groups: Sequence[PlacementGroup], creators: Mapping[str, tuple[str, str]],
           runs: Sequence[TrainRun], run_jobs: Mapping[str, str],
           exp_of_job: Mapping[str, str]) -> Held:  # fmt: skip
        """(run id → its holdings, job id → its holdings): ``workloads``'s sums."""
        basis = self._basis
        if (
            self._made is not None
            and basis[0] is groups
            and basis[1] is creators
            and same_items(basis[2], runs)
            and basis[3] == run_jobs
            and basis[4] == exp_of_job
        ):
            return self._made
        self._made = _held(groups, creators, runs, run_jobs, exp_of_job)
        self._basis = (groups, creators, runs, dict(run_jobs), exp_of_job)
        return self._made


def _held(groups: Sequence[PlacementGroup], creators: Mapping[str, tuple[str, str]],
          runs: Sequence[TrainRun], run_jobs: Mapping[str, str],
          exp_of_job: Mapping[str, str]) -> Held:  # fmt: skip
    """Each group counted to its Train run (one of no experiment's job) or to its creator
    job (module docstring)."""
    group_of_run = {r.placement_group_id: r.run_id for r in runs if r.placement_group_id}
    controller_run = {r.run_id[len(ACTOR_RUN_PREFIX):]: r.run_id for r in runs
                      if r.run_id.startswith(ACTOR_RUN_PREFIX)}  # fmt: skip
    of_runs: list[tuple[str, PlacementGroup]] = []
    of_jobs: list[tuple[str, PlacementGroup]] = []
    for g in groups:
        job_id, actor_id = creators.get(g.pg_id, ("", ""))
        run_id = group_of_run.get(g.pg_id) or controller_run.get(actor_id)
        if run_id is not None and exp_of_job.get(run_jobs.get(run_id, "")) is None:
            of_runs.append((run_id, g))
        else:
            of_jobs.append((job_id, g))
    return _holdings(of_runs), _holdings(of_jobs)


def _origin(job: Job | None, raytop: bool) -> tuple[str, str]:
    if raytop:
        return ORIGIN_RAYTOP, "raytop"
    if job is None:
        return ORIGIN_UNKNOWN, NO_JOB_KNOWN
    return (ORIGIN_RAY_JOB if job.submission_id else ORIGIN_DRIVER), job.label


def _trial_summary(exp: Experiment, resumable: int, counts: Mapping[str, int]) -> str:
    if not exp.trials:
        return "no trial yet"
    if resumable:
        return f"{resumable} of {plural(len(exp.trials), 'trial')} could resume"
    parts = [f"{n} {s.lower()}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return f"{plural(len(exp.trials), 'trial')}: {', '.join(parts)}"


def _job_fields(job: Job | None) -> dict[str, Any]:
    if job is None:
        return {}
    return {"job_id": job.job_id, "submission_id": job.submission_id,
            "entrypoint": job.entrypoint or None}  # fmt: skip


def workloads(
    experiments: Sequence[tuple[Experiment, bool, str | None]],
    runs: tuple[TrainRun, ...],
    run_jobs: Mapping[str, str],
    jobs: tuple[Job, ...],
    groups: tuple[PlacementGroup, ...],
    creators: Mapping[str, tuple[str, str]],
    now: float,
    counts: Callable[[Experiment], Mapping[str, int]] = Experiment.status_counts,
    held: KeptHoldings | None = None,
) -> tuple[Workload, ...]:
    """The rows, live first. ``experiments``: each with whether raytop launched it and
    how its driver ended (a foreign one's, ``pipeline.foreign``); ``runs``: the Train
    runs of no experiment; ``run_jobs``: their jobs (``RunJobs``); ``creators``: every
    group's (creator job, creator actor). ``counts`` and ``held``: a caller's that keep
    each experiment's counts by status and the groups' holdings."""
    by_id = {j.job_id: j for j in jobs if j.job_id}  # not the jobs that never connected
    exp_of_job = {e.job_id: e.path for e, _, _ in experiments if e.job_id}
    sums = held.of if held is not None else _held
    run_holdings, job_holdings = sums(groups, creators, runs, run_jobs, exp_of_job)
    rows = [
        _experiment_row(e, raytop, how, by_id, job_holdings, counts)
        for e, raytop, how in experiments
    ]
    claimed = set(exp_of_job)
    for run in runs:
        job = by_id.get(run_jobs.get(run.run_id, ""))
        if job is not None and job.job_id in exp_of_job:
            continue  # a Train run of a foreign experiment's trial: that row holds it
        rows.append(_run_row(run, job, run_holdings.get(run.run_id, Holdings())))
        if job is not None:
            claimed.add(job.job_id)
    rows += _job_rows([j for j in jobs if j.job_id not in claimed], job_holdings, now)
    rows.sort(key=lambda w: (not w.live, _KIND_ORDER[w.kind], w.origin != ORIGIN_RAYTOP))
    return tuple(rows)


def _experiment_row(exp: Experiment, raytop: bool, how: str | None, jobs: Mapping[str, Job],
                    held: Mapping[str, Holdings],
                    counts: Callable[[Experiment], Mapping[str, int]]) -> Workload:  # fmt: skip
    job = jobs.get(exp.job_id or "")
    origin, label = _origin(job, raytop)
    gone = exp.status == ExperimentStatus.INTERRUPTED
    resumable = sum(1 for t in exp.trials if not t.ended) if gone else 0
    holding = held.get(exp.job_id or "", Holdings()) if exp.job_id else Holdings()
    return Workload(
        kind=KIND_EXPERIMENT, key=exp.path, name=exp.name, origin=origin, origin_label=label,
        status=str(exp.status), live=exp.status in LIVE_STATUSES,
        how_ended=how if how is not None else ("driver gone" if gone else None),
        summary=_trial_summary(exp, resumable, counts(exp)), cpu=holding.cpu, gpu=holding.gpu,
        waiting=holding.waiting, resumable=resumable, **_job_fields(job),
    )  # fmt: skip


def _run_row(run: TrainRun, job: Job | None, held: Holdings) -> Workload:
    origin, label = _origin(job, raytop=False)
    ranks = run.workers
    if run.finished:
        status, how = FINISHED, None
    elif job is not None and job.ended:
        status, how = ENDED, job.how_ended
    elif ranks and all(w.state == "dead" for w in ranks):
        status, how = ENDED, RANKS_GONE
    else:
        status, how = RUNNING, None
    summary = plural(run.world_size or len(ranks), "rank")
    if not run.instrumented:
        summary += f" ({run.no_probe.short if run.no_probe else 'no probe'})"
    return Workload(
        kind=KIND_TRAIN_RUN, key=run.run_id, name=run.run_name, origin=origin,
        origin_label=label, status=status, live=status == RUNNING, how_ended=how,
        summary=summary, cpu=held.cpu, gpu=held.gpu, waiting=held.waiting, **_job_fields(job),
    )  # fmt: skip


def _job_rows(jobs: list[Job], held: Mapping[str, Holdings], now: float) -> list[Workload]:
    shown = [j for j in jobs if not j.ended or (j.end_time or now) >= now - RECENT_JOB_S]
    shown.sort(key=lambda j: (j.ended, -(j.end_time or j.start_time or 0.0)))
    rows = []
    for job in shown[:MAX_JOB_ROWS]:
        holding = held.get(job.job_id, Holdings())
        origin, label = _origin(job, raytop=False)
        rows.append(Workload(
            kind=KIND_JOB, key=job.job_id or job.submission_id or "",
            name=job.submission_id or f"job {job.job_id}",
            origin=origin, origin_label=label, status=ENDED if job.ended else RUNNING,
            live=not job.ended, how_ended=job.how_ended,
            summary=f"driver pid {job.driver_pid}" if job.driver_pid else "",
            cpu=holding.cpu, gpu=holding.gpu, waiting=holding.waiting, **_job_fields(job),
        ))  # fmt: skip
    return rows
