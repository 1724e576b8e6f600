"""Shared fixtures for the TUI tests: realistic snapshots and a scripted collector.

Every Train run goes through ``pipeline.derive.with_rank_states`` where it is built, as
the collector's do: the screens only display ``Worker.state`` and ``Worker.behind``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from raytop.diagnose.checkpoints import checkpoint_findings
from raytop.diagnose.hang import hang_findings
from raytop.diagnose.ledger import run_findings
from raytop.diagnose.retries import attempt_findings
from raytop.model import (
    Activity,
    Attempt,
    Bundle,
    CheckpointRecord,
    Cluster,
    Experiment,
    ExperimentStatus,
    Finding,
    HostStats,
    Node,
    PlacementGroup,
    RetryBudget,
    Severity,
    Snapshot,
    TrainRun,
    Trial,
    Worker,
)
from raytop.model.nccl_ras import RayHangDetector
from raytop.model.no_probe import CALLBACKS_UNSET, NoProbe
from raytop.model.resume import PreviewRow, ResumePreview, StoredExperiment
from raytop.model.snapshot import best_trial
from raytop.model.thresholds import Thresholds
from raytop.model.workloads import (
    KIND_EXPERIMENT,
    KIND_JOB,
    KIND_TRAIN_RUN,
    ORIGIN_DRIVER,
    ORIGIN_RAY_JOB,
    ORIGIN_RAYTOP,
    Workload,
)
from raytop.pipeline.derive import with_rank_states, with_ray_detector
from raytop.tui.app import RaytopApp

NOW = 1_767_225_600.0  # a fixed "wall clock" for every test
RUN_ID = "5f0c2e9a7b1d4c3e8a6b"

NO_PROBE_WHY = (
    "RAY_TRAIN_CALLBACKS is not set in job 07000000's driver (pid 4242): set "
    "RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe there"
)


class FakeCollector:
    """Returns (or raises) the prepared steps in order, then repeats the last one."""

    def __init__(self, *steps: Snapshot | Exception) -> None:
        self.steps = list(steps)
        self.calls = 0

    def collect(self) -> Snapshot:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, Exception):
            raise step
        return step


class StackCollector(FakeCollector):
    """A collector that can also fetch stacks: returns (or raises) ``stacks``."""

    def __init__(self, *steps: Snapshot | Exception, stacks: Snapshot | Exception) -> None:
        super().__init__(*steps)
        self.stacks = stacks
        self.stack_calls: list[tuple[str, float]] = []
        self.stack_threads: list[threading.Thread] = []
        self.native_calls: list[bool] = []

    def request_stacks(self, run_id: str, timeout_s: float = 5.0, native: bool = False) -> Snapshot:
        self.stack_calls.append((run_id, timeout_s))
        self.native_calls.append(native)
        self.stack_threads.append(threading.current_thread())
        if isinstance(self.stacks, Exception):
            raise self.stacks
        return self.stacks


def _cluster() -> Cluster:
    head = Node(
        node_id="a3f9c2d1e0b4",
        address="10.42.0.17",
        alive=True,
        is_head=True,
        resources_total={"CPU": 4.0, "memory": 8.0e9},
        resources_available={"CPU": 2.0, "memory": 6.5e9},
    )
    return Cluster(address="10.42.0.17:6379", connected=True, ray_version="2.58.1", nodes=(head,))


def _trial(
    trial_id: str,
    status: str,
    *,
    lr: float,
    hidden: int,
    loss: float | None = None,
    iterations: int = 0,
    **more: Any,
) -> Trial:
    """A trial of the sweep; a reported ``loss`` comes with its ``training_iteration``.
    The sweep stops each trial at 20 iterations (``[tune] stop_iterations = 20``)."""
    metrics = {} if loss is None else {"loss": loss, "training_iteration": iterations}
    config = {"lr": lr, "hidden": hidden}
    more.setdefault("max_iterations", 20)
    return Trial(trial_id, status, config=config, metrics=metrics, iterations=iterations, **more)


def _losses(start: float, end: float, count: int, wobble: float = 0.0) -> tuple[float, ...]:
    """A loss curve of ``count`` values from ``start`` down (or up) to ``end``: geometric,
    with an alternating ``wobble`` so the sparklines are not all the same shape."""
    if count == 1:
        return (end,)
    ratio = (end / start) ** (1 / (count - 1))
    values = [start * ratio**i + (wobble if i % 3 == 1 else 0.0) for i in range(count)]
    values[-1] = end
    return tuple(round(v, 4) for v in values)


def _trials() -> tuple[Trial, ...]:
    return (
        _trial("7d2a1_00000", "RUNNING", lr=0.01, hidden=64, loss=0.4213, iterations=12,
               elapsed_s=95.3, metric_history=_losses(2.3, 0.4213, 12, 0.05)),
        _trial("7d2a1_00001", "RUNNING", lr=0.001, hidden=128, loss=0.6871, iterations=9,
               elapsed_s=88.0, metric_history=_losses(2.3, 0.6871, 9)),
        _trial("7d2a1_00002", "PENDING", lr=0.0001, hidden=32),
        _trial("7d2a1_00003", "TERMINATED", lr=0.1, hidden=256, loss=0.2954, iterations=20,
               elapsed_s=201.7, metric_history=_losses(2.3, 0.2954, 20, 0.1)),
        _trial("7d2a1_00004", "ERROR", lr=0.5, hidden=64, loss=3.912, iterations=3,
               elapsed_s=31.2, num_failures=1, error="ValueError: loss became NaN",
               metric_history=(2.3, 2.9, 3.912)),
    )  # fmt: skip


@pytest.fixture
def sweep() -> Snapshot:
    """The torch_sweep experiment mid-run on a one-node cluster, with one finding."""
    experiment = Experiment(
        name="torch_sweep",
        path="/home/ray/ray_results/torch_sweep",
        status=ExperimentStatus.RUNNING,
        metric="loss",
        mode="min",
        trials=_trials(),
        driver_pid=4242,
        driver_alive=True,
        best_trial=best_trial(_trials(), "loss", "min"),  # as the pipeline derives it
    )
    finding = Finding(
        kind="trial_error",
        severity=Severity.ERROR,
        subject="trial 7d2a1_00004",
        message="ValueError: loss became NaN (1 failure)",
    )
    return Snapshot(
        taken_at=NOW - 2, cluster=_cluster(), experiments=(experiment,), findings=(finding,)
    )


@pytest.fixture
def disconnected(sweep: Snapshot) -> Snapshot:
    """What a collector returns once the GCS stops answering: no nodes, no experiments."""
    cluster = Cluster(
        address="10.42.0.17:6379", connected=False, error="GCS at 10.42.0.17:6379 unreachable"
    )
    return Snapshot(taken_at=NOW - 1, cluster=cluster)


@pytest.fixture
def next_tick(sweep: Snapshot) -> Callable[..., Snapshot]:
    """Builds the following snapshot: given trials replace theirs by id, ``drop`` removes."""

    def build(*changed: Trial, drop: tuple[str, ...] = ()) -> Snapshot:
        experiment = sweep.experiments[0]
        by_id = {t.trial_id: t for t in changed}
        trials = tuple(
            by_id.get(t.trial_id, t) for t in experiment.trials if t.trial_id not in drop
        )
        return replace(
            sweep,
            taken_at=sweep.taken_at + 1,
            experiments=(replace(experiment, trials=trials),),
        )

    return build


def _rank(
    rank: int,
    taken_at: float,
    *,
    entered: int,
    exited: int,
    entered_ago: float,
    exited_ago: float,
    beat_ago: float,
    **probe: Any,
) -> Worker:
    """A rank on the one node; its times ``*_ago`` seconds before ``taken_at``."""
    return Worker(
        rank=rank,
        reports_entered=entered,
        reports_exited=exited,
        local_rank=rank,
        node_id="a3f9c2d1e0b4f7a8",
        node_rank=0,
        usual_interval_s=8.0,
        last_enter_at=taken_at - entered_ago,
        last_exit_at=taken_at - exited_ago,
        heartbeat_at=taken_at - beat_ago,
        **probe,
    )


# The two ranks' reports, seconds before ``taken_at``: when each entered, and when the
# barrier let both out (rank 1 is the slower one: the last to arrive, the first out).
_RANK0_ENTERED = (108.9, 101.2, 93.0, 84.6, 75.0)
_RANK1_ENTERED = (108.3, 100.4, 92.1, 84.0)
_BARRIER_EXITS = (107.9, 100.0, 91.7, 83.0)


def _history(taken_at: float, entered: tuple[float, ...]) -> dict[str, tuple]:
    """``report_times`` / ``report_exits`` of a rank (``None``: still inside the last)."""
    exits = [*_BARRIER_EXITS, None][: len(entered)]
    return {
        "report_times": tuple(taken_at - ago for ago in entered),
        "report_exits": tuple(None if ago is None else taken_at - ago for ago in exits),
    }


def _stalled_run(taken_at: float) -> TrainRun:
    """Trial 7d2a1_00000's two ranks: rank 0 waits in report 5; rank 1 never got there."""
    waiting, behind = (
        _rank(0, taken_at, entered=5, exited=4, entered_ago=75.0, exited_ago=83.0,
              beat_ago=0.4, pid=51234, cpu_percent=1.0, rss_bytes=1_900_000_000,
              **_history(taken_at, _RANK0_ENTERED)),
        _rank(1, taken_at, entered=4, exited=4, entered_ago=84.0, exited_ago=83.0,
              beat_ago=0.6, pid=51235, cpu_percent=99.0, rss_bytes=2_300_000_000,
              **_history(taken_at, _RANK1_ENTERED)),
    )  # fmt: skip
    run = TrainRun(
        run_id=RUN_ID,
        run_name="TorchTrainer_7d2a1_00000",
        attempt_id="attempt-9c41e",
        world_size=2,
        attempt_index=1,
        trial_id="7d2a1_00000",
        workers=(waiting, behind),
    )
    return with_rank_states(run, Thresholds(), taken_at)


@pytest.fixture
def stall_run(sweep: Snapshot) -> TrainRun:
    return _stalled_run(sweep.taken_at)


@pytest.fixture
def stalled(sweep: Snapshot, stall_run: TrainRun) -> Snapshot:
    """``sweep`` whose first trial's Train run hangs at the report barrier, diagnosed by
    the real ledger rules (so the ``barrier_stall`` evidence is what the product makes)."""
    experiment = replace(sweep.experiments[0], runs=(stall_run,))
    findings = (*run_findings(stall_run, Thresholds(), sweep.taken_at), *sweep.findings)
    return replace(sweep, experiments=(experiment,), findings=findings)


@pytest.fixture
def collective_hung(sweep: Snapshot) -> Snapshot:
    """``sweep`` whose first trial's Train run (3 ranks) hangs below the report level:
    ranks 0 and 2 wait in all_reduce, rank 1 sleeps in its own step. Diagnosed by the real
    rules (``diagnose.hang``, learned threshold)."""
    t = sweep.taken_at
    entered = (74.0, 66.0, 58.0, 50.0, 42.0)  # reports every 8 s, the last 42 s ago

    def rank(r: int, kind: str, where: str) -> Worker:
        return _rank(
            r, t, entered=5, exited=5, entered_ago=42.0, exited_ago=41.8, beat_ago=0.5,
            pid=51234 + r, cpu_percent=0.0 if kind == "collective" else 1.0,
            rss_bytes=1_900_000_000, report_times=tuple(t - a for a in entered),
            report_exits=tuple(t - a + 0.2 for a in entered),
            activity=Activity(kind, where, t - 40.0, t - 0.5, samples=60, waiting=0.2),
        )  # fmt: skip

    reduce = "torch.distributed.all_reduce from train_step (loop.py:41) dist.all_reduce(grad)"
    sleep = "train_step (loop.py:38) time.sleep(600)"
    run = TrainRun(
        run_id=RUN_ID, run_name="TorchTrainer_7d2a1_00000", attempt_id="attempt-9c41e",
        world_size=3, attempt_index=1, trial_id="7d2a1_00000",
        workers=(rank(0, "collective", reduce), rank(1, "user", sleep),
                 rank(2, "collective", reduce)),
    )  # fmt: skip
    run = with_rank_states(run, Thresholds(), t)
    experiment = replace(sweep.experiments[0], runs=(run,))
    findings = (*hang_findings(run, Thresholds(), t), *sweep.findings)
    return replace(sweep, experiments=(experiment,), findings=findings)


@pytest.fixture
def retrying(sweep: Snapshot, stall_run: TrainRun) -> Snapshot:
    """``sweep`` whose first trial's Train run (max_failures=2) failed twice with the same
    error and runs its third attempt, which restarted below its checkpoint's epoch; the
    trial allows Tune 2 retries. Findings by the real rules (``diagnose.retries``)."""
    t = sweep.taken_at
    boom = "CUDA error: an illegal memory access was encountered on device 1"
    attempts = (
        Attempt(1, "errored", t - 300.0, attempt_id="attempt-1a", ended_at=t - 200.0,
                duration_s=100.0, error_class="RuntimeError", error=boom,
                failure_class="worker", first_report={"epoch": 0.0}),
        Attempt(2, "errored", t - 195.0, attempt_id="attempt-2b", ended_at=t - 100.0,
                duration_s=95.0, error_class="RuntimeError", error=boom,
                failure_class="worker", restored={"epoch": 3.0}, first_report={"epoch": 4.0}),
        Attempt(3, "running", t - 95.0, attempt_id="attempt-9c41e",
                restored={"epoch": 7.0}, first_report={"epoch": 0.0}),
    )  # fmt: skip
    budget = {
        "worker": RetryBudget("max_failures", 2, 2, 0),
        "controller": RetryBudget("controller_failure_limit", -1, 0, -1),
        "preemption": RetryBudget("max_preemption_failures", -1, 0, -1),
    }
    run = replace(stall_run, attempt_index=3, attempts=attempts, retry_budget=budget)
    trials = list(sweep.experiments[0].trials)
    trials[0] = replace(trials[0], num_failures=1, max_failures=2)
    experiment = replace(sweep.experiments[0], runs=(run,), trials=tuple(trials))
    findings = (*attempt_findings(run, ended=False), *sweep.findings)
    return replace(sweep, experiments=(experiment,), findings=findings)


@pytest.fixture
def detector_watched(stalled: Snapshot) -> Snapshot:
    """``stalled`` on Ray 2.60 with its NCCL hang detector on (observe, Ray's defaults) and
    no verdict yet: raytop names the stall, Ray has not confirmed anything."""
    experiment = stalled.experiments[0]
    detector = RayHangDetector("on", "2.60.0", "observe", 15.0, 600.0)
    run = with_ray_detector(replace(experiment.runs[0], ray_detector=detector))
    return replace(stalled, experiments=(replace(experiment, runs=(run,)),))


CKPT_COLLIDED = "checkpoint_2025-12-31_12-58-41.093114"
CKPT_UPLOADED = "checkpoint_2025-12-31_12-59-52.771405"
CKPT_UPLOADING = "checkpoint_2025-12-31_13-00-02.518209"
RUN_PATH = "/home/ray/ray_results/torch_sweep/TorchTrainer_7d2a1_00000"


def _checkpoints(taken_at: float) -> tuple[CheckpointRecord, ...]:
    """Oldest first: both ranks wrote model.pt into report 3's checkpoint (committed),
    report 4's is on storage, report 5's is still uploading with the user's function."""
    return (
        CheckpointRecord(CKPT_COLLIDED, "committed", report_index=3, ranks=(0, 1), files=2,
                         bytes=2 * 48 * 2**20 + 4_096, mode="SYNC", upload_s=3.42,
                         collisions={"model.pt": (0, 1)}, throughput_bps=29_433_000.0,
                         sync_s={0: 0.01, 1: 0.42}),
        CheckpointRecord(CKPT_UPLOADED, "uploaded", report_index=4, ranks=(0,), files=2,
                         bytes=48 * 2**20 + 2_048, mode="SYNC", upload_s=2.96,
                         throughput_bps=17_003_000.0, sync_s={0: 0.02, 1: 1.5}),
        CheckpointRecord(CKPT_UPLOADING, "uploading", report_index=5, ranks=(0, 1), files=4,
                         bytes=1_288_490_189, mode="ASYNC", custom_upload=True,
                         upload_s=74.2, uploading_since=taken_at - 74.2),
    )  # fmt: skip


def with_checkpoints(
    snapshot: Snapshot, run: TrainRun, *checkpoints: CheckpointRecord, dt: float = 0.0
) -> Snapshot:
    """``snapshot`` whose first experiment's run is ``run`` with these ``checkpoints``;
    its checkpoint findings re-diagnosed by the real rules, the other findings kept."""
    run = replace(run, checkpoints=checkpoints)
    experiment = replace(snapshot.experiments[0], runs=(run,))
    kept = tuple(f for f in snapshot.findings if not f.kind.startswith("checkpoint_"))
    found = checkpoint_findings(run, Thresholds().checkpoint_slow_after_s)
    return replace(
        snapshot,
        taken_at=snapshot.taken_at + dt,
        experiments=(experiment,),
        findings=(*kept, *found),
    )


@pytest.fixture
def checkpoint_run(stall_run: TrainRun) -> TrainRun:
    return replace(stall_run, run_path=RUN_PATH)


@pytest.fixture
def checkpointed(stalled: Snapshot, checkpoint_run: TrainRun) -> Snapshot:
    """``stalled`` whose run has 3 checkpoints (a collision, an uploaded one, one still
    uploading ASYNC with a custom upload function) and the ``checkpoint_collision``."""
    return with_checkpoints(stalled, checkpoint_run, *_checkpoints(stalled.taken_at))


RANK0_STACK = """\
Thread MainThread (most recent call last):
  File "/home/ray/train_sweep.py", line 58, in train_loop_per_worker
    ray.train.report({"loss": loss}, checkpoint=checkpoint)
  File "/home/ray/.venv/lib/python3.11/site-packages/ray/train/v2/api/train_fn_utils.py", \
line 50, in report
    get_train_fn_utils().report(metrics, checkpoint)
  File "/usr/lib/python3.11/threading.py", line 324, in wait
    gotit = waiter.acquire(True, timeout)
"""

RANK1_STACK = """\
Thread MainThread (most recent call last):
  File "/home/ray/train_sweep.py", line 52, in train_loop_per_worker
    val_loss = evaluate(model, val_loader)
  File "/home/ray/train_sweep.py", line 31, in evaluate
    for batch in loader:
  File "/home/ray/.venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", \
line 701, in __next__
    data = self._next_data()
"""


@pytest.fixture
def with_stacks(stalled: Snapshot) -> Snapshot:
    """What ``request_stacks`` returns for the stalled run: both ranks answered."""
    experiment = stalled.experiments[0]
    (run,) = experiment.runs
    stacks = {0: RANK0_STACK, 1: RANK1_STACK}
    workers = tuple(replace(w, stack=stacks[w.rank], stack_request="req-1") for w in run.workers)
    run = replace(run, workers=workers)
    return replace(
        stalled, taken_at=stalled.taken_at + 1, experiments=(replace(experiment, runs=(run,)),)
    )


HEAD_NODE = "a3f9c2d1e0b4f7a8c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7"
CPU_NODE = "5be81f0c7a2d9e6b3c4f1a0d8e7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a"
DEAD_NODE = "c7d46e2a1b0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b"
TRAIN_PG = "1f8e2d3c4b5a69788796a5b4c3d2e1f001000000"
TRIAL_PG = "2a9b8c7d6e5f40312233445566778899a1000000"
WAITING_PG = "9b2e4f1066d5c4b3a2f1e0d9c8b7a6f501000000"
TPU_PG = "d04c3b2a1f0e9d8c7b6a5f4e3d2c1b0a05000000"
LEAKED_PG = "e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b002000000"
# raytop's sentence for t2's group (3 GPUs): of the head's 4 (the only GPUs), exp-t1's
# two ranks hold 2 and 2 are free (test_placement.test_the_fixture_says_why_as_raytop_would)
GPU_WAIT = "fits, but 2 of 4 GPU are held by Train run exp-t1"
TPU_WHY = "bundle 0 needs {TPU: 1}; no node has TPU"


def _ray_node(
    node_id: str,
    address: str,
    total: dict[str, float],
    used: dict[str, float],
    *,
    is_head: bool = False,
    labels: dict[str, str],
) -> Node:
    """A node as Ray reports it: with its ``node:<address>`` resource, and a resource left
    out of the available map once it is fully used."""
    total = {**total, f"node:{address}": 1.0}
    available = {r: v - used.get(r, 0.0) for r, v in total.items() if v > used.get(r, 0.0)}
    return Node(node_id, address, alive=True, is_head=is_head, resources_total=total,
                resources_available=available, labels=labels)  # fmt: skip


def _placement_nodes() -> tuple[Node, ...]:
    """A head with 4 GPUs (2 held by exp-t1's ranks), a CPU-only worker, a dead node."""
    head_total = {"CPU": 8.0, "GPU": 4.0, "memory": 32 * 2**30, "object_store_memory": 9.5 * 2**30,
                  "node:__internal_head__": 1.0, "accelerator_type:A10G": 1.0,
                  f"GPU_group_{TRAIN_PG}": 2.0, f"CPU_group_0_{TRAIN_PG}": 1.0}  # fmt: skip
    head_used = {"CPU": 2.0, "GPU": 2.0, "memory": 2 * 2**30,
                 f"GPU_group_{TRAIN_PG}": 2.0, f"CPU_group_0_{TRAIN_PG}": 1.0}  # fmt: skip
    head = _ray_node(HEAD_NODE, "10.42.0.17", head_total, head_used, is_head=True,
                     labels={"ray.io/node-id": HEAD_NODE, "zone": "us-west-2a"})  # fmt: skip
    worker = _ray_node(CPU_NODE, "10.42.0.23", {"CPU": 16.0, "memory": 64 * 2**30, "hi_mem": 2.0},
                       {"CPU": 2.0}, labels={"zone": "us-west-2b"})  # fmt: skip
    dead = Node(DEAD_NODE, "10.42.0.31", alive=False, is_head=False,
                resources_total={"CPU": 8.0, "memory": 32 * 2**30})  # fmt: skip
    # raytop runs on the head's host: the OS's figures for it, none for the others
    host = HostStats(cpu_percent=87.0, cpus=8, memory_used=29 * 2**30, memory_total=32 * 2**30)
    return (replace(head, host=host), worker, dead)


def _gpu_rank(rank: int, gpu: str) -> Worker:
    return Worker(rank=rank, reports_entered=7, reports_exited=7, local_rank=rank,
                  node_id=HEAD_NODE, node_rank=0, pid=61200 + rank, gpu_ids=(gpu,))  # fmt: skip


def _group(pg_id: str, state: str, *bundles: Bundle, **more: Any) -> PlacementGroup:
    return PlacementGroup(pg_id, "PACK", state, "FINISHED" if state == "CREATED" else
                          "NO_RESOURCES", bundles=bundles, **more)  # fmt: skip


def _placement_groups() -> tuple[PlacementGroup, ...]:
    """Created first in the snapshot, so the screen's "waiting first" has work to do."""
    gpu_cpu = {"GPU": 1.0, "CPU": 1.0}
    return (
        _group(TRAIN_PG, "CREATED", Bundle(0, gpu_cpu, HEAD_NODE), Bundle(1, gpu_cpu, HEAD_NODE),
               attempts=1, age_s=312.0, owner_kind="train_run", owner="exp-t1", experiment="exp"),
        _group(TRIAL_PG, "CREATED", Bundle(0, {"CPU": 0.0, "memory": 1.0}, CPU_NODE),
               attempts=1, age_s=318.0, owner_kind="trial", owner="t1", experiment="exp"),
        _group(WAITING_PG, "PENDING", Bundle(0, {"GPU": 3.0}), attempts=14, age_s=95.0,
               owner_kind="pending_trial", experiment="exp", why_pending=GPU_WAIT),
        replace(
            _group(TPU_PG, "PENDING", Bundle(0, {"TPU": 1.0}), attempts=3, age_s=41.0,
                   owner="job 05000000", why_pending=TPU_WHY),
            scheduling_state="INFEASIBLE", strategy="STRICT_PACK",
        ),
        _group(LEAKED_PG, "CREATED", Bundle(0, {"CPU": 2.0}, CPU_NODE), attempts=1,
               age_s=4_000.0, owner="job 02000000", leaked=True),
    )  # fmt: skip


@pytest.fixture
def placement(sweep: Snapshot) -> Snapshot:
    """Experiment ``exp``: trial t1's Train run exp-t1 holds GPUs 0 and 1 of the head
    (two ranks), t2 waits for 3 GPUs (2 are free), and a job wants a TPU no node has."""
    run = TrainRun(
        run_id="6c1d0e9f8a7b",
        run_name="exp-t1",
        attempt_id="attempt-3e2d1",
        world_size=2,
        trial_id="t1",
        workers=(_gpu_rank(0, "0"), _gpu_rank(1, "1")),
        placement_group_id=TRAIN_PG,
    )
    run = with_rank_states(run, Thresholds(), sweep.taken_at)
    trials = (
        Trial("t1", "RUNNING", config={"lr": 0.01}, iterations=7, elapsed_s=300.0),
        Trial("t2", "PENDING", config={"lr": 0.001}, pending_reason=GPU_WAIT),
    )
    experiment = replace(sweep.experiments[0], name="exp", path="/home/ray/ray_results/exp",
                         trials=trials, runs=(run,))  # fmt: skip
    cluster = replace(sweep.cluster, nodes=_placement_nodes())
    return Snapshot(taken_at=NOW - 2, cluster=cluster, experiments=(experiment,),
                    placement_groups=_placement_groups(), runs=OTHER_RUNS,
                    workloads=WORKLOADS)  # fmt: skip


# Train runs of no experiment: a plain script with the probe (RAY_TRAIN_CALLBACKS), and
# a colleague's run without it, known from the actor table only.
OTHER_RUNS = (
    TrainRun(
        run_id="9f3e2a", run_name="plain-user-run", attempt_id="att-1", world_size=2,
        workers=tuple(
            Worker(rank=r, reports_entered=12 - r, reports_exited=12 - r, node_id=CPU_NODE,
                   pid=70100 + r, state="training")
            for r in (0, 1)
        ),
    ),
    TrainRun(
        run_id="actor-c0ffee", run_name="Train run of job 07000000 (no probe)",
        attempt_id="c0ffee", world_size=2, instrumented=False,
        workers=(Worker(rank=0, pid=81001, node_id=HEAD_NODE),
                 Worker(rank=1, pid=81002, node_id=CPU_NODE)),
        no_probe=NoProbe(CALLBACKS_UNSET, NO_PROBE_WHY),
    ),
)  # fmt: skip


# The one list of the ``placement`` snapshot, as ``pipeline.workloads`` derives it: exp's
# placed groups (TRAIN_PG, TRIAL_PG) and its waiting one; the two runs above; the job whose
# TPU group waits; the ended job whose group leaked.
WORKLOADS = (
    Workload(kind=KIND_EXPERIMENT, key="/home/ray/ray_results/exp", name="exp",
             origin=ORIGIN_RAYTOP, origin_label="raytop", status="RUNNING", live=True,
             summary="2 trials: 1 running, 1 pending", cpu=2.0, gpu=2.0, waiting=1),
    Workload(kind=KIND_TRAIN_RUN, key="9f3e2a", name="plain-user-run", origin=ORIGIN_DRIVER,
             origin_label="driver script: python plain_train.py", status="RUNNING",
             live=True, summary="2 ranks", job_id="04000000",
             entrypoint="python plain_train.py"),
    Workload(kind=KIND_TRAIN_RUN, key="actor-c0ffee",
             name="Train run of job 07000000 (no probe)", origin=ORIGIN_RAY_JOB,
             origin_label="Ray job raysubmit_7Kq2: python no_probe_train.py",
             status="RUNNING", live=True, summary="2 ranks (no probe)", job_id="07000000",
             submission_id="raysubmit_7Kq2", entrypoint="python no_probe_train.py"),
    Workload(kind=KIND_JOB, key="05000000", name="raysubmit_tpu1", origin=ORIGIN_RAY_JOB,
             origin_label="Ray job raysubmit_tpu1: python tpu_job.py", status="RUNNING",
             live=True, summary="driver pid 91002", job_id="05000000",
             submission_id="raysubmit_tpu1", entrypoint="python tpu_job.py", waiting=1),
    Workload(kind=KIND_JOB, key="02000000", name="job 02000000", origin=ORIGIN_DRIVER,
             origin_label="driver script: python old_sweep.py", status="ENDED", live=False,
             how_ended="driver exited", summary="driver pid 88010", job_id="02000000",
             entrypoint="python old_sweep.py", cpu=2.0),
)  # fmt: skip


@pytest.fixture
def make_app() -> Callable[..., RaytopApp]:
    """An app with a frozen clock; ``autostart=False`` unless a test asks for polling.

    ``collector=`` replaces the scripted ``FakeCollector`` built from ``steps``."""

    def factory(
        *steps: Snapshot | Exception, collector: object | None = None, **kwargs: object
    ) -> RaytopApp:
        kwargs.setdefault("autostart", False)
        app = RaytopApp(collector or FakeCollector(*steps), **kwargs)
        app.clock = lambda: NOW
        return app

    return factory


RESULTS = "/home/ray/ray_results"  # the parent folder of the sweep's experiment
LR_SEARCH = f"{RESULTS}/lr_search"
RUNNING_SWEEP = f"{RESULTS}/torch_sweep"
NOT_OURS = f"{RESULTS}/notebook_run"
STORED = (
    StoredExperiment(RUNNING_SWEEP, "torch_sweep", "RUNNING", 5, True, True, True),
    StoredExperiment(LR_SEARCH, "lr_search", "INTERRUPTED", 4, True, False, True),
    StoredExperiment(NOT_OURS, "notebook_run", "FINISHED", 12, True, False, False),
)
CONCURRENCY_WARNING = (
    "restarting 1 errored trial(s) adds them as new trials: more than "
    "max_concurrent_trials = 2 may run at once"
)


def lr_search_preview(errored: str) -> ResumePreview:
    """``lr_search``'s preview as the backend words it, for each errored choice."""
    errored_action = {
        "resume": "resume from checkpoint_000002, epoch 2",
        "restart": "restart from scratch under a new trial id (the old one stays on disk)",
        "skip": "skip (stays ERROR)",
    }[errored]
    rows = (
        PreviewRow("a91c3_00000", "TERMINATED", "checkpoint_000009 (epoch 9)", "skip (finished)"),
        PreviewRow("a91c3_00001", "RUNNING", "checkpoint_000004 (epoch 4)",
                   "resume from checkpoint_000004, epoch 4"),
        PreviewRow("a91c3_00002", "PENDING", "-", "start from scratch (no checkpoint)"),
        PreviewRow("a91c3_00003", "ERROR", "checkpoint_000002 (epoch 2)", errored_action),
    )  # fmt: skip
    warnings = (CONCURRENCY_WARNING,) if errored == "restart" else ()
    return ResumePreview(LR_SEARCH, "lr_search", "INTERRUPTED", errored, rows, warnings)


class FakeResumeControls:
    """``tui.controls.Controls`` as the TUI sees it (the backend has its own tests):
    records every call and its thread; ``errors`` maps a method name to what it raises;
    a method named in ``hold`` waits for ``release``. Only ``lr_search`` previews; the
    others raise as the backend does for them."""

    def __init__(
        self,
        experiments: tuple[StoredExperiment, ...] = STORED,
        *,
        errors: dict[str, Exception] | None = None,
        hold: frozenset[str] = frozenset(),
    ) -> None:
        self.experiments = experiments
        self.errors = dict(errors or {})
        self.hold = hold
        self.release = threading.Event()
        self.calls: list[tuple[str, ...]] = []
        self.threads: list[threading.Thread] = []

    def _record(self, method: str, *args: str) -> None:
        self.calls.append((method, *args))
        self.threads.append(threading.current_thread())
        if method in self.hold:
            self.release.wait(5)
        if method in self.errors:
            raise self.errors[method]

    def called(self, method: str) -> list[tuple[str, ...]]:
        return [call[1:] for call in self.calls if call[0] == method]

    def stop_experiment(self, experiment: Experiment) -> None:
        self._record("stop_experiment", experiment.name)

    def stop_trial(self, experiment: Experiment, trial_id: str) -> None:
        self._record("stop_trial", experiment.name, trial_id)

    def experiments_under(self, storage_path: str) -> list[StoredExperiment]:
        self._record("experiments_under", storage_path)
        if storage_path != RESULTS:
            raise RuntimeError(f"{storage_path}: no such folder")
        return list(self.experiments)

    def resume_preview(self, experiment_path: str, errored: str) -> ResumePreview:
        self._record("resume_preview", experiment_path, errored)
        if experiment_path == RUNNING_SWEEP:
            raise RuntimeError("torch_sweep is still running (driver pid 4242): nothing to resume")
        if experiment_path != LR_SEARCH:
            raise RuntimeError(f"{experiment_path}: not launched by raytop")
        return lr_search_preview(errored)

    def resume(self, experiment_path: str, errored: str) -> str:
        self._record("resume", experiment_path, errored)
        return f"resumed '{experiment_path.rsplit('/', 1)[-1]}' (driver pid 5151)"


@pytest.fixture(autouse=True)
def no_user_themes(tmp_path_factory, monkeypatch):
    """The look tests see raytop's built-in themes only, whatever this machine's user has
    in ~/.config/raytop/themes (a test that wants user themes sets its own folder)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
