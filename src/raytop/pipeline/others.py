"""The runs raytop did not launch, per collection: the cluster's jobs, the driver job of
each Tune experiment raytop did not launch and its status (``pipeline.foreign``), what
names their placement groups (``sources.placement_source.Others``), and the one list of
everything that runs (``pipeline.workloads``).

Only read: the job table and Ray's records of submitted jobs, never a write to the
cluster or to an experiment folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from raytop.model import Experiment, PlacementGroup, TrainRun
from raytop.model.jobs import Job
from raytop.model.paths import is_uri
from raytop.model.workloads import Workload
from raytop.pipeline.foreign import find_driver, trial_actors, with_driver
from raytop.pipeline.workloads import KeptHoldings, RunJobs, workloads
from raytop.sources.jobs import JobsReader
from raytop.sources.placement_source import Others
from raytop.sources.tune_dir import ExperimentReader
from raytop.wire.gcs import ClusterUnreachable, GcsKv


class OtherRuns:
    """One per collector. ``jobs``/``warnings``: the last read's."""

    def __init__(self, kv: GcsKv | None, is_local: Callable[[str], bool]) -> None:
        self._reader = JobsReader(kv) if kv is not None else None
        self._is_local = is_local
        self._run_jobs = RunJobs()
        self._held = KeptHoldings()
        # Each foreign experiment's job as its trials' actors once said it (experiment path
        # → job id): that evidence is gone with the actors, and the time of its start
        # alone cannot tell jobs submitted together apart.
        self._seen_driver: dict[str, str] = {}
        self.jobs: tuple[Job, ...] = ()
        self.known = False  # the job table was read this collection
        self.warnings: list[str] = []

    def read_jobs(self, connected: bool) -> tuple[Job, ...]:
        """The cluster's jobs now (none when it is not connected or does not answer)."""
        self.jobs, self.known, self.warnings = (), False, []
        if self._reader is None or not connected:
            return ()
        try:
            self.jobs = self._reader.read()
        except ClusterUnreachable:
            return ()
        self.known, self.warnings = True, list(self._reader.warnings)
        return self.jobs

    def alive_since(self) -> float | None:
        """The start of the oldest live job (None: none): a live Tune driver's folder
        changed after it."""
        starts = [j.start_time for j in self.jobs if not j.ended and j.start_time is not None]
        return min(starts, default=None)

    def drivers(
        self,
        experiments: list[Experiment],
        readers: Sequence[ExperimentReader],
        actors: Mapping[str, dict[str, Any]],
        now: float,
    ) -> tuple[list[Experiment], list[str | None], Others]:
        """Each experiment raytop did not launch (no raytop dir) with its driver's job and
        status; how each ended (None: it did not, or raytop launched it); what names their
        groups."""
        result: list[Experiment] = []
        how: list[str | None] = []
        trials: dict[str, tuple[str, str]] = {}
        drivers: set[str] = set()
        seen, self._seen_driver = self._seen_driver, {}
        for exp, reader in zip(experiments, readers, strict=True):
            if reader.raytop_dir is not None:
                result.append(exp)
                how.append(None)
                continue
            mine = trial_actors(exp, actors)
            trials.update({a: (exp.name, t) for a, t in mine.items()})
            local = None if is_uri(exp.path) else self._is_local
            # Before Tune's first state (or with no start in it): a driver wrote its files.
            started = reader.tune_started_at or reader.files_time
            actor_jobs = {actors[a]["job_id"] for a in mine}
            if len(actor_jobs) == 1:
                seen[exp.path] = next(iter(actor_jobs))
            if exp.path in seen:
                self._seen_driver[exp.path] = seen[exp.path]
                actor_jobs = actor_jobs or {seen[exp.path]}
            job = find_driver(exp, started, self.jobs, actor_jobs, local)
            exp, ended = with_driver(exp, job, jobs_known=self.known,
                                     state_mtime=reader.state_mtime, now=now)  # fmt: skip
            how.append(ended)
            if job is not None:
                drivers.add(job.job_id)
            result.append(exp)
        others = Others(trials=trials, jobs={j.job_id: j for j in self.jobs if j.job_id},
                        drivers=frozenset(drivers))  # fmt: skip
        return result, how, others

    def rows(
        self,
        experiments: tuple[Experiment, ...],
        readers: Sequence[ExperimentReader],
        how: Sequence[str | None],
        runs: tuple[TrainRun, ...],
        groups: tuple[PlacementGroup, ...],
        creators: Mapping[str, tuple[str, str]],
        actors: Mapping[str, dict[str, Any]],
        now: float,
        counts: Callable[[Experiment], Mapping[str, int]] = Experiment.status_counts,
    ) -> tuple[Workload, ...]:
        """The one list (``pipeline.workloads``): ``experiments``, ``readers`` and ``how``
        side by side (``drivers``'); ``runs``: the Train runs of no experiment; ``counts``:
        each experiment's trials by status (``pipeline.kept_trials``, kept)."""
        launched = [r.raytop_dir is not None for r in readers]
        run_jobs = self._run_jobs.update(runs, creators, actors)
        rows = list(zip(experiments, launched, how, strict=True))
        return workloads(rows, runs, run_jobs, self.jobs, groups, creators, now,
                         counts, self._held)  # fmt: skip
