"""The snapshot: one consistent picture of a cluster and the experiments raytop watches.
Its cluster is ``model.cluster``'s, its Train runs ``model.train_run``'s.

The JSON form (``to_json`` / ``from_json``) is the documented schema of
``raytop status --json`` (docs/schema.md): fields are only ever added, never renamed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from raytop.model import finding, strict_json
from raytop.model.cluster import Bundle, Cluster, HostStats, Node, PlacementGroup
from raytop.model.collectives import FlightRecorderReport
from raytop.model.finding import Finding
from raytop.model.jobs import DERIVED_FIELDS as JOB_DERIVED_FIELDS
from raytop.model.jobs import Job
from raytop.model.stdlib import StrEnum
from raytop.model.train_run import TrainRun
from raytop.model.train_run_json import run_from_json, with_json_said
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

    def known_at(self, now: float) -> float:
        """When what the ledger holds is known true: its last publish (it republishes every
        second, changed or not), never later than ``now``. A wait the ledger shows is
        judged up to here, not to ``now``: while it is gone its counts are frozen, and a
        report the controller had not yet taken when it died must not grow into one the
        controller never takes."""
        return now if self.published_at is None else min(now, self.published_at)


@dataclass(frozen=True)
class BestTrial:
    """The trial with the best value of the experiment's metric, by its mode."""

    trial_id: str
    metric: str
    value: float | int


def best_trial(trials: tuple[Trial, ...], metric: str | None, mode: str | None) -> BestTrial | None:
    """The best trial by ``metric`` and ``mode`` (``max`` or ``min``), among the trials that
    reported a finite number for it (NaN, infinities, booleans and text are left out);
    on a tie, the first in the experiment's order. None without a metric, a known mode or
    a trial that reported it. Derived once by the pipeline (``Experiment.best_trial``)."""
    if not metric or mode not in ("max", "min"):
        return None
    best: BestTrial | None = None
    for t in trials:
        value = t.metrics.get(metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value):
            continue
        better = best is None or (value > best.value if mode == "max" else value < best.value)
        if better:
            best = BestTrial(t.trial_id, metric, value)
    return best


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
    # The trials the sweep will have in all, when known for sure (raytop's own launches:
    # grid points × num_samples, from driver.json); Tune creates trials lazily, so
    # ``len(trials)`` may be fewer. None: not known.
    trials_total: int | None = None
    best_trial: BestTrial | None = None  # ``best_trial(...)``, derived by the pipeline

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

    @property
    def ages_at(self) -> float:
        """The time its runs' ages are said as of: the ledger's last publish (never later
        than ``taken_at``; ``LedgerStatus.known_at``), for every face and judgement alike.
        The model carries times; an age is said from them at this time."""
        return self.ledger.known_at(self.taken_at) if self.ledger is not None else self.taken_at

    def ages_at_for(self, run: TrainRun) -> float:
        """``ages_at`` for a run its probes report through the ledger; ``taken_at`` for one
        known from the actor table or Train's own state, read at this snapshot (a ledger
        gone silent does not stop its attempt's clock)."""
        return self._ages_at(run.instrumented)

    def _ages_at(self, instrumented: bool) -> float:
        return self.ages_at if instrumented else self.taken_at

    def to_json(self) -> dict[str, Any]:
        """The schema's shape, strict: ``model.strict_json`` (no NaN, no credentials); its
        runs' ages (as of ``ages_at_for`` each) and ranks' time shares said
        (``train_run_json.with_json_said``)."""
        data, non_finite = strict_json.strict(self)
        runs = [r for e in data.get("experiments", ()) for r in e.get("runs", ())]
        for run in runs + list(data.get("runs", ())):
            with_json_said(run, self._ages_at(run["instrumented"]))
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
            e["runs"] = tuple(run_from_json(r) for r in e.get("runs", ()))
            e["best_trial"] = BestTrial(**e["best_trial"]) if e.get("best_trial") else None
            experiments.append(Experiment(**e))
        ledger = data.get("ledger")
        findings = tuple(finding.from_json(f) for f in data.get("findings", ()))
        return cls(
            taken_at=data["taken_at"],
            cluster=Cluster(**cluster),
            experiments=tuple(experiments),
            findings=findings,
            runs=tuple(run_from_json(r) for r in data.get("runs", ())),
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
