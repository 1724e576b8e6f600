"""A Ray Train run as raytop sees it: one attempt (a worker group) with its ranks, their
activity and reports, its checkpoints, its earlier attempts and retry budgets; and where
raytop learned of it (``TrainRun.source``).

The JSON form is part of ``raytop status --json`` (docs/schema.md, add-only):
``model.train_run_json`` writes its ages and reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

from raytop.model.nccl_ras import RayHangDetector, RayHangVerdict
from raytop.model.no_probe import NoProbe
from raytop.model.time_shares import shares

# Where raytop learned of a Train run (``TrainRun.source``).
RUN_FROM_LEDGER = "ledger"  # its probes' reports (instrumented)
RUN_FROM_STORAGE = "storage"  # its checkpoint snapshot on storage (history)
RUN_FROM_ACTOR_TABLE = "actor_table"  # its controller and worker actors (no probe)
RUN_FROM_TRAIN_STATE = "train_state"  # Train V2's own state, by the dashboard (no probe)
RUN_SOURCES = (RUN_FROM_LEDGER, RUN_FROM_STORAGE, RUN_FROM_ACTOR_TABLE, RUN_FROM_TRAIN_STATE)

# ``Worker.barrier``: inside the most advanced report while a rank has not entered it; or
# one of the ranks that has not entered it (the others wait for it).
BARRIER_WAITING, BARRIER_HOLDING = "waiting", "holding"


def seconds_since(now: float, at: float | None) -> float | None:
    """Seconds from ``at`` to ``now``, never negative; None when ``at`` is unknown."""
    return None if at is None else max(0.0, now - at)


def report_intervals(times: tuple[float, ...]) -> tuple[float, ...]:
    """The gaps between consecutive report entries ``times``, oldest first: the one series
    every report interval is made from (a gap the wall clock stepped back over is no
    interval, and left out)."""
    return tuple([b - a for a, b in pairwise(times) if b >= a])


@dataclass(frozen=True)
class Activity:
    """Where a rank's train loop is, sampled once a second by its probe: ``kind``
    (collective, backward, data_loader, io, report, user), ``where`` (the call and the
    user's line), ``since`` (unix s, when it got there), ``waiting`` (the fraction of the
    last ``samples`` samples spent waiting: in a collective, backward or a report)."""

    kind: str
    where: str
    since: float
    sampled_at: float
    samples: int = 0
    waiting: float = 0.0
    # Seconds per kind of work (``model.records.SHARE_KINDS``) over the attempt and over
    # the last minute; empty from a probe older than them.
    time_s: dict[str, float] = field(default_factory=dict)
    recent_time_s: dict[str, float] = field(default_factory=dict)
    # Its start-up before those: until its first optimizer step or report (None: older).
    startup_s: float | None = None

    # The two as shares (``model.time_shares.shares``), made once per Activity: the ledger
    # reader keeps a rank's Activity while its beat is unchanged, so an unchanged rank's
    # shares are not made again each refresh (2,000 ranks: ~25 ms a refresh).
    @cached_property
    def shares(self) -> dict[str, float] | None:
        return shares(self.time_s)

    @cached_property
    def recent_shares(self) -> dict[str, float] | None:
        return shares(self.recent_time_s)


@dataclass(frozen=True)
class Worker:
    """One rank of a Train run attempt, as its ReportProbe last told the ledger.

    Times are unix seconds. It carries times, not ages: its ages (``since_report``,
    ``since_beat``) are a face's to say, as of the snapshot's ``ages_at``, so a rank of
    which nothing new was read is the very same object from one second to the next.
    ``reports_entered`` / ``reports_exited`` count ``ray.train.report`` calls in this
    attempt; entered > exited means the rank is inside report (at the barrier)."""

    rank: int
    reports_entered: int = 0
    reports_exited: int = 0
    local_rank: int | None = None
    node_rank: int | None = None
    node_id: str | None = None
    pid: int | None = None
    last_enter_at: float | None = None
    last_exit_at: float | None = None
    heartbeat_at: float | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    gpu_memory_bytes: int | None = None  # what torch allocated on its GPU
    # Its GPU as NVML sees it (``probe.gpu_use``; GPU only): utilisation % and the memory
    # in use on the device (every process on it); None without a GPU or NVML.
    gpu_util_percent: float | None = None
    gpu_memory_used_bytes: int | None = None
    # Its optimizer steps (torch's step hook, ``probe.step_counter``) and their rate a
    # second over the last minute; None without torch or before a step.
    optimizer_steps: int | None = None
    step_rate: float | None = None
    gpu_ids: tuple[str, ...] = ()
    # Its one report interval: the median of its recent report-to-report times, derived by
    # the pipeline from ``report_times`` (``pipeline.derive.report_interval`` says why the
    # median); the probe's own figure only when it sent no history.
    usual_interval_s: float | None = None
    done: bool = False  # its train loop returned or raised
    dropped_events: int = 0  # probe flushes that could not reach the ledger
    stack: str | None = None  # the last Python stack it sent on request
    stack_request: str | None = None  # the request that stack answers
    # Its native stack (py-spy, C/C++ frames merged with the Python ones) when raytop
    # asked for one (``status --stacks --native``), or one line saying why there is none;
    # and the request it answers.
    native_stack: str | None = None
    native_stack_request: str | None = None
    # Who took ``stack`` and ``native_stack`` (``model.stacks``: its probe; py-spy run by
    # raytop on the worker's node; Ray's dashboard, for a rank with no probe elsewhere);
    # and, for a rank with no probe whose Python stack could not be taken, one line
    # saying why (py-spy refused by the OS, Ray's dashboard profiling disabled, …).
    stack_by: str | None = None
    stack_problem: str | None = None
    # Its probe's answer to a Flight Recorder request (``status --flight-recorder``): one
    # line (dump requested through its pipe, or why not), and the request it answers.
    flight_recorder: str | None = None
    flight_recorder_request: str | None = None
    # Its last reports (at most 32, oldest first): when it entered each, and when it
    # returned from it (None: still inside), the same length. Empty: the probe sent none.
    report_times: tuple[float, ...] = ()
    report_exits: tuple[float | None, ...] = ()
    # The logical resources Ray assigned it ({"CPU": 1.0}): declared, not an OS limit.
    declared_resources: dict[str, float] = field(default_factory=dict)
    # The checkpoint folder its worker group started from (``ray.train.get_checkpoint()``);
    # None: it started fresh, or its probe did not say.
    restored_from: str | None = None
    activity: Activity | None = None  # None: not sampled yet, or an older probe
    # Derived by the pipeline with the collector's thresholds (``pipeline.derive``, once a
    # snapshot; never by a judgement or a face): one word of training, waiting, behind,
    # silent, dead, done; reports behind the most advanced rank; its reports a minute
    # (60 / ``usual_interval_s``: the one rate every face shows); alive and out of report
    # but quiet past max(silent_min_s, silent_factor × its interval), behind or not; and
    # its part in the report barrier: "waiting" (inside the most advanced report while a
    # rank has not entered it), "holding" (one that has not), or "".
    state: str = ""
    behind: int = 0
    rate_per_min: float | None = None
    silent: bool = False
    barrier: str = ""

    def __post_init__(self) -> None:
        # From JSON (``Snapshot.from_json``) the histories arrive as lists.
        object.__setattr__(self, "report_times", tuple(self.report_times))
        object.__setattr__(self, "report_exits", tuple(self.report_exits))

    @property
    def in_report(self) -> bool:
        return self.reports_entered > self.reports_exited

    # Its time shares (``model.time_shares``): kind → fraction over the attempt and over
    # the last minute; None: not sampled long enough, or an older probe. Its Activity's,
    # made when first read (``Activity.shares``): a face reads those of the ranks it
    # shows, and every rank beats each second (2,000 ranks' made at each beat: ~12 ms).
    @property
    def time_shares(self) -> dict[str, float] | None:
        return self.activity.shares if self.activity is not None else None

    @property
    def recent_time_shares(self) -> dict[str, float] | None:
        return self.activity.recent_shares if self.activity is not None else None

    def since_report(self, now: float) -> float | None:
        """Seconds since it last entered report, as of ``now``; None: never."""
        return seconds_since(now, self.last_enter_at)

    def since_beat(self, now: float) -> float | None:
        """Seconds since its last heartbeat, as of ``now``; None: none yet."""
        return seconds_since(now, self.heartbeat_at)

    @property
    def cpu_over_declared(self) -> bool:
        """Using more CPU than its logical CPUs (100 % each): Ray does not enforce them,
        so a worker that declared 1 CPU and runs 8 threads shares cores unannounced."""
        cpus = self.declared_resources.get("CPU", 0.0)
        return self.cpu_percent is not None and cpus > 0 and self.cpu_percent > 100.0 * cpus

    @property
    def report_intervals_s(self) -> tuple[float, ...]:
        """The gaps between its consecutive recent report entries (``report_intervals``)."""
        return report_intervals(self.report_times)


@dataclass(frozen=True)
class CheckpointRecord:
    """One checkpoint of a Train run: who attached files, how it travelled, where it is.

    ``state``: uploading, uploaded (on storage, not yet in the run's snapshot), committed,
    validating, validated, validation_failed, validation_timed_out, failed, missing
    (listed in the snapshot but gone from storage), pruned (committed once, then deleted by
    Train's ``num_to_keep`` after newer ones: neither listed nor on storage)."""

    dir_name: str
    state: str
    report_index: int | None = None  # the report (per attempt) it was attached to
    ranks: tuple[int, ...] = ()  # ranks that attached files
    files: int = 0
    bytes: int = 0
    mode: str | None = None  # SYNC | ASYNC | NO_UPLOAD (custom_upload: user's upload)
    custom_upload: bool = False
    upload_s: float | None = None  # longest rank's upload so far (None: NO_UPLOAD)
    uploading_since: float | None = None
    throughput_bps: float | None = None  # bytes / longest upload, once uploaded
    sync_s: dict[int, float] = field(default_factory=dict)  # rank → its report-barrier wait
    # rank → (upload start, end or None while uploading), from the transfer hook
    rank_uploads: dict[int, tuple[float, float | None]] = field(default_factory=dict)
    error: str | None = None
    # The same relative path from several ranks with contents that differ (sizes differ, or
    # both hashed and the hashes differ): one overwrote the others. path → ranks
    collisions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # The same path from several ranks with the same contents (same size, every copy
    # hashed alike): replicated state uploaded more than once. path → ranks; and the
    # bytes uploaded beyond one copy of each.
    replicated: dict[str, tuple[int, ...]] = field(default_factory=dict)
    redundant_bytes: int = 0
    # The same path from several ranks, the same size, not every copy hashed (over the
    # probe's hash cap, written in place, an older probe): not compared. path → ranks
    uncompared: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a Train run (a worker group from scheduling to its end), as the
    RunProbe in its controller saw it. ``status``: running, errored, finished, aborted,
    resized. ``failure_class``: the retry budget an errored attempt counts against
    (worker → max_failures, controller → controller_failure_limit, preemption →
    max_preemption_failures); None when it is not retryable or did not fail."""

    index: int
    status: str
    started_at: float
    attempt_id: str | None = None  # its ledger page's attempt id, once its workers started
    ended_at: float | None = None
    # To its end; None while it runs (``lasted`` says how long so far: a face's to say, as
    # of the snapshot's ``ages_at``, and ``Snapshot.to_json`` writes it so).
    duration_s: float | None = None
    error_class: str | None = None
    error: str | None = None  # one line, at most 300 characters
    failure_class: str | None = None
    # Scalar metrics of its first completed report (rank 0's), and of the checkpoint it
    # restored from (the last checkpointed report of earlier attempts in its controller,
    # or, after a new controller resumed the run, that checkpoint's metrics on storage);
    # None: none known.
    first_report: dict[str, float] | None = None
    restored: dict[str, float] | None = None
    restored_from: str | None = None  # the folder name of that checkpoint, when its ranks said
    reports_taken: int | None = None  # reports its controller took; None: not known
    # It failed because the controller could not load what a rank sent (a metric).
    undeliverable: bool = False

    @property
    def running(self) -> bool:
        return self.status == "running" and self.ended_at is None

    def lasted(self, now: float) -> float | None:
        """How long it ran: to its end, or to ``now`` while it runs."""
        return seconds_since(now, self.started_at) if self.running else self.duration_s


@dataclass(frozen=True)
class RetryBudget:
    """One of a run's retry budgets: ``setting`` names its ``ray.train.FailureConfig``
    field; ``limit`` and ``left`` are -1 when unlimited; ``used``: failures of its class
    that Train retried."""

    setting: str
    limit: int
    used: int = 0
    left: int = -1

    @classmethod
    def of(cls, setting: str, limit: int, failures: int) -> RetryBudget:
        if limit < 0:
            return cls(setting, -1, failures, -1)
        used = min(failures, limit)
        return cls(setting, limit, used, limit - used)

    @property
    def unlimited(self) -> bool:
        return self.limit < 0


@dataclass(frozen=True)
class TrainRun:
    """One attempt of a Ray Train run (a worker group): a ledger page.

    A restart or an elastic resize is a new attempt with fresh counts."""

    run_id: str
    run_name: str
    attempt_id: str
    world_size: int
    attempt_index: int = 1  # 1 for the first worker group of this run seen by the ledger
    trial_id: str | None = None
    workers: tuple[Worker, ...] = ()
    placement_group_id: str | None = None  # the worker group's placement group
    run_path: str | None = None  # the run's folder on storage
    checkpoints: tuple[CheckpointRecord, ...] = ()
    # False: no probe report: report counts, states and checkpoints are unknown. Known
    # from the cluster's actor table (a Train controller and its worker actors: its ranks
    # are its workers in pid order, not Train's world ranks), or, when its driver turned
    # Train's state tracking on, from Train's own state (``source``).
    instrumented: bool = True
    # Known from storage only (its checkpoint snapshot; no ledger page, so no workers,
    # ``world_size`` 0 and ``attempt_id`` ""): history after the cluster is gone.
    from_storage: bool = False
    # From its RunProbe (empty when none ran): every attempt, oldest first, and one retry
    # budget per failure class (worker, controller, preemption).
    attempts: tuple[Attempt, ...] = ()
    retry_budget: dict[str, RetryBudget] = field(default_factory=dict)
    # Where raytop learned of it (one of RUN_SOURCES). A run with no probe is known from
    # the actor table, or from Train's own state: then its name, attempts (from Train's
    # state, not a RunProbe's) and its workers' world ranks are Train's.
    source: str = RUN_FROM_LEDGER
    # A run with no probe: the Ray job that started it (its id in hex, as the actor table
    # has it: the job of its controller), that job's entrypoint once raytop knows the
    # job (None: not known), and one line on what would give its counts.
    job_id: str | None = None
    job_entrypoint: str | None = None
    probe_hint: str | None = None
    # A run with no probe: why it has none (``model.no_probe``), judged once.
    no_probe: NoProbe | None = None
    # Ray 2.60's NCCL hang detector confirmed a hang in this run (``model.nccl_ras``).
    ray_hang: RayHangVerdict | None = None
    # Whether that detector watches this run (its RunProbe saw Train's callbacks); None:
    # not known (no RunProbe, an older one, or no worker group started yet).
    ray_detector: RayHangDetector | None = None
    # Derived by the pipeline with the collector's thresholds (``pipeline.derive``): no rank
    # of the attempt has beaten for ``dead_after_s``.
    gone: bool = False
    # Derived by the pipeline: the run's time shares (``model.time_shares``, its ranks'
    # seconds summed) over the attempt and the last minute, and its goodput (the compute
    # share over the attempt); None: not sampled long enough.
    time_shares: dict[str, float] | None = None
    recent_time_shares: dict[str, float] | None = None
    goodput: float | None = None
    time_sampled_s: float = 0.0  # the rank-seconds those shares are made of
    # How often Train's controller polls the ranks for results (its RunProbe read the
    # setting); None: not known.
    controller_poll_s: float | None = None

    @property
    def finished(self) -> bool:
        if self.from_storage:
            return True  # history: whatever it was doing, it does no more
        return len(self.workers) >= self.world_size and all(w.done for w in self.workers)

    @property
    def over(self) -> bool:
        """Finished, or gone: a whole worker group going quiet at once was shut down or
        killed with its driver (Train starts a new attempt, a new page, if it retries); it
        cannot be waiting for itself."""
        return self.finished or self.gone
