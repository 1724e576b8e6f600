"""The snapshot: one consistent picture of a cluster and the experiments raytop watches.

The JSON form (``to_json`` / ``from_json``) is the documented schema of
``raytop status --json`` (docs/schema.md): fields are only ever added, never renamed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raytop.model import finding, strict_json
from raytop.model.collectives import FlightRecorderReport
from raytop.model.finding import Finding
from raytop.model.jobs import DERIVED_FIELDS as JOB_DERIVED_FIELDS
from raytop.model.jobs import Job
from raytop.model.nccl_ras import CommLag, RayHangVerdict
from raytop.model.no_probe import NoProbe
from raytop.model.stdlib import StrEnum
from raytop.model.workloads import OlderExperiments, Workload

SCHEMA_VERSION = 1

TERMINAL_TRIAL_STATUSES = frozenset({"TERMINATED", "ERROR"})
MAX_SCHEDULER_DECISION = 240  # characters of Trial.scheduler_decision (one line)


class ExperimentStatus(StrEnum):
    STARTING = "STARTING"  # driver alive, no trial known yet
    RUNNING = "RUNNING"  # driver alive
    FINISHED = "FINISHED"  # driver gone, every trial TERMINATED
    ERRORED = "ERRORED"  # driver gone, every trial ended, at least one ERROR
    INTERRUPTED = "INTERRUPTED"  # driver gone (or unknown) with trials unfinished
    UNKNOWN = "UNKNOWN"  # nothing readable on disk yet


HOST_FROM_OS = "os"  # psutil in raytop's own process: a node on raytop's host, fresh
HOST_FROM_RAY = "ray"  # Ray's dashboard: what the node's agent last reported (every ~5 s)
HOST_SOURCES = (HOST_FROM_OS, HOST_FROM_RAY)

# Where raytop learned of a Train run (``TrainRun.source``).
RUN_FROM_LEDGER = "ledger"  # its probes' reports (instrumented)
RUN_FROM_STORAGE = "storage"  # its checkpoint snapshot on storage (history)
RUN_FROM_ACTOR_TABLE = "actor_table"  # its controller and worker actors (no probe)
RUN_FROM_TRAIN_STATE = "train_state"  # Train V2's own state, by the dashboard (no probe)
RUN_SOURCES = (RUN_FROM_LEDGER, RUN_FROM_STORAGE, RUN_FROM_ACTOR_TABLE, RUN_FROM_TRAIN_STATE)


@dataclass(frozen=True)
class HostStats:
    """What the OS says of a node's host (not Ray's logical resources): CPU % of all its
    cores, memory in use, the 1-minute load average. ``source`` says who measured it:
    raytop itself (``"os"``) or the node's Ray agent, through the dashboard (``"ray"``:
    seconds old, and in a pod the container's figures)."""

    cpu_percent: float
    cpus: int
    memory_used: int
    memory_total: int
    load_1m: float | None = None
    source: str = HOST_FROM_OS  # one of HOST_SOURCES


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


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str
    alive: bool
    is_head: bool
    resources_total: dict[str, float] = field(default_factory=dict)
    resources_available: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # The host's own figures: psutil's for a node on the host raytop runs on, Ray's
    # dashboard's for a node elsewhere (``HostStats.source``); None: not known.
    host: HostStats | None = None

    def used(self, resource: str) -> float:
        # Ray leaves fully used resources out of the available map: absent means 0 free.
        total = self.resources_total.get(resource, 0.0)
        return total - self.resources_available.get(resource, 0.0)


@dataclass(frozen=True)
class Cluster:
    """What the GCS says; ``connected=False`` with ``error`` when it cannot be reached."""

    address: str | None
    connected: bool
    error: str | None = None
    embedded: bool = False
    ray_version: str | None = None
    nodes: tuple[Node, ...] = ()
    # No cluster on purpose (``--storage``): the experiments are history read from storage,
    # and ``error`` says so ("no cluster: history from storage"); not a fault to report.
    history_only: bool = False
    # Why nodes elsewhere have no host figures, in one line (Ray's dashboard did not
    # answer, or the cluster has none); None when they have them or all nodes are local.
    # A note, not a fault: no finding, no warning.
    host_note: str | None = None
    # raytop runs on a Ray line it does not support because the user asked
    # (``RAYTOP_ANY_RAY=1``): the top bar says so; the snapshot's warnings too.
    ray_unsupported: bool = False

    def total(self, resource: str) -> float:
        return sum(n.resources_total.get(resource, 0.0) for n in self.nodes if n.alive)

    def used(self, resource: str) -> float:
        return sum(n.used(resource) for n in self.nodes if n.alive)

    @property
    def alive_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.alive)


@dataclass(frozen=True)
class Trial:
    trial_id: str
    status: str  # Tune's: PENDING, RUNNING, PAUSED, TERMINATED, ERROR
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    num_failures: int = 0
    iterations: int = 0
    elapsed_s: float | None = None
    error: str | None = None
    pending_reason: str | None = None  # why it (or its Train workers) cannot place yet
    # The experiment metric's last values (at most 64, oldest first): from the TrialProbe
    # of a raytop-launched run; empty for other experiments (Tune's state keeps only the
    # last result). And the iterations it will run when known (``model.progress``).
    metric_history: tuple[float, ...] = ()
    max_iterations: int | None = None
    # Why the run's trial scheduler (ASHA, median stopping, PBT) stopped or paused it, in
    # one line of at most MAX_SCHEDULER_DECISION characters: from the TrialProbe of a
    # raytop-launched run; None when no scheduler decided (or the trial ran its course).
    scheduler_decision: str | None = None
    # Tune's retries of the trial (``[failure] trial_max_failures``; -1: unlimited), from
    # the TrialProbe of a raytop-launched run; None: not known.
    max_failures: int | None = None

    def __post_init__(self) -> None:
        # From JSON (``Snapshot.from_json``) the history arrives as a list.
        object.__setattr__(self, "metric_history", tuple(self.metric_history))

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL_TRIAL_STATUSES

    @property
    def stopped_early(self) -> bool:
        """Ended by its trial scheduler before it ran its course (its rule in
        ``scheduler_decision``)."""
        return self.status == "TERMINATED" and self.scheduler_decision is not None


@dataclass(frozen=True)
class Worker:
    """One rank of a Train run attempt, as its ReportProbe last told the ledger.

    Times are unix seconds; ``*_age_s`` are relative to the snapshot's ``taken_at``.
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
    last_report_age_s: float | None = None  # since the rank last entered report
    heartbeat_at: float | None = None
    heartbeat_age_s: float | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    gpu_memory_bytes: int | None = None
    gpu_ids: tuple[str, ...] = ()
    usual_interval_s: float | None = None  # median of its recent report-to-report times
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
    # Derived by the pipeline with the collector's thresholds (never by a face): one word of
    # training, waiting, behind, silent, dead, done; and reports behind the most advanced rank.
    state: str = ""
    behind: int = 0

    def __post_init__(self) -> None:
        # From JSON (``Snapshot.from_json``) the histories arrive as lists.
        object.__setattr__(self, "report_times", tuple(self.report_times))
        object.__setattr__(self, "report_exits", tuple(self.report_exits))

    @property
    def in_report(self) -> bool:
        return self.reports_entered > self.reports_exited

    @property
    def cpu_over_declared(self) -> bool:
        """Using more CPU than its logical CPUs (100 % each): Ray does not enforce them,
        so a worker that declared 1 CPU and runs 8 threads shares cores unannounced."""
        cpus = self.declared_resources.get("CPU", 0.0)
        return self.cpu_percent is not None and cpus > 0 and self.cpu_percent > 100.0 * cpus

    @property
    def report_intervals_s(self) -> tuple[float, ...]:
        """The gaps between its consecutive recent report entries, oldest first."""
        times = self.report_times
        return tuple(b - a for a, b in zip(times, times[1:], strict=False))

    def reports_per_min(self) -> float | None:
        """Its report rate over the recent history (None: fewer than two reports)."""
        times = self.report_times
        if len(times) < 2 or times[-1] <= times[0]:
            return None
        return 60.0 * (len(times) - 1) / (times[-1] - times[0])


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
    duration_s: float | None = None  # to its end, or to the snapshot while running
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

    @property
    def finished(self) -> bool:
        if self.from_storage:
            return True  # history: whatever it was doing, it does no more
        return len(self.workers) >= self.world_size and all(w.done for w in self.workers)


@dataclass(frozen=True)
class Bundle:
    index: int
    resources: dict[str, float]
    node_id: str | None = None  # None while unplaced


@dataclass(frozen=True)
class PlacementGroup:
    """A placement group and who it is for.

    ``owner_kind``: ``trial`` (a Tune trial's bundle), ``train_run`` (a Train worker group),
    ``pending_trial`` (created by a Tune driver for a trial not started yet) or ``other``.
    ``leaked``: its creator is gone but the group still holds (or waits for) resources."""

    pg_id: str
    strategy: str
    state: str  # PENDING, PREPARED, CREATED, RESCHEDULING, REMOVED
    scheduling_state: str  # INFEASIBLE, NO_RESOURCES, FINISHED, …
    bundles: tuple[Bundle, ...] = ()
    name: str = ""
    attempts: int = 0
    created_at: float | None = None
    age_s: float | None = None
    owner_kind: str = "other"
    owner: str | None = None  # trial id, or Train run name (or creator job)
    experiment: str | None = None
    trial_id: str | None = None  # the Tune trial it serves: its own group or its Train run's
    leaked: bool = False
    why_pending: str | None = None  # one sentence, for a group that is not placed

    @property
    def placed(self) -> bool:
        return self.state == "CREATED"

    @property
    def owner_label(self) -> str:
        """Who the group is for, in a few words: ``trial <id>``, ``Train run <name>``,
        ``pending trial of <experiment>``, or its creator job."""
        if self.owner_kind == "trial":
            return f"trial {self.owner}"
        if self.owner_kind == "train_run":
            return f"Train run {self.owner or '?'}"
        if self.owner_kind == "pending_trial":
            return f"pending trial of {self.experiment or '?'}"
        return self.owner or "other"


@dataclass(frozen=True)
class LedgerStatus:
    """The report ledger actor as raytop sees it through its published index."""

    available: bool
    started_at: float | None = None
    published_at: float | None = None
    restarted_at: float | None = None  # set when the ledger was recreated while watched
    gap_s: float | None = None  # how long it was gone then
    error: str | None = None
    # One line per KV value that could not be used (the ledger's index or a page, a trial
    # registration: over its size cap, wrong shape), naming its key; last good copy kept.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Experiment:
    name: str
    path: str
    status: ExperimentStatus
    metric: str | None = None
    mode: str | None = None
    trials: tuple[Trial, ...] = ()
    driver_pid: int | None = None
    driver_alive: bool | None = None  # None: not launched by raytop, unknown
    driver_problem: str | None = None  # a driver.json that is there but no valid record
    warnings: tuple[str, ...] = ()  # e.g. "experiment state unreadable; showing last good copy"
    runs: tuple[TrainRun, ...] = ()  # the latest attempt of each Train run of its trials
    job_id: str | None = None  # the Ray job of its Tune driver (owner of its trial groups)
    # How Tune's experiment_state-*.json read: "ok", "missing", "torn" (does not parse now),
    # "invalid" (wrong shape), "incomplete" (lacks trials raytop saw), "unreachable"
    # (storage), "unknown" (not read). ``state_reason``: one line on why it is not "ok".
    state_read: str = "unknown"
    state_reason: str | None = None

    @property
    def all_terminated(self) -> bool:
        return bool(self.trials) and all(t.status == "TERMINATED" for t in self.trials)

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for t in self.trials:
            counts[t.status] = counts.get(t.status, 0) + 1
        return counts


@dataclass(frozen=True)
class StacksCapture:
    """Where a stacks request's answers were saved (``pipeline.captures``): one folder per
    experiment whose ranks answered (``<raytop dir>/captures/<UTC time>``), and the one
    line a face shows ("saved to …", or why nothing was saved)."""

    saved_to: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    cluster: Cluster
    experiments: tuple[Experiment, ...] = ()
    findings: tuple[Finding, ...] = ()
    runs: tuple[TrainRun, ...] = ()  # instrumented Train runs of no watched experiment
    ledger: LedgerStatus | None = None
    placement_groups: tuple[PlacementGroup, ...] = ()  # not REMOVED
    warnings: tuple[str, ...] = ()  # raytop's own records (experiments.json), naming the file
    # Set only on the answer to a stacks request: where its capture was saved.
    stacks_capture: StacksCapture | None = None
    # Set only on the answer to ``status --flight-recorder``: the Flight Recorder dumps.
    flight_recorder: FlightRecorderReport | None = None
    # The cluster's jobs, newest first (``model.jobs``); the one list of everything that
    # runs (``model.workloads``), live first; and the folders of Tune's default storage
    # not read (older than a day and than every live job).
    jobs: tuple[Job, ...] = ()
    workloads: tuple[Workload, ...] = ()
    older_experiments: tuple[OlderExperiments, ...] = ()

    def all_runs(self) -> tuple[TrainRun, ...]:
        return tuple(r for e in self.experiments for r in e.runs) + self.runs

    def to_json(self) -> dict[str, Any]:
        """The schema's shape, strict: ``model.strict_json`` (no NaN, no credentials)."""
        data, non_finite = strict_json.strict(self)
        data["schema_version"] = SCHEMA_VERSION
        data["non_finite"] = non_finite
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        cluster = dict(data["cluster"])
        cluster["nodes"] = tuple(
            Node(**{**n, "host": HostStats(**n["host"]) if n.get("host") else None})
            for n in cluster.get("nodes", ())
        )
        experiments = []
        for e in data.get("experiments", ()):
            e = dict(e)
            e["status"] = ExperimentStatus(e["status"])
            e["trials"] = tuple(Trial(**t) for t in e.get("trials", ()))
            e["warnings"] = tuple(e.get("warnings", ()))
            e["runs"] = tuple(_run_from_json(r) for r in e.get("runs", ()))
            experiments.append(Experiment(**e))
        ledger = data.get("ledger")
        findings = tuple(finding.from_json(f) for f in data.get("findings", ()))
        return cls(
            taken_at=data["taken_at"],
            cluster=Cluster(**cluster),
            experiments=tuple(experiments),
            findings=findings,
            runs=tuple(_run_from_json(r) for r in data.get("runs", ())),
            ledger=(
                LedgerStatus(**{**ledger, "warnings": tuple(ledger.get("warnings", ()))})
                if ledger
                else None
            ),
            placement_groups=tuple(
                PlacementGroup(**{**pg, "bundles": tuple(Bundle(**b) for b in pg["bundles"])})
                for pg in data.get("placement_groups", ())
            ),
            warnings=tuple(data.get("warnings", ())),
            stacks_capture=(
                StacksCapture(tuple(capture["saved_to"]), capture["note"])
                if (capture := data.get("stacks_capture"))
                else None
            ),
            flight_recorder=(
                FlightRecorderReport.from_json(report)
                if (report := data.get("flight_recorder"))
                else None
            ),
            jobs=tuple(
                Job(**{k: v for k, v in j.items() if k not in JOB_DERIVED_FIELDS})
                for j in data.get("jobs", ())
            ),
            workloads=tuple(Workload(**w) for w in data.get("workloads", ())),
            older_experiments=tuple(
                OlderExperiments(**o) for o in data.get("older_experiments", ())
            ),
        )


def _run_from_json(data: dict[str, Any]) -> TrainRun:
    workers = tuple(
        Worker(**{**w, "gpu_ids": tuple(w.get("gpu_ids", ())),
                  "activity": Activity(**w["activity"]) if w.get("activity") else None})
        for w in data.get("workers", ())
    )  # fmt: skip
    checkpoints = tuple(
        CheckpointRecord(**{
            **c,
            "ranks": tuple(c.get("ranks", ())),
            **{key: {k: tuple(v) for k, v in c.get(key, {}).items()}
               for key in ("collisions", "replicated", "uncompared")},
        })
        for c in data.get("checkpoints", ())
    )  # fmt: skip
    attempts = tuple(Attempt(**a) for a in data.get("attempts", ()))
    budget = {k: RetryBudget(**b) for k, b in data.get("retry_budget", {}).items()}
    no_probe = NoProbe(**data["no_probe"]) if data.get("no_probe") else None
    hang = data.get("ray_hang")
    ray_hang = RayHangVerdict(**{
        **hang, "stack_ranks": tuple(hang.get("stack_ranks", ())),
        "lagging": tuple(CommLag(**{**c, "behind": tuple(c["behind"])}) for c in hang["lagging"]),
    }) if hang else None  # fmt: skip
    return TrainRun(**{**data, "workers": workers, "checkpoints": checkpoints,
                       "attempts": attempts, "retry_budget": budget,
                       "no_probe": no_probe, "ray_hang": ray_hang})  # fmt: skip
