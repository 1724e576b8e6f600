"""The cluster's jobs (``Snapshot.jobs``): every driver Ray knows, and what became of it.

A job is a driver connected to the cluster: a script run with ``python``, a ``ray job
submit`` entrypoint (then it has a submission id, and Ray's job manager keeps its status
and message), or raytop's own Tune driver. The pipeline ties experiments and Train runs
to the job that runs them, says where each comes from, and when its job ended, how.
Read by ``sources.jobs`` and checked by ``model.untrusted_jobs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raytop.model.no_probe import job_needs_probe

# Ray's JobStatus (dashboard/modules/job/common.py) of a submitted job.
JOB_PENDING, JOB_RUNNING = "PENDING", "RUNNING"
JOB_STOPPED, JOB_SUCCEEDED, JOB_FAILED = "STOPPED", "SUCCEEDED", "FAILED"
SUBMISSION_STATUSES = (JOB_PENDING, JOB_RUNNING, JOB_STOPPED, JOB_SUCCEEDED, JOB_FAILED)
TERMINAL_JOB_STATUSES = frozenset({JOB_STOPPED, JOB_SUCCEEDED, JOB_FAILED})

# How a job ended (``Job.how_ended``), first word: the faces show the whole line.
ENDED_STOPPED = "stopped"  # `ray job stop` (Ray's STOPPED)
ENDED_FAILED = "failed"  # Ray's FAILED: the entrypoint exited non-zero, or never started
ENDED_SUCCEEDED = "succeeded"
ENDED_DRIVER_DIED = "driver died"  # a submitted job's driver is dead, its record not ended
ENDED_DRIVER_EXITED = "driver exited"  # a driver script: Ray does not say how it ended

MAX_HOW_ENDED = 300  # characters of ``how_ended`` (its message's first line)
SHORT_ENTRYPOINT = 60  # characters of an entrypoint in a one-line label


@dataclass(frozen=True)
class Job:
    """One job of the cluster. Times are unix seconds (None: not set). ``dead``: Ray's
    job table says its driver is gone. ``job_id`` is "" for a submitted job that has not
    connected to the cluster (its entrypoint runs no Ray driver, or not yet). ``status``,
    ``message`` and ``exit_code`` only for a submitted job (``submission_id``), from Ray's
    job manager.

    Derived from those (fields, so ``status --json`` has them too): ``ended`` (its driver
    is gone, or Ray's job manager says the job ended: ``ray job stop`` says so at once,
    before the driver process is gone), ``how_ended`` (one line: stopped, failed with
    Ray's message, succeeded, driver died, driver exited; None while it runs) and
    ``label`` (where a run comes from, in a few words)."""

    job_id: str
    entrypoint: str = ""
    submission_id: str | None = None
    driver_pid: int | None = None
    driver_ip: str | None = None
    start_time: float | None = None
    end_time: float | None = None
    dead: bool = False
    status: str | None = None
    message: str | None = None
    exit_code: int | None = None
    ended: bool = field(init=False)
    how_ended: str | None = field(init=False)
    label: str = field(init=False)

    def __post_init__(self) -> None:
        ended = self.dead or self.status in TERMINAL_JOB_STATUSES
        object.__setattr__(self, "ended", ended)
        object.__setattr__(self, "how_ended", _how_ended(self) if ended else None)
        object.__setattr__(self, "label", _label(self))

    def alive_at(self, when: float, slack_s: float = 0.0) -> bool:
        """Whether its driver ran at unix time ``when`` (give or take ``slack_s``: clocks
        of two nodes)."""
        if self.start_time is None or self.start_time > when + slack_s:
            return False
        if not self.ended:
            return True
        return self.end_time is None or self.end_time >= when - slack_s


DERIVED_FIELDS = ("ended", "how_ended", "label")  # not given to ``Job(...)``


def _how_ended(job: Job) -> str:
    if job.status == JOB_STOPPED:
        return ENDED_STOPPED
    if job.status == JOB_FAILED:
        needs_probe = job_needs_probe(job.message)
        if needs_probe is not None:
            return needs_probe
        # Ray's message: what failed, then the last logs: the last line says why.
        lines = [ln.strip() for ln in (job.message or "").splitlines() if ln.strip()]
        said = lines[0] + (f" … {lines[-1]}" if len(lines) > 1 else "") if lines else ""
        line = f"{ENDED_FAILED}: {said}" if said else ENDED_FAILED
        return line if len(line) <= MAX_HOW_ENDED else line[: MAX_HOW_ENDED - 1] + "…"
    if job.status == JOB_SUCCEEDED:
        return ENDED_SUCCEEDED
    return ENDED_DRIVER_DIED if job.submission_id else ENDED_DRIVER_EXITED


def _label(job: Job) -> str:
    """``Ray job <submission id>: <command>`` or ``driver script: <command>`` (the
    command cut to ``SHORT_ENTRYPOINT``)."""
    command = short_entrypoint(job.entrypoint)
    if job.submission_id:
        return f"Ray job {job.submission_id}" + (f": {command}" if command else "")
    return f"driver script: {command}" if command else f"driver of job {job.job_id}"


def short_entrypoint(entrypoint: str, width: int = SHORT_ENTRYPOINT) -> str:
    """The command on one line, its program by its name (``/opt/venv/bin/python x.py`` →
    ``python x.py``: the script is what tells runs apart), its end cut with "…" past
    ``width`` characters. ``Job.entrypoint`` keeps the whole command."""
    words = entrypoint.split()
    if words and "/" in words[0].strip("/"):
        words[0] = words[0].rstrip("/").rsplit("/", 1)[-1]
    line = " ".join(words)
    return line if len(line) <= width else line[: width - 1] + "…"


# A driver starts its Tune run within this long of connecting (imports, building its
# search space): two jobs that connected within it before a Tune start could each be its
# driver.
DRIVER_TO_TUNE_S = 10.0


def driver_of(jobs: tuple[Job, ...], started_at: float, slack_s: float = 2.0) -> Job | None:
    """The job whose driver ran at ``started_at`` (a Tune driver's start, from its
    experiment state): of the jobs alive then, the one started last (a driver starts its
    Tune run after it connected). None when no job of this cluster was alive then, or
    when two or more connected within ``DRIVER_TO_TUNE_S`` before it (jobs submitted
    together): the time alone cannot tell which, and a guess would name the wrong one."""
    alive = [j for j in jobs if j.start_time is not None and j.alive_at(started_at, slack_s)]
    recent = [j for j in alive if (j.start_time or 0.0) >= started_at - DRIVER_TO_TUNE_S]
    if len(recent) > 1:
        return None
    return max(alive, key=lambda j: (j.start_time or 0.0, j.job_id), default=None)
