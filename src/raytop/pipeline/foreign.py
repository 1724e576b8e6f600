"""A Tune experiment raytop did not launch, tied to the job that runs it: its status.

raytop has no record of such an experiment's driver, so the evidence is Ray's:

- the trials' own actors: Tune puts each result's ``pid`` and ``node_ip`` in the trial's
  last result (its experiment state keeps it); an alive actor with that pid on that node
  is the trial's actor, and the job of that actor is the driver's job;
- else the driver's start: Tune's state records when its driver started
  (``runner_data._start_time``); the job whose driver ran then (start ≤ it ≤ end, or
  still running), the one started last, is its driver (``model.jobs.driver_of``). Before
  Tune wrote its first state, the time of the newest file the driver wrote in the folder
  (tuner.pkl) stands in. A local experiment folder was written by a driver on this node,
  so only jobs whose driver runs here count then.

Its status then: FINISHED / ERRORED when every trial ended (whatever its driver does);
RUNNING (STARTING before any trial) while its job runs; INTERRUPTED ("driver gone", the
unfinished trials resumable) once its job ended, with how (``Job.how_ended``). With no
job: INTERRUPTED only when no job of this cluster ran it and Tune has not saved its state
for ``STALE_STATE_S`` (a live Tune driver saves it every 10 s or so,
``ray/tune/execution/experiment_state.py``), else UNKNOWN as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from raytop.model import Experiment, ExperimentStatus
from raytop.model.jobs import Job, driver_of
from raytop.model.untrusted import is_finite_number

STALE_STATE_S = 3600.0
DRIVER_GONE = "driver gone"


def trial_actors(experiment: Experiment, actors: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """The alive actors that are the experiment's unfinished trials: actor id → trial id
    (the trial's last result names its process: ``pid`` on ``node_ip``)."""
    wanted: dict[tuple[str, int], str] = {}
    for trial in experiment.trials:
        pid, ip = trial.metrics.get("pid"), trial.metrics.get("node_ip")
        if not trial.ended and is_finite_number(pid) and isinstance(ip, str):
            wanted[(ip, int(pid))] = trial.trial_id
    if not wanted:
        return {}
    found = {}
    for actor_id, actor in actors.items():
        ip = actor["address"].rpartition(":")[0]
        trial_id = wanted.get((ip, actor["pid"]))
        if trial_id is not None:
            found[actor_id] = trial_id
    return found


def find_driver(
    experiment: Experiment,
    started_at: float | None,
    jobs: tuple[Job, ...],
    actor_jobs: set[str],
    local: Callable[[str], bool] | None,
) -> Job | None:
    """The job that runs (or ran) ``experiment``'s Tune driver, or None. ``actor_jobs``:
    the jobs of its trials' alive actors (``trial_actors``); ``local``: whether a driver
    address is on this node, for an experiment on this node's disk (None: anywhere)."""
    drivers = [j for j in jobs if j.job_id]  # a job that never connected runs no Tune
    by_id = {j.job_id: j for j in drivers}
    if len(actor_jobs) == 1 and (job := by_id.get(next(iter(actor_jobs)))) is not None:
        return job
    if started_at is None:
        return None
    near = [j for j in drivers
            if local is None or (j.driver_ip is not None and local(j.driver_ip))]  # fmt: skip
    return driver_of(tuple(near), started_at)


def with_driver(
    experiment: Experiment,
    job: Job | None,
    *,
    jobs_known: bool,
    state_mtime: float | None,
    now: float,
) -> tuple[Experiment, str | None]:
    """``experiment`` (raytop did not launch it) with its status from its driver's job
    (``job``; None: none found), and how it ended (None: it did not, or cannot tell).
    ``jobs_known``: the cluster's job table was read (else nothing is said of a driver)."""
    trials = experiment.trials
    unfinished = any(not t.ended for t in trials)
    status, how = experiment.status, None
    if trials and not unfinished:
        status = (ExperimentStatus.FINISHED if experiment.all_terminated
                  else ExperimentStatus.ERRORED)  # fmt: skip
    elif job is not None and not job.ended:
        status = ExperimentStatus.RUNNING if trials else ExperimentStatus.STARTING
    elif job is not None and trials:
        status, how = ExperimentStatus.INTERRUPTED, job.how_ended
    elif (job is None and jobs_known and trials and state_mtime is not None
          and now - state_mtime > STALE_STATE_S):  # fmt: skip
        status, how = ExperimentStatus.INTERRUPTED, DRIVER_GONE
    if job is None:
        same = status == experiment.status
        return (experiment if same else dataclasses.replace(experiment, status=status)), how
    return dataclasses.replace(
        experiment, status=status, job_id=job.job_id, driver_pid=job.driver_pid,
        driver_alive=not job.ended,
    ), how  # fmt: skip
