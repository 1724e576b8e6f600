"""Train runs raytop did not instrument, found in the cluster's actor table.

A Ray Train V2 run is a ``TrainController`` actor that owns one ``RayTrainWorker`` actor per
rank (``ray/train/v2/_internal/execution/controller/controller.py`` creates the worker
group from the controller, Ray 2.58). Without raytop's probe in its workers there are no
report counts, but the actor table still says that the run exists, which job started it
(the controller's ``job_id``), how many workers it has, and where each runs (pid, node).
Such a run is shown with ``instrumented=False`` and ``probe_hint``: one line on what would
give its counts, naming who must carry ``RAY_TRAIN_CALLBACKS``: Train reads it in the
process that calls ``fit()`` (``DataParallelTrainer._create_default_callbacks`` →
``_initialize_env_callbacks``, ``ray/train/v2/api/data_parallel_trainer.py``), the job's
driver, or the actor that owns the controller (a Tune trial's, on any node). The job's
entrypoint is the job table's to say (``TrainRun.job_entrypoint``).

A controller is left out when the ledger already has a live probed process among its
workers (the probe is there), or when it belongs to a Tune trial raytop launched (its probe
reports once the worker group is up). A probed process is its pid on its node, and only
while its probe beats (``_claims``): pids repeat across nodes, and a host reuses the pid of
a process that ended (Linux's default ``pid_max`` is 32,768). Seen on a real cluster: a run
with no probe never listed, because one of its workers had the pid a probed worker of an
earlier run had had.

When the run's driver turned Train's state tracking on (``RAY_TRAIN_ENABLE_STATE_TRACKING=1``),
Train's own state knows the run by its controller's actor id (``sources.train_state``):
then the run has Train's name, its attempts, and its latest attempt's workers by world rank
(``source="train_state"``). Train's state is asked only when there is such a run to complete.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from raytop.model import TrainRun, Worker
from raytop.model.identity import same_items
from raytop.model.records import MAX_ATTEMPTS
from raytop.model.train_run import RUN_FROM_ACTOR_TABLE, RUN_FROM_TRAIN_STATE
from raytop.model.train_state import StateRun, attempt_of

CONTROLLER = "TrainController"
WORKER = "RayTrainWorker"
README_SECTION = "Every run on a KubeRay cluster"
_NEEDS = (
    "per-rank counts need raytop's probe: raytop installed where the workers run and "
    "RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe in the environment of "
)
DRIVER_HINT = f"{_NEEDS}the job's driver (README: {README_SECTION})"
ACTOR_HINT = (
    f"{_NEEDS}the actor that builds the trainer (a Tune trial's: set it in every node's "
    f"Ray container) (README: {README_SECTION})"
)


def uninstrumented_runs(
    actors: dict[str, dict[str, Any]],
    instrumented: Iterable[TrainRun],
    launched_by_raytop: Callable[[str], bool],
    train_state: Callable[[], Mapping[str, StateRun]] | None = None,
    now: float = 0.0,
    beats_known_at: float | None = None,
    probed_processes: Callable[[tuple[TrainRun, ...], float], Probed] | None = None,
) -> tuple[TrainRun, ...]:
    """``actors``: the alive actors as ``wire.gcs.GcsReader.actors`` returns them;
    ``launched_by_raytop(owner address)``: the controller was created by a raytop trial;
    ``train_state()``: Train's own runs by controller actor id, called only when a
    controller is left to show; ``now``: the snapshot's time (unix s);
    ``beats_known_at``: when the probed workers' beats were last known (the ledger's last
    publish; default ``now``); ``probed_processes``: a
    caller's ``KeptProbed.of``, else worked out afresh."""
    # Most controllers on a cluster raytop watches are its own trials': the probed
    # processes and the workers by owner are worked out only when another's is left.
    controllers = sorted(
        (actor_id, actor) for actor_id, actor in actors.items()
        if actor["class_name"] == CONTROLLER and not launched_by_raytop(actor["owner"])
    )  # fmt: skip
    if not controllers:
        return ()
    probe = probed_processes or _probed_processes
    probed = probe(tuple(instrumented), now if beats_known_at is None else beats_known_at)
    workers_of: dict[str, list[dict[str, Any]]] = {}
    for actor in actors.values():
        if actor["class_name"] == WORKER:
            workers_of.setdefault(actor["owner"], []).append(actor)
    found = []
    for actor_id, controller in controllers:
        members = sorted(workers_of.get(controller["address"], []), key=lambda a: a["pid"])
        if any(_claims(probed, a) for a in members):
            continue
        found.append((actor_id, controller, members))
    known = train_state() if found and train_state is not None else {}
    actor_addresses = {a["address"] for a in actors.values()}
    return tuple(
        dataclasses.replace(
            from_train_state(actor_id, known[actor_id])
            if actor_id in known
            else from_actor_table(actor_id, controller, members),
            job_id=controller["job_id"],
            probe_hint=ACTOR_HINT if controller["owner"] in actor_addresses else DRIVER_HINT,
        )
        for actor_id, controller, members in found
    )


# A probe beats at least once a second; a worker silent this long no longer claims its pid
# (its process ended, or the pid went to another process).
CLAIM_BEAT_S = 60.0


Probed = dict[int, set[str | None]]


def _probed_processes(instrumented: Iterable[TrainRun], now: float) -> Probed:
    """pid → the nodes (None: not known) of the probed workers that beat within
    ``CLAIM_BEAT_S`` of ``now``, or sent no beat time at all."""
    return _claimed(instrumented, now)[0]


def _claimed(instrumented: Iterable[TrainRun], now: float) -> tuple[Probed, float]:
    """(``_probed_processes``, the first time after ``now`` at which one of those workers
    stops claiming its pid: until then, and for the same runs, the answer is the same)."""
    probed: Probed = {}
    until = float("inf")
    for run in instrumented:
        for w in run.workers:
            if w.pid is None:
                continue
            if w.heartbeat_at is not None:
                if now - w.heartbeat_at > CLAIM_BEAT_S:
                    continue
                until = min(until, w.heartbeat_at + CLAIM_BEAT_S)
            probed.setdefault(w.pid, set()).add(w.node_id)
    return probed, until


class KeptProbed:
    """``_probed_processes``, kept while the runs are the very same objects and no worker's
    claim has run out: 2,000 workers walked at every refresh were ~1.5 ms of one in which
    nothing changed (docs/PERFORMANCE.md, issue 25). A run that changed keeps its own
    claims when each of its workers claims what it did (``_same_claims``): a report or a
    heartbeat re-makes a run without moving a pid, and at 1 × 2,000 ranks walking its
    workers to make their claims again was 3-6 ms of every such refresh. The runs' claims
    are then merged (the very merge again when no run's claims moved). Not to be changed
    by its callers: a pid's set of nodes may be a run's own."""

    def __init__(self) -> None:
        self._runs: tuple[TrainRun, ...] = ()
        self._made: tuple[Probed, float, float] | None = None  # (probed, as of, until)
        # run id → (the run, its claims, as of, until)
        self._each: dict[str, tuple[TrainRun, Probed, float, float]] = {}
        self._claims: list[Probed] = []  # each run's claims, as merged into ``_made``

    def of(self, instrumented: tuple[TrainRun, ...], now: float) -> Probed:
        made = self._made
        if made is not None and made[1] <= now <= made[2] and same_items(self._runs, instrumented):
            return made[0]
        before, self._each = self._each, {}
        until, each = float("inf"), []
        for run in instrumented:
            kept = before.get(run.run_id)
            if kept is not None and kept[0] is not run and kept[2] <= now <= kept[3]:
                same = _same_claims(kept[0], run, now)
                kept = (run, kept[1], kept[2], kept[3]) if same else None
            if kept is None or not kept[2] <= now <= kept[3]:
                claims, run_until = _claimed((run,), now)
                kept = (run, claims, now, run_until)
            self._each[run.run_id] = kept
            each.append(kept[1])
            until = min(until, kept[3])
        if made is not None and same_items(self._claims, each):
            probed = made[0]  # no run's claims moved: the very merge
        else:
            probed = {}
            for claims in each:
                for pid, nodes in claims.items():
                    held = probed.get(pid)
                    probed[pid] = nodes if held is None else held | nodes
        self._runs, self._claims, self._made = instrumented, each, (probed, now, until)
        return probed


def _same_claims(before: TrainRun, after: TrainRun, now: float) -> bool:
    """Whether ``after``'s workers claim, at ``now``, just what ``before``'s did (worker by
    worker): the same pids on the same nodes, and a heartbeat that moved only later, its
    worker claiming then as before. Its claims' end is then no sooner than ``before``'s."""
    if len(before.workers) != len(after.workers):
        return False
    for old, new in zip(before.workers, after.workers, strict=True):
        if old is new:
            continue
        if old.pid != new.pid or old.node_id != new.node_id:
            return False
        was, beat = old.heartbeat_at, new.heartbeat_at
        if was == beat:
            continue
        if was is None or beat is None or beat < was or now - was > CLAIM_BEAT_S:
            return False
    return True


def _claims(probed: dict[int, set[str | None]], actor: dict[str, Any]) -> bool:
    """A probed worker is the process of ``actor``: its pid, on its node (or a node unknown)."""
    nodes = probed.get(actor["pid"], ())
    return None in nodes or actor["node_id"] in nodes


def from_actor_table(
    actor_id: str, controller: dict[str, Any], members: list[dict[str, Any]]
) -> TrainRun:
    """A controller and its worker actors (``members``, in pid order) as a run."""
    return TrainRun(
        run_id=f"actor-{actor_id}",
        run_name=f"Train run of job {controller['job_id']} (no probe)",
        attempt_id=actor_id,
        world_size=len(members),
        workers=tuple(
            Worker(rank=i, pid=a["pid"], node_id=a["node_id"]) for i, a in enumerate(members)
        ),
        instrumented=False,
        source=RUN_FROM_ACTOR_TABLE,
    )


def from_train_state(actor_id: str, state: StateRun) -> TrainRun:
    """The run of controller ``actor_id`` as Train's state has it: its name, its newest
    ``MAX_ATTEMPTS`` attempts (numbered in the whole run), and the workers of its latest
    attempt by world rank while that attempt runs (none while it is being scheduled, or
    once it ended: Train's list then names processes that are gone). The id stays the
    actor table's, so the run keeps its place on screen whichever source answered."""
    first = max(0, len(state.attempts) - MAX_ATTEMPTS)
    attempts = tuple(
        attempt_of(a, index) for index, a in enumerate(state.attempts[first:], start=first + 1)
    )
    latest = state.attempts[-1] if state.attempts else None
    workers = latest.workers if latest and latest.status == "RUNNING" else ()
    return TrainRun(
        run_id=f"actor-{actor_id}",
        run_name=state.name,
        attempt_id=latest.attempt_id if latest else actor_id,
        world_size=latest.size if latest else 0,
        attempt_index=max(1, len(state.attempts)),
        workers=tuple(
            Worker(
                rank=w.world_rank,
                local_rank=w.local_rank,
                node_rank=w.node_rank,
                node_id=w.node_id,
                pid=w.pid,
                gpu_ids=w.gpu_ids,
                declared_resources=dict(w.resources),
            )
            for w in workers
        ),
        instrumented=False,
        attempts=attempts,
        source=RUN_FROM_TRAIN_STATE,
    )


def with_job_entrypoints(
    runs: Iterable[TrainRun], entrypoints: Mapping[str, str]
) -> tuple[TrainRun, ...]:
    """``runs`` with each run that names its job (``job_id``) given that job's entrypoint
    (``entrypoints``: job id → entrypoint, as the cluster's job table says; an empty one is
    not known). The join is by id, never by a run's name."""
    return tuple(
        dataclasses.replace(run, job_entrypoint=entrypoints[run.job_id])
        if run.job_id is not None and entrypoints.get(run.job_id)
        else run
        for run in runs
    )
