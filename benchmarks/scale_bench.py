"""raytop at synthetic scale (issue 13, items 3, 4 and 6; docs/PERFORMANCE.md).

A stand-in cluster of 500 nodes, 2,000 placement groups, 2,000 Train workers (250 runs ×
8 ranks, or 1 run × 2,000 ranks) and a Tune experiment of 10,000 trials, read by raytop's
real readers and pipeline (a watching ``SnapshotCollector``, as the TUI reads):

- the GCS: a real ``wire.gcs.GcsReader`` whose gRPC channel is a stand-in answering the
  serialized replies the GCS sends (rows of ``GcsNodeInfo``, ``AvailableResources``,
  ``ActorTableData``, ``PlacementGroupTableData``), so Ray's stubs, raytop's reply split
  and Ray's protobuf parsing run as against a cluster; every read still opens a TCP
  connection to a local listener first (``probe_tcp``). The
  actor table holds the dead actors of the ended trials too, as the GCS keeps them (up to
  ``maximum_gcs_destroyed_actor_cached_count`` = 100,000 by default);
- the KV store: a real ``wire.gcs.GcsKv`` over a stand-in ``GcsClient``, holding what the
  real ``probe.ledger.Ledger`` publishes (its pages, built by ``Ledger.update`` from
  ``RankReport``s, and its index, written by its own publish loop), the RunProbe's run
  records and the registration of every trial that ever started (``trial/<actor id>``);
- storage: the experiment folder as ``raytop run`` leaves it: ``.raytop/trials/``
  written by ``probe.trial_table.TrialSegments`` as the TrialProbe writes it, ``job.json``,
  ``driver.json`` (a driver on another host), and each running Train run's
  ``checkpoint_manager_snapshot.json`` with its checkpoint folders.

The stand-ins count every call and the bytes it returns. Each shape is measured in a
process of its own (its peak RSS is its own), at 2,000 workers and at 10:

1. ``collect()`` (read, derive, diagnose) per refresh kind: nothing changed; 1 % of the
   ranks reported (the ledger republishes their pages); every rank's heartbeat arrived
   (each probe sends at least once a second; the refresh a second after the last that
   fetched beats, as the reader fetches them at most once a second); a
   trial's result written by the TrialProbe (its row's segment and the index; at most
   every 0.2 s, while any trial reports). Wall and CPU time (``time.process_time``: every
   thread of the process),
   median, p95 and mean; calls to the cluster and bytes read from it and from storage.
   Then a steady watch: a collect every 0.25 s for 8 s, the Ledger republishing once a
   second, nothing else moving: the process's CPU as a share of a core (what a user's
   head pod pays for an open raytop), and the cluster's bytes per refresh on average.
   And a beating watch: the same while every rank beats once a second, a quarter of them
   before each refresh (their beats are spread over the second): raytop's CPU a refresh,
   and as a share of a core at the 0.25 s refresh.
2. The pure screen model of the overview and Run screens (``model.dashboard``, the trial
   table's parameters, the run's findings), per redraw.
3. The TUI (``App.run_test``, Pilot, 120×36): the first snapshot applied to the overview,
   then one refresh applied (the handler, and until the next frame is composed); then,
   with the real poller collecting from the stand-ins every 0.25 s while 1 % of the ranks
   report between polls, ``down`` presses in the trials table, timed from the key to the
   first frame composed after the cursor moved; then refreshes applied to the Run screen
   of the largest run. Each snapshot applied is collected just before it is posted and
   let go once applied: the process holds what a raytop holds, and its peak RSS is
   raytop's (until 2026-12-05 the harness held ten snapshots at once, ~15 MB each).

    PYTHONPATH=src .venv/bin/python benchmarks/scale_bench.py [--refreshes 20] [--presses 40]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

GOAL_REFRESH_CPU_S = 0.050
GOAL_RSS_BYTES = 250 * 2**20
GOAL_KEY_P95_S = 0.050
EXPERIMENT = "sweep"
TRIAL_PREFIX_ID = "7d2a1"
JOB_ID = "01000000"  # the Tune driver's job (job.json): its groups are the pending trials'
OTHER_JOB_ID = "02000000"
DEAD_ACTORS_KEPT = 100_000  # Ray's maximum_gcs_destroyed_actor_cached_count default
MAX_ITERATIONS = 20  # each trial's stop limit
RUNGS = (1, 3, 9, MAX_ITERATIONS)  # where an ASHA-like scheduler stops trials


@dataclass(frozen=True)
class Shape:
    """What the stand-in cluster holds."""

    name: str
    runs: int  # running trials, each with one Train run
    ranks: int  # per run
    trials: int
    groups: int
    nodes: int

    @property
    def workers(self) -> int:
        return self.runs * self.ranks


SHAPES = {
    "wide": Shape("250 runs x 8 ranks", 250, 8, 10_000, 2_000, 500),
    "tall": Shape("1 run x 2,000 ranks", 1, 2_000, 10_000, 2_000, 500),
    "wide-10": Shape("5 runs x 2 ranks", 5, 2, 50, 10, 3),
    "tall-10": Shape("1 run x 10 ranks", 1, 10, 50, 10, 3),
}


# -- ids ---------------------------------------------------------------------------------


def _id(kind: int, index: int, size: int) -> bytes:
    """A Ray id of ``size`` bytes (node 28, actor 16, group 18), unique per kind/index."""
    return bytes([kind]) + index.to_bytes(size - 1, "big")


def node_id(i: int) -> bytes:
    return _id(1, i, 28)


def actor_id(kind: int, i: int) -> bytes:
    return _id(kind, i, 16)


def group_id(i: int) -> bytes:
    return _id(3, i, 18)


def trial_id(i: int) -> str:
    return f"{TRIAL_PREFIX_ID}_{i:05d}"


# -- the GCS: a stand-in for its gRPC channel ----------------------------------------------


class Meter:
    """Calls and bytes per call name; thread-safe (the GCS reads run on threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()

    def count(self, name: str, size: int) -> None:
        with self._lock:
            self.calls[name] += 1
            self.bytes[name] += size

    def take(self) -> tuple[dict[str, int], dict[str, int]]:
        """The counts since the last take."""
        with self._lock:
            calls, sizes = dict(self.calls), dict(self.bytes)
            self.calls.clear()
            self.bytes.clear()
        return calls, sizes


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _reply(rows: list[bytes]) -> bytes:
    """A ``GetAll…Reply`` as the GCS serializes it: an OK status (empty, field 1) and
    each row as field 2 (protobuf's wire format: key, length, bytes)."""
    return b"\x0a\x00" + b"".join(b"\x12" + _varint(len(row)) + row for row in rows)


class FakeGcs:
    """A gRPC channel standing for the GCS's: each call of ``wire.gcs_rpc`` answers the
    serialized reply of the rows held here (``GcsNodeInfo``, ``AvailableResources``,
    ``ActorTableData`` by state, ``PlacementGroupTableData``); bytes are counted."""

    def __init__(self, meter: Meter) -> None:
        from ray.core.generated import gcs_pb2, gcs_service_pb2

        self._pb, self._service = gcs_pb2, gcs_service_pb2
        self.meter = meter
        self.nodes: list[bytes] = []
        self.available: list[bytes] = []
        self.actors: list[tuple[int, bytes]] = []  # (state, ActorTableData)
        self.groups: list[bytes] = []
        self._replies: dict[tuple, bytes] = {}

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        name = method.rsplit("/", 1)[-1]
        answer = getattr(self, f"_{name}", None)
        return lambda request, timeout=None: self._count(name, answer(request))

    def _count(self, name: str, data: bytes) -> bytes:
        self.meter.count(name, len(data))
        return data

    def _answer(self, key: tuple, rows: Any) -> bytes:
        """The reply of ``rows()`` (``key`` names the table and its filter), built once per
        table: the GCS serializes its replies in its own process, so the stand-in's
        filtering and framing (~25 ms a refresh over 100,000 actors, until 2026-12-06)
        must not count as raytop's CPU. A table replaced or grown is answered anew."""
        cached = self._replies.get(key)
        if cached is None:
            cached = self._replies[key] = _reply(rows())
        return cached

    def close(self) -> None:
        pass

    def _GetAllNodeInfo(self, request: Any) -> bytes:
        return self._answer(("nodes", id(self.nodes), len(self.nodes)), lambda: self.nodes)

    def _GetAllAvailableResources(self, request: Any) -> bytes:
        key = ("available", id(self.available), len(self.available))
        return self._answer(key, lambda: self.available)

    def _GetAllActorInfo(self, request: Any) -> bytes:
        """Filtered by state in the GCS, as Ray's ``GetAllActorInfo`` filters do."""
        wanted = request.filters.state if request.filters.HasField("state") else None
        key = ("actors", wanted, id(self.actors), len(self.actors))
        return self._answer(
            key, lambda: [b for state, b in self.actors if wanted is None or state == wanted]
        )

    def _GetAllPlacementGroup(self, request: Any) -> bytes:
        return self._answer(("groups", id(self.groups), len(self.groups)), lambda: self.groups)


class Listener:
    """A local TCP port standing for the GCS's: ``probe_tcp`` connects before every
    table read; the connections are counted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        threading.Thread(target=self._serve, name="fake-gcs-port", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


class FakePublisher:
    """A gRPC channel standing for the GCS's publisher, which a watching raytop subscribes
    to for its change signals (``wire.gcs_pubsub``): it answers the subscription and holds
    each poll until its deadline, as the GCS does when nothing is published (nothing in
    these shapes changes an actor or a node after the start)."""

    def __init__(self, meter: Meter) -> None:
        import grpc
        from ray.core.generated import gcs_service_pb2

        class Ended(grpc.RpcError):
            def __init__(self, code: Any) -> None:
                self._code = code

            def code(self) -> Any:
                return self._code

        self._grpc, self._pb, self._ended = grpc, gcs_service_pb2, Ended
        self.meter = meter
        self._closed = threading.Event()

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        name = method.rsplit("/", 1)[-1]
        if name == "GcsSubscriberCommandBatch":
            return lambda request, timeout=None: self._count(
                name, self._pb.GcsSubscriberCommandBatchReply()
            )
        return self._poll

    def _count(self, name: str, reply: Any) -> Any:
        self.meter.count(name, reply.ByteSize())
        return reply

    def _poll(self, request: Any, timeout: float | None = None) -> Any:
        closed = self._closed.wait(timeout)
        status = self._grpc.StatusCode
        raise self._ended(status.CANCELLED if closed else status.DEADLINE_EXCEEDED)

    def close(self) -> None:
        self._closed.set()


def gcs_reader(address: str, channel: FakeGcs) -> Any:
    """A real ``GcsReader`` whose gRPC channel is ``channel``; following the GCS's changes
    as a watching raytop does, through ``FakePublisher``."""
    from raytop.wire.gcs import GcsReader
    from raytop.wire.gcs_rpc import GcsTables

    class StandInReader(GcsReader):
        def _tables(self) -> Any:
            if self._client is None:
                self._client = GcsTables(self.address, channel=channel)
            return self._client

        def _pubsub_channel(self) -> Any:
            return FakePublisher(channel.meter)

    return StandInReader(address, follow=True)


# -- the KV store: a stand-in for Ray's GcsClient ------------------------------------------


class FakeGcsClient:
    """``ray._raylet.GcsClient``'s internal-KV calls over a dict, and its job table (the
    shape's jobs as Ray's ``JobTableData``), counted. (Until 2026-12-06 it had no job
    table: every refresh's read of it failed, and raytop then asked the stand-in address
    whether it refused raytop's token, over a gRPC channel of its own: CPU and memory a
    real cluster, which answers, does not cost.)"""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self._lock = threading.Lock()
        self.data: dict[tuple[str, bytes], bytes] = {}
        self.jobs: dict[bytes, Any] = {}  # job id → JobTableData

    def get_all_job_info(self, timeout: float | None = None, **skips: Any) -> dict[bytes, Any]:
        with self._lock:
            jobs = dict(self.jobs)
        self.meter.count("get_all_job_info", sum(j.ByteSize() for j in jobs.values()))
        return jobs

    def add_job(self, job_id: str, pid: int, entrypoint: str, submission_id: str | None,
                started_at: float) -> None:  # fmt: skip
        """A job as Ray's GCS keeps it: its driver (a submitted job's names its submission
        id in the job's metadata, as Ray's job manager sets it)."""
        from ray.core.generated import gcs_pb2

        entry = gcs_pb2.JobTableData(job_id=bytes.fromhex(job_id), driver_pid=pid,
                                     start_time=int(started_at * 1000), entrypoint=entrypoint,
                                     driver_ip_address="127.0.0.1")  # fmt: skip
        entry.driver_address.ip_address = "127.0.0.1"
        entry.config.ray_namespace = "anonymous"
        if submission_id is not None:
            entry.config.metadata["job_submission_id"] = submission_id
        with self._lock:
            self.jobs[entry.job_id] = entry
        if submission_id is not None:  # and its record, as Ray's job manager writes it
            record = {"status": "RUNNING", "entrypoint": entrypoint, "message": "Job is running",
                      "start_time": int(started_at * 1000), "driver_exit_code": None}  # fmt: skip
            key = f"_ray_internal_job_info_{submission_id}".encode()
            self.put("job", key, json.dumps(record).encode())

    def internal_kv_get(self, key: bytes, namespace: str, timeout: float) -> bytes | None:
        with self._lock:
            value = self.data.get((namespace, key))
        self.meter.count("kv_get", len(value or b""))
        return value

    def internal_kv_multi_get(self, keys: list[bytes], namespace: str, timeout: float):
        with self._lock:
            found = {k: self.data[(namespace, k)] for k in keys if (namespace, k) in self.data}
        self.meter.count("kv_multi_get", sum(len(k) + len(v) for k, v in found.items()))
        return found

    def internal_kv_keys(self, prefix: bytes, namespace: str, timeout: float) -> list[bytes]:
        with self._lock:
            keys = [k for ns, k in self.data if ns == namespace and k.startswith(prefix)]
        self.meter.count("kv_keys", sum(len(k) for k in keys))
        return keys

    def internal_kv_put(self, key, value, overwrite, namespace, timeout) -> int:
        self.meter.count("kv_put", 0)
        self.put(namespace, key, value)
        return 1

    def put(self, namespace: str, key: bytes, value: bytes) -> None:
        """Written from inside the cluster (not counted as raytop's)."""
        with self._lock:
            self.data[(namespace, key)] = value


def gcs_kv(address: str, client: FakeGcsClient) -> Any:
    """A real ``GcsKv`` over the stand-in client."""
    from raytop.wire.gcs import GcsKv

    class StandInKv(GcsKv):
        def _gcs(self) -> Any:
            return client

    return StandInKv(address)


# -- the cluster ----------------------------------------------------------------------------


def _rank_report(run: int, rank: int, shape: Shape, now: float, folder: Path) -> dict:
    """A ``RankReport`` as a ReportProbe sends it, mid-run: 32 report times, 16 barrier
    waits, an activity sample; rank 0 took part in the last 5 checkpoints."""
    worker = run * shape.ranks + rank
    entered = 40 + run % 7
    interval = 2.0 + (run % 5) * 0.5
    times = [[now - (32 - i) * interval, now - (32 - i) * interval + 0.01] for i in range(32)]
    name = f"{EXPERIMENT}-{trial_id(run)}"
    checkpoints = [
        {"dir_name": f"checkpoint_{e:06d}", "report": entered - 4 + e, "mode": "ASYNC",
         "custom_upload": False, "files": {"model.pt": 44_000_000, "optimizer.pt": 88_000_000},
         "sync_s": 0.012, "start": now - (5 - e) * interval, "end": now - (5 - e) * interval + 3,
         "error": None}
        for e in range(5)
    ] if rank == 0 else []  # fmt: skip
    return {
        "run_id": f"run{run:04d}{'0' * 24}", "run_name": name, "attempt_id": f"att{run:04d}",
        "world_size": shape.ranks, "rank": rank, "local_rank": rank % 8,
        "node_rank": rank // 8, "node_id": node_id(1 + worker // 8).hex(),
        "gpu_ids": [str(worker % 8)], "placement_group_id": group_id(shape.runs + run).hex(),
        "pid": 10_000 + worker, "entered": entered, "exited": entered,
        "last_enter_at": times[-1][0], "last_exit_at": times[-1][1],
        "usual_interval_s": interval, "done": False, "dropped": 0, "sent_at": now,
        "cpu_percent": 97.5, "rss_bytes": 3_100_000_000, "gpu_memory_bytes": 21_000_000_000,
        "gpu_util_percent": 88.0, "gpu_memory_used_bytes": 23_000_000_000,
        "optimizer_steps": entered * 50, "step_rate": 4.2,
        "run_path": str(folder / "train_runs" / name),
        "checkpoints": checkpoints,
        "syncs": [[entered - 16 + i, t[0], t[0] + 0.004] for i, t in enumerate(times[-16:])],
        "report_times": times, "declared": {"CPU": 2.0, "GPU": 1.0}, "restored_from": None,
        "activity": {"kind": "backward", "where": "loss.backward() train.py:88",
                     "since": now - 0.2, "sampled_at": now - 0.1, "samples": 60,
                     "waiting": 0.05,
                     "time_s": {"compute": 900.5, "collective": 60.2, "report_wait": 30.1,
                                "report_barrier": 5.3, "data_loader": 12.0},
                     "recent_time_s": {"compute": 50.5, "collective": 5.1, "report_wait": 3.2,
                                       "report_barrier": 0.4, "data_loader": 0.8}},
    }  # fmt: skip


def _trial_row(i: int, shape: Shape, rng: random.Random) -> dict:
    """One row of the TrialProbe's table (``probe.trial_probe.trial_row``'s keys): the
    running trials first, then ended (most stopped early at a rung), errored, pending."""
    ended = shape.trials - shape.runs - _pending(shape) - _errored(shape)
    if i < shape.runs:
        status, iterations = "RUNNING", 1 + i % (MAX_ITERATIONS - 1)
    elif i < shape.runs + ended:
        status, iterations = "TERMINATED", rng.choices(RUNGS, (8, 4, 2, 2))[0]
    elif i < shape.runs + ended + _errored(shape):
        status, iterations = "ERROR", rng.randint(1, 5)
    else:
        status, iterations = "PENDING", 0
    history = [round(2.3 * 0.9**k + rng.random() * 0.05, 6) for k in range(iterations)]
    decision = None
    if status == "TERMINATED" and iterations < MAX_ITERATIONS:
        rung = RUNGS.index(iterations)
        decision = (f"ASHA stopped it at iteration {iterations}: loss {history[-1]:.4f} is "
                    f"outside the top 1/3 of rung {rung} (cutoff 0.4310)")  # fmt: skip
    metrics = {} if not iterations else {
        "loss": history[-1], "accuracy": round(1 - history[-1] / 3, 6), "epoch": iterations,
        "training_iteration": iterations, "time_total_s": 31.5 * iterations,
    }  # fmt: skip
    return {
        "trial_id": trial_id(i), "status": status,
        "config": {"lr": round(10 ** rng.uniform(-5, -1), 8), "batch_size": rng.choice(
            [32, 64, 128, 256]), "hidden": rng.choice([128, 256, 512]),
            "dropout": round(rng.uniform(0, 0.5), 3), "optimizer": rng.choice(["adam", "sgd"])},
        "metrics": metrics, "num_failures": 1 if status == "ERROR" else 0,
        "iterations": iterations, "elapsed_s": 31.5 * iterations if iterations else None,
        "error": "RuntimeError: CUDA error: an illegal memory access was encountered"
        if status == "ERROR" else None,
        "metric_history": history, "max_iterations": MAX_ITERATIONS,
        "scheduler_decision": decision, "max_failures": 2,
    }  # fmt: skip


def _run(coroutine: Any) -> None:
    """``asyncio.run`` on a thread of its own: the caller may be inside an event loop (the
    TUI measurement changes the cluster while the app runs)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(coroutine)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="stand-in-ledger")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def _pending(shape: Shape) -> int:
    return shape.trials * 7 // 100


def _errored(shape: Shape) -> int:
    return max(1, shape.trials // 200)


class StandInCluster:
    """The stand-ins, their meters, and the experiment folder; ``report(fraction)`` and
    ``heartbeat()`` change the ranks as probes would, ``rewrite_trials()`` the table."""

    def __init__(self, shape: Shape, root: Path, dead_actors: int | None = None) -> None:
        from raytop.jsonfile import write_json_atomic
        from raytop.probe.trial_table import TrialSegments
        from raytop.wire.kv_keys import KV_NAMESPACE, TRIAL_PREFIX

        self.shape = shape
        self.rng = random.Random(13)
        self.now = time.time()
        self.gcs_meter, self.kv_meter = Meter(), Meter()
        self.listener = Listener()
        self.gcs = FakeGcs(self.gcs_meter)
        self.client = FakeGcsClient(self.kv_meter)
        self.folder = root / EXPERIMENT
        self.home = root / "raytop-home"
        self.raytop_dir = self.folder / ".raytop"
        self.raytop_dir.mkdir(parents=True)
        self._write_json = write_json_atomic
        self._namespace = KV_NAMESPACE
        self.rows = [_trial_row(i, shape, self.rng) for i in range(shape.trials)]
        # The table as an older raytop's TrialProbe wrote it (whole, on every result), for
        # comparison only: outside the raytop dir, so no reader sees it.
        start = time.perf_counter()
        write_json_atomic(root / "whole-trials.json", {"updated_at": 0.0, "trials": self.rows})
        self.trials_whole_write_s = time.perf_counter() - start
        self.trials_whole_bytes = (root / "whole-trials.json").stat().st_size
        self._table = TrialSegments(self.raytop_dir)
        start = time.perf_counter()
        self._table.put(self.rows)  # the first write: every trial
        self.trials_first_write_s = time.perf_counter() - start
        self.rewrite_trials(changed=1)
        write_json_atomic(self.raytop_dir / "job.json", {"job_id": JOB_ID})
        # The jobs: the Tune driver raytop launched, another user's submitted job (its
        # groups are some of the shape's), and the job that made raytop's Ledger.
        self.client.add_job(JOB_ID, 4242, "", None, self.now - 86_400)
        self.client.add_job(OTHER_JOB_ID, 5151, "python other_sweep.py", "raysubmit_bench",
                            self.now - 7_200)  # fmt: skip
        self.client.add_job("03000000", 999, "", None, self.now - 86_400)
        write_json_atomic(self.raytop_dir / "driver.json", {
            "pid": 4242, "started_at": self.now - 86_400, "host": "head-node-0",
            "experiment_name": EXPERIMENT, "experiment_path": str(self.folder),
            "metric": "loss", "mode": "min"})  # fmt: skip
        self._nodes()
        started = [r for r in self.rows if r["status"] != "PENDING"]
        self._actors(started, dead_actors)
        self._groups()
        for i, row in enumerate(started):  # every trial that started registered itself
            actor = actor_id(10, i).hex()
            record = {"experiment": EXPERIMENT, "trial_id": row["trial_id"], "actor_id": actor,
                      "pg_id": group_id(i).hex() if i < shape.runs else None,
                      "registered_at": self.now - 3600}  # fmt: skip
            key = (TRIAL_PREFIX + actor).encode()
            self.client.put(KV_NAMESPACE, key, json.dumps(record).encode())
        self._ledger_setup()
        self._storage()

    # cluster tables ---------------------------------------------------------------------

    def _nodes(self) -> None:
        from ray.core.generated import gcs_pb2

        shape = self.shape
        gpu_nodes = -(-shape.workers // 8)
        self.node_resources: list[dict[str, float]] = []
        self.node_ips: list[str] = []
        for i in range(shape.nodes):
            ip = "127.0.0.1" if i == 0 else f"10.{i // 250}.{i % 250}.{10 + i % 7}"
            if i == 0:
                total = {"CPU": 16.0, "memory": 64e9, "object_store_memory": 19e9,
                         "node:__internal_head__": 1.0}  # fmt: skip
            elif i <= gpu_nodes:
                total = {"CPU": 96.0, "GPU": 8.0, "memory": 1.1e12,
                         "object_store_memory": 2e11, "accelerator_type:H100": 1.0}  # fmt: skip
            else:
                total = {"CPU": 64.0, "memory": 256e9, "object_store_memory": 7e10}
            total[f"node:{ip}"] = 1.0
            self.node_resources.append(total)
            self.node_ips.append(ip)
            info = gcs_pb2.GcsNodeInfo(
                node_id=node_id(i), node_manager_address=ip, node_manager_hostname=f"ip-{i}",
                node_manager_port=40000 + i, object_manager_port=41000 + i,
                object_store_socket_name=f"/tmp/ray/session_x/sockets/plasma_store.{i}",
                raylet_socket_name=f"/tmp/ray/session_x/sockets/raylet.{i}",
                metrics_export_port=42000 + i, node_name=ip, runtime_env_agent_port=43000 + i,
                resources_total=total, labels={"ray.io/node-id": node_id(i).hex()},
                state=gcs_pb2.GcsNodeInfo.ALIVE, start_time_ms=int(self.now * 1000) - 86_400_000,
                is_head_node=i == 0,
            )  # fmt: skip
            self.gcs.nodes.append(info.SerializeToString())
            available = dict(total)
            if i and i <= gpu_nodes:  # the Train workers hold the GPUs
                held = min(8, shape.workers - (i - 1) * 8)
                available["GPU"] = 8.0 - held
                available["CPU"] = 96.0 - 2 * held
            self.gcs.available.append(
                gcs_pb2.AvailableResources(
                    node_id=node_id(i), resources_available=available
                ).SerializeToString()
            )

    def _actor(self, aid: bytes, cls: str, job: str, node: int, port: int, owner: tuple,
               alive: bool, pid: int) -> tuple[int, bytes]:  # fmt: skip
        from ray.core.generated import common_pb2, gcs_pb2

        state = gcs_pb2.ActorTableData.ALIVE if alive else gcs_pb2.ActorTableData.DEAD
        data = gcs_pb2.ActorTableData(
            actor_id=aid, job_id=bytes.fromhex(job), state=state, class_name=cls,
            max_restarts=0, pid=pid, ray_namespace="a3c7e0c4-1b9e-4d7a",
            address=common_pb2.Address(node_id=node_id(node), ip_address=self.node_ips[node],
                                       port=port, worker_id=aid + b"w" * 12),
            owner_address=common_pb2.Address(node_id=node_id(owner[0]),
                                             ip_address=self.node_ips[owner[0]], port=owner[1],
                                             worker_id=b"o" * 28),
            timestamp=self.now * 1000, start_time=int(self.now * 1000) - 3_600_000,
            end_time=0 if alive else int(self.now * 1000) - 60_000,
            serialized_runtime_env='{"env_vars": {"RAY_TRAIN_V2_ENABLED": "1"}}',
            required_resources={"CPU": 2.0, "GPU": 1.0} if cls == "RayTrainWorker" else {},
            repr_name=cls,
        )  # fmt: skip
        if not alive:
            data.death_cause.actor_died_error_context.error_message = (
                "The actor is dead because all references to the actor were removed."
            )
        return state, data.SerializeToString()

    def _actors(self, started: list[dict], dead_actors: int | None) -> None:
        """The alive actors of the running trials (trial actor → TrainController →
        RayTrainWorkers), the Ledger, and the dead ones of the ended trials."""
        shape = self.shape
        cpu_nodes = list(range(1 + -(-shape.workers // 8), shape.nodes)) or [0]
        ports = iter(range(20_000, 10**9))
        table = []

        def trial_actors(i: int, alive: bool) -> list[tuple[int, bytes]]:
            node = cpu_nodes[i % len(cpu_nodes)]
            trial_port, controller_port = next(ports), next(ports)
            made = [
                self._actor(actor_id(10, i), "ImplicitFunc", JOB_ID, node, trial_port,
                            (0, 10_001), alive, 30_000 + i),
                self._actor(actor_id(11, i), "TrainController", JOB_ID, node, controller_port,
                            (node, trial_port), alive, 40_000 + i),
            ]  # fmt: skip
            for r in range(shape.ranks):
                worker = i * shape.ranks + r
                made.append(self._actor(
                    actor_id(12, worker), "RayTrainWorker", JOB_ID, 1 + (worker // 8) %
                    max(1, shape.nodes - 1), next(ports), (node, controller_port), alive,
                    10_000 + worker))  # fmt: skip
            return made

        for i in range(shape.runs):
            table += trial_actors(i, True)
        table.append(self._actor(actor_id(13, 0), "Ledger", "03000000", 0, 10_002, (0, 10_003),
                                 True, 999))  # fmt: skip
        kept = DEAD_ACTORS_KEPT if dead_actors is None else dead_actors
        for i in range(shape.runs, len(started)):  # the ended trials, newest kept
            if kept <= 0:
                break
            made = trial_actors(i, False)[:kept]
            table += made
            kept -= len(made)
        self.alive_actors = sum(1 for state, _ in table if state == 2)
        self.dead_actors = len(table) - self.alive_actors
        self.gcs.actors = table

    def _groups(self) -> None:
        """Each running trial's group and its Train worker group (placed), groups Tune
        made for pending trials (they wait: the GPUs are all held) and another job's."""
        from ray.core.generated import common_pb2, gcs_pb2

        shape = self.shape
        pgs = gcs_pb2.PlacementGroupTableData
        cpu_nodes = list(range(1 + -(-shape.workers // 8), shape.nodes)) or [0]
        rest = max(0, shape.groups - 2 * shape.runs)
        pending, other = rest // 2, rest - rest // 2
        blobs = []

        def group(i: int, bundles: list[tuple[dict, int | None]], strategy: int, job: str,
                  creator: bytes, placed: bool, dead: bool = False) -> bytes:  # fmt: skip
            gid = group_id(i)
            data = pgs(
                placement_group_id=gid, name="" if i >= 2 * shape.runs else f"pg-{i}",
                strategy=strategy, creator_job_id=bytes.fromhex(job), creator_actor_id=creator,
                creator_job_dead=False, creator_actor_dead=dead, is_detached=False,
                state=pgs.CREATED if placed else pgs.PENDING,
                placement_group_creation_timestamp_ms=int(self.now * 1000) - 600_000,
                bundles=[common_pb2.Bundle(
                    bundle_id=common_pb2.Bundle.BundleIdentifier(placement_group_id=gid,
                                                                 bundle_index=b),
                    unit_resources=res, node_id=node_id(n) if n is not None else b"")
                    for b, (res, n) in enumerate(bundles)],
            )  # fmt: skip
            data.stats.scheduling_state = (
                gcs_pb2.PlacementGroupStats.FINISHED if placed
                else gcs_pb2.PlacementGroupStats.NO_RESOURCES
            )  # fmt: skip
            data.stats.scheduling_attempt = 1 if placed else 40
            return data.SerializeToString()

        for i in range(shape.runs):  # the trial's own group (its actor's bundle)
            blobs.append(group(i, [({"CPU": 1.0}, cpu_nodes[i % len(cpu_nodes)])],
                               common_pb2.PACK, JOB_ID, b"\xff" * 16, True))  # fmt: skip
        for i in range(shape.runs):  # its Train worker group, created by its controller
            workers = [({"CPU": 2.0, "GPU": 1.0}, 1 + (i * shape.ranks + r) // 8)
                       for r in range(shape.ranks)]  # fmt: skip
            blobs.append(group(shape.runs + i, workers, common_pb2.PACK, JOB_ID,
                               actor_id(11, i), True))  # fmt: skip
        wanted = [({"CPU": 1.0}, None)] + [({"CPU": 2.0, "GPU": 1.0}, None)] * min(8, shape.ranks)
        for i in range(pending):  # Tune's groups for pending trials: the GPUs are all held
            blobs.append(group(2 * shape.runs + i, wanted, common_pb2.PACK, JOB_ID,
                               b"\xff" * 16, False))  # fmt: skip
        for i in range(other):  # another job's actors, one bundle each; a few leaked
            n = 2 * shape.runs + pending + i
            blobs.append(group(n, [({"CPU": 1.0}, cpu_nodes[i % len(cpu_nodes)])],
                               common_pb2.SPREAD, OTHER_JOB_ID, actor_id(14, i), True,
                               dead=i % 100 == 0))  # fmt: skip
        self.gcs.groups = blobs

    # the ledger ---------------------------------------------------------------------------

    def _ledger_setup(self) -> None:
        from raytop.probe import ledger as ledger_module

        class Ledger(ledger_module.Ledger):
            def _start_publisher(self) -> None:  # published by ``_publish`` instead
                pass

        self.ledger = Ledger()
        self.reports = {(run, rank): _rank_report(run, rank, self.shape, self.now, self.folder)
                        for run in range(self.shape.runs)
                        for rank in range(self.shape.ranks)}  # fmt: skip
        self.records = [
            {"run_id": f"run{run:04d}{'0' * 24}", "run_name": f"{EXPERIMENT}-{trial_id(run)}",
             "failure_config": {"max_failures": 2, "controller_failure_limit": -1,
                                "max_preemption_failures": -1},
             "attempts": [{"index": 1, "attempt_id": f"att{run:04d}", "status": "running",
                           "started_at": self.now - 3000, "ended_at": None,
                           "error_class": None, "error": None, "failure_class": None,
                           "first_report": {"loss": 2.3, "epoch": 1.0}, "restored": None,
                           "reports_taken": 40 + run % 7}],
             "sent_at": self.now}
            for run in range(self.shape.runs)
        ]  # fmt: skip

        async def fill() -> None:
            for record in self.records:
                await self.ledger.update_run(record)
            for report in self.reports.values():
                await self.ledger.update(report)

        _run(fill())
        self._publish()

    def _publish(self) -> None:
        """One tick of the Ledger's own publish loop: the changed pages, run records and
        the index go into the KV store."""

        from raytop.probe import ledger as ledger_module

        def put(key: str, value: bytes) -> None:
            self.client.put(self._namespace, key.encode(), value)

        async def tick() -> None:
            task = asyncio.ensure_future(self.ledger._publish_loop())
            await asyncio.sleep(ledger_module.PUBLISH_INTERVAL_S * 1.5)
            task.cancel()

        real = ledger_module.kv_put_in_cluster
        ledger_module.kv_put_in_cluster = put  # the Ledger publishes into the stand-in
        try:
            _run(tick())
        finally:
            ledger_module.kv_put_in_cluster = real

    def report(self, fraction: float) -> int:
        """``fraction`` of the ranks (at least one) enter and leave one more report, as
        their probes tell the Ledger; it publishes. Returns how many changed."""
        count = max(1, round(fraction * len(self.reports)))
        chosen = self.rng.sample(sorted(self.reports), count)
        self._send(chosen, step=True)
        return count

    def index_heartbeat(self) -> None:
        """Nothing changed: the Ledger republishes its index (once a second), no page."""
        self._publish()

    def heartbeat(self, fraction: float = 1.0) -> int:
        """``fraction`` of the ranks (chosen at random) send their once-a-second heartbeat
        (its CPU and RSS figures move). Returns how many did."""
        chosen = sorted(self.reports)
        if fraction < 1.0:
            chosen = sorted(self.rng.sample(chosen, max(1, round(fraction * len(chosen)))))
        self._send(chosen, step=False)
        return len(chosen)

    def _send(self, keys: list[tuple[int, int]], step: bool) -> None:
        now = time.time()

        async def send() -> None:
            for key in keys:
                report = self.reports[key]
                if step:
                    report["entered"] += 1
                    report["exited"] += 1
                    report["last_enter_at"], report["last_exit_at"] = now - 0.01, now
                    report["report_times"] = [*report["report_times"][1:], [now - 0.01, now]]
                report["sent_at"] = now
                report["cpu_percent"] = round(90 + self.rng.random() * 10, 1)
                await self.ledger.update(dict(report))
            for run in sorted({run for run, _ in keys} if step else ()):
                # The RunProbe counts the reports its controller takes: all ranks' ones.
                record = self.records[run]
                taken = min(self.reports[run, r]["exited"] for r in range(self.shape.ranks))
                if record["attempts"][0]["reports_taken"] != taken:
                    record["attempts"][0]["reports_taken"] = taken
                    record["sent_at"] = now
                    await self.ledger.update_run(json.loads(json.dumps(record)))

        _run(send())
        self._publish()

    def rewrite_trials(self, changed: int = 0) -> None:
        """The TrialProbe's write after ``changed`` running trials got a new result: their
        rows (``probe.trial_table``: their segments and the index)."""
        rows = self.rows[: min(changed, self.shape.runs)]
        for row in rows:
            row["iterations"] += 1
            row["metric_history"] = [*row["metric_history"], 0.3][-64:]
            row["metrics"] = {**row["metrics"], "loss": 0.3,
                              "training_iteration": row["iterations"]}  # fmt: skip
        start = time.perf_counter()
        self._table.put(rows)
        self.trials_write_s = time.perf_counter() - start  # what the Tune driver spends
        self.trials_bytes = sum(f.stat().st_size for f in (self.raytop_dir / "trials").iterdir())

    def _storage(self) -> None:
        """Each running Train run's folder: Train's checkpoint snapshot and its folders."""
        for run in range(self.shape.runs):
            folder = self.folder / "train_runs" / f"{EXPERIMENT}-{trial_id(run)}"
            results = []
            for e in range(5):
                (folder / f"checkpoint_{e:06d}").mkdir(parents=True)
                results.append({"checkpoint_dir_name": f"checkpoint_{e:06d}",
                                "metrics": {"loss": 1.0 / (e + 1), "epoch": e}})  # fmt: skip
            self._write_json(folder / "checkpoint_manager_snapshot.json",
                             {"checkpoint_results": results,
                              "latest_checkpoint_result": results[-1]})  # fmt: skip

    def collector(self) -> Any:
        """The collector a bare ``raytop`` builds: its experiments from raytop's registry
        (this one, launched last), watching storage, every Train run of the cluster."""
        from raytop.home import register_experiment
        from raytop.pipeline.collect import SnapshotCollector

        reader = gcs_reader(self.listener.address, self.gcs)
        kv = gcs_kv(self.listener.address, self.client)
        home, os.environ["RAYTOP_HOME"] = os.environ.get("RAYTOP_HOME"), str(self.home)
        try:
            register_experiment(EXPERIMENT, str(self.folder), self.raytop_dir)
            return SnapshotCollector(self.listener.address, watch=True, gcs=(reader, kv))
        finally:
            if home is None:
                del os.environ["RAYTOP_HOME"]
            else:
                os.environ["RAYTOP_HOME"] = home

    def take(self) -> dict[str, Any]:
        """The calls and bytes since the last take."""
        gcs_calls, gcs_bytes = self.gcs_meter.take()
        kv_calls, kv_bytes = self.kv_meter.take()
        connections, self.listener.accepted = self.listener.accepted, 0
        return {
            "calls": {**gcs_calls, **kv_calls}, "bytes": {**gcs_bytes, **kv_bytes},
            "total_calls": sum(gcs_calls.values()) + sum(kv_calls.values()),
            "total_bytes": sum(gcs_bytes.values()) + sum(kv_bytes.values()),
            "connections": connections,
        }  # fmt: skip

    def close(self) -> None:
        self.listener.close()


# -- measuring ------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rss_now() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def rss_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


@contextlib.contextmanager
def storage_meter():
    """Counts the files ``sources.storage`` reads from local disk and their bytes."""
    from raytop.sources import local_storage as storage

    read = storage.LocalStorage._read_bytes
    seen = {"files": 0, "bytes": 0}

    def counted(self, rel: str, max_bytes: int) -> bytes | None:
        data = read(self, rel, max_bytes)
        seen["files"] += 1
        seen["bytes"] += len(data or b"")
        return data

    storage.LocalStorage._read_bytes = counted
    try:
        yield seen
    finally:
        storage.LocalStorage._read_bytes = read


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    wall = [s["wall_s"] for s in samples]
    cpu = [s["cpu_s"] for s in samples]
    return {
        "n": len(samples),
        "wall_p50_s": statistics.median(wall), "wall_p95_s": percentile(wall, 0.95),
        "cpu_p50_s": statistics.median(cpu), "cpu_p95_s": percentile(cpu, 0.95),
        "cpu_mean_s": statistics.mean(cpu),
        "calls": samples[-1]["calls"],  # the last refresh's (calls_min/max: their range)
        "calls_min": min(s["total_calls"] for s in samples),
        "calls_max": max(s["total_calls"] for s in samples),
        "connections": max(s["connections"] for s in samples),
        "cluster_bytes_p50": statistics.median(s["total_bytes"] for s in samples),
        "cluster_bytes_max": max(s["total_bytes"] for s in samples),
        # Tables read whole only on a change signal, or every few seconds (placement
        # groups: 5 s; ``wire.gcs_pubsub``): some refreshes read them, most do not.
        "cluster_bytes_mean": statistics.mean(s["total_bytes"] for s in samples),
        "bytes_by_call": samples[-1]["bytes"],
        "storage_files_p50": statistics.median(s["storage_files"] for s in samples),
        "storage_bytes_p50": statistics.median(s["storage_bytes"] for s in samples),
        "storage_bytes_max": max(s["storage_bytes"] for s in samples),
    }  # fmt: skip


def timed_collect(cluster: StandInCluster, collector: Any, meter: dict) -> tuple[Any, dict]:
    cluster.take()
    meter["files"] = meter["bytes"] = 0
    wall, cpu = time.perf_counter(), time.process_time()
    snapshot = collector.collect()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sample = {"wall_s": wall, "cpu_s": cpu, **cluster.take(),
              "storage_files": meter["files"], "storage_bytes": meter["bytes"]}  # fmt: skip
    return snapshot, sample


WATCH_SETTLE_S = 0.3  # the watcher's 50 ms debounce and its 10 ms step, with room


def measure_collect(
    cluster: StandInCluster, collector: Any, refreshes: int, watch_s: float
) -> dict[str, Any]:
    """The refresh kinds (see the module's docstring), each ``refreshes`` times."""
    from raytop.model.refresh import AGES_EVERY_S
    from raytop.wire.gcs import CREATOR_GONE_REREAD_S

    kinds = {
        "nothing changed": cluster.index_heartbeat,
        "1% of ranks reported": lambda: cluster.report(0.01),
        # A second after the last: the reader fetches a beat chunk it holds at the first
        # refresh of each second (``sources.ledger_source``); this is the refresh that does.
        "every rank's heartbeat": lambda: (time.sleep(AGES_EVERY_S), cluster.heartbeat()),
        "a trial's row rewritten": lambda: (
            cluster.index_heartbeat(),
            cluster.rewrite_trials(changed=1),
            time.sleep(WATCH_SETTLE_S),
        ),  # fmt: skip
    }
    results: dict[str, Any] = {}
    with storage_meter() as meter:
        began = time.monotonic()
        snapshot, first = timed_collect(cluster, collector, meter)
        results["first (cold)"] = _summary([first])
        time.sleep(1.5)  # the watcher is up (its first timeout yield)
        # Until the GCS's change signals are followed (``wire.gcs_pubsub``: subscribed,
        # then each table read once more): a watching raytop's steady state.
        for _ in range(20):
            cluster.take()
            collector.collect()
            if "GetAllActorInfo" not in cluster.take()["calls"]:
                break
            time.sleep(0.05)
        # The stand-in's leaked groups (creator gone, never removed) are old by then in a
        # steady state: past the window in which a new one is read at every refresh.
        time.sleep(max(0.0, began + CREATOR_GONE_REREAD_S - time.monotonic()))
        for name, change in kinds.items():
            samples = []
            for _ in range(refreshes):
                change()
                snapshot, sample = timed_collect(cluster, collector, meter)
                samples.append(sample)
            results[name] = _summary(samples)
        watch = steady_watch(cluster, collector, watch_s)
        beating = beating_watch(cluster, collector, watch_s)
    return {"kinds": results, "snapshot": snapshot, "watch": watch, "beating": beating}


WATCH_S = 8.0  # long enough for eight of the Ledger's publishes
WATCH_REFRESH_S = 0.25  # the TUI's default refresh (``model.refresh``)


def steady_watch(cluster: StandInCluster, collector: Any, watch_s: float) -> dict[str, Any]:
    """What a watching raytop costs where nothing but time moves, as a user's refresh
    paces it: a collect every 0.25 s, the Ledger republishing its index once a second (as
    it does, changed or not). The refresh kinds above are back to back, each after a
    publish; this is the CPU of the whole process over ``watch_s``, as a share of a core
    and per refresh on average, and the cluster's bytes per refresh on average (the
    groups' read every 5 s among them, as a user's refreshes meet it: ten back-to-back
    refreshes hold one such read or none)."""
    cluster.take()
    refreshes, began = 0, time.monotonic()
    cpu, published = time.process_time(), began - 1.0
    while (now := time.monotonic()) - began < watch_s:
        if now - published >= 1.0:
            cluster.index_heartbeat()
            published = now
        collector.collect()
        refreshes += 1
        time.sleep(max(0.0, began + refreshes * WATCH_REFRESH_S - time.monotonic()))
    cpu, wall = time.process_time() - cpu, time.monotonic() - began
    read = cluster.take()["total_bytes"]
    return {"refreshes": refreshes, "wall_s": wall, "cpu_s": cpu, "core_share": cpu / wall,
            "cpu_per_refresh_s": cpu / refreshes,
            "bytes_per_refresh": read / refreshes}  # fmt: skip


def beating_watch(cluster: StandInCluster, collector: Any, watch_s: float) -> dict[str, Any]:
    """What a watching raytop costs while every rank trains: each beats once a second, the
    beats spread over that second, so before each refresh (0.25 s apart) a quarter of the
    ranks beat and the Ledger publishes. raytop's CPU is measured around each collect (the
    stand-in Ledger's work between them is the cluster's, not raytop's); its share of a
    core is that CPU per refresh at the TUI's 0.25 s. The refreshes keep that pace while
    the stand-in's beats and publish allow, else come as soon as they are done."""
    cluster.take()
    refreshes, cpu, began = 0, 0.0, time.monotonic()
    while time.monotonic() - began < watch_s:
        tick = time.monotonic()
        cluster.heartbeat(0.25)
        before = time.process_time()
        collector.collect()
        cpu += time.process_time() - before
        refreshes += 1
        time.sleep(max(0.0, tick + WATCH_REFRESH_S - time.monotonic()))
    return {"refreshes": refreshes, "wall_s": time.monotonic() - began, "cpu_s": cpu,
            "cpu_per_refresh_s": cpu / refreshes,
            "core_share": cpu / refreshes / WATCH_REFRESH_S}  # fmt: skip


def describe_snapshot(snapshot: Any) -> dict[str, Any]:
    experiment = snapshot.experiments[0]
    return {
        "nodes": len(snapshot.cluster.nodes),
        "trials": len(experiment.trials),
        "runs": len(experiment.runs),
        "workers": sum(len(r.workers) for r in experiment.runs),
        "placement_groups": len(snapshot.placement_groups),
        "pending_groups": sum(1 for g in snapshot.placement_groups if not g.placed),
        "findings": len(snapshot.findings),
        "finding_kinds": dict(Counter(f.kind for f in snapshot.findings)),
        "other_runs": len(snapshot.runs),
    }


def measure_screen_model(snapshot: Any, repeat: int = 5, width: int = 120) -> dict[str, float]:
    """The pure part of one redraw of the overview (the trial table's parameter text, the
    highlighted trial's dashboard) and of the Run screen (its run, findings, ranks)."""
    from raytop.model.dashboard import (
        bundle_places,
        groups_of,
        latest_checkpoints,
        rank_cells,
        rank_strip,
        run_phase,
    )
    from raytop.model.format import fmt_params, varying_keys
    from raytop.tui.screens.run_data import find_run, run_findings

    experiment = snapshot.experiments[0]
    trial = next(t for t in experiment.trials if t.status == "RUNNING")

    def overview() -> None:
        swept = varying_keys([t.config for t in experiment.trials])
        for t in experiment.trials:
            fmt_params(t.config, swept)
        run = next((r for r in experiment.runs if r.trial_id == trial.trial_id), None)
        groups = groups_of(trial, run, snapshot.placement_groups)
        run_phase(trial, run, groups)
        if run is not None:
            rank_strip(run, snapshot.ages_at, width - 7, 6)
            latest_checkpoints(run, 3)
        bundle_places(groups, run)

    def run_screen() -> None:
        run = find_run(snapshot, experiment.runs[0].run_id)
        run_findings(snapshot, run)
        rank_cells(run, snapshot.ages_at)

    out = {}
    for name, step in (("overview", overview), ("run screen", run_screen)):
        times = []
        for _ in range(repeat):
            cpu = time.process_time()
            step()
            times.append(time.process_time() - cpu)
        out[f"{name}_cpu_s"] = statistics.median(times)
    return out


# -- the TUI ------------------------------------------------------------------------------


@contextlib.contextmanager
def gc_pauses():
    """The durations of Python's full (generation 2) garbage collections meanwhile."""
    pauses: list[float] = []
    started: list[float] = []

    def note(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append(time.perf_counter() - started.pop())

    gc.callbacks.append(note)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(note)


class FrameClock:
    """When the visible screen composed a frame, when the app handled a snapshot (and
    for how long), and when the trials table's cursor moved."""

    def __init__(self) -> None:
        self.frames: list[float] = []
        self.handled: list[tuple[float, float, float]] = []  # (end, wall, UI-thread CPU)
        self.moved: list[float] = []

    def attach(self, app: Any, table: Any) -> None:
        self.attach_screen(app.screen)
        show = app._show
        watch = table.watch_cursor_coordinate

        def shown(state: Any) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            show(state)
            end = time.perf_counter()
            self.handled.append((end, end - wall, time.thread_time() - cpu))

        def moved(old: Any, new: Any) -> None:
            watch(old, new)
            self.moved.append(time.perf_counter())

        app._show = shown
        table.watch_cursor_coordinate = moved

    def attach_screen(self, screen: Any) -> None:
        compose = screen._compositor_refresh

        def composed() -> None:
            compose()
            self.frames.append(time.perf_counter())

        screen._compositor_refresh = composed

    async def frame_after(self, moment: float, timeout: float = 30.0) -> float:
        """The first frame composed after ``moment``."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            later = [f for f in self.frames if f > moment]
            if later:
                return later[0]
            await asyncio.sleep(0.002)
        raise TimeoutError("no frame composed")

    async def handled_after(self, moment: float, timeout: float = 60.0) -> tuple:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            later = [h for h in self.handled if h[0] > moment]
            if later:
                return later[0]
            await asyncio.sleep(0.002)
        raise TimeoutError("snapshot not handled")


async def measure_tui(
    cluster: StandInCluster, collector: Any, applies: int, presses: int, refresh_s: float = 0.25
) -> dict[str, Any]:
    """Apply snapshots to the overview, then press ``down`` while the poller collects."""
    from raytop.tui.app import RaytopApp
    from raytop.tui.messages import SnapshotReady
    from raytop.tui.screens.run import RunScreen
    from raytop.tui.widgets.trial_table import TrialTable
    from raytop.tui.widgets.worker_table import WorkerTable

    first = collector.collect()

    def later() -> Any:
        """The next snapshot, 1 % of the ranks having reported: collected before it is
        posted (the apply alone is timed) and let go once applied, so that the process
        holds what a raytop holds (the snapshot on screen and the one coming), not ten
        held for the harness (~15 MB each at these shapes). As raytop's poller does, a
        full collection first when one is due (``tui.full_collections``)."""
        cluster.report(0.01)
        app._full.between_refreshes()
        return collector.collect()

    app = RaytopApp(collector, refresh_s=refresh_s, autostart=False, freeze_gc=True)  # as raytop
    app.clock = time.time
    clock = FrameClock()
    result: dict[str, Any] = {}
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(TrialTable)
        clock.attach(app, table)

        async def apply(snapshot: Any) -> tuple[float, float, float]:
            posted = time.perf_counter()
            app.post_message(SnapshotReady(snapshot))
            end, wall, cpu = await clock.handled_after(posted)
            frame = await clock.frame_after(end)
            return wall, cpu, frame - posted

        result["first_apply"] = dict(zip(("handler_wall_s", "handler_cpu_s", "to_frame_s"),
                                         await apply(first), strict=True))  # fmt: skip
        del first  # the app holds it while it is on screen
        result["rows"] = table.row_count
        await pilot.pause()
        with gc_pauses() as pauses:
            applied = [await apply(later()) for _ in range(applies)]
        result["apply"] = {
            "n": len(applied),
            "handler_wall_p50_s": statistics.median(a[0] for a in applied),
            "handler_cpu_p50_s": statistics.median(a[1] for a in applied),
            "to_frame_p50_s": statistics.median(a[2] for a in applied),
            "to_frame_p95_s": percentile([a[2] for a in applied], 0.95),
            "to_frame_max_s": max(a[2] for a in applied),
            "full_gc_pauses_s": pauses,  # Python's full collections meanwhile
        }

        # Key presses while the poller collects from the stand-ins and ranks report.
        table.focus()
        await pilot.pause()
        stop = threading.Event()

        def reports() -> None:
            while not stop.wait(refresh_s):
                cluster.report(0.01)

        reporter = threading.Thread(target=reports, name="bench-reports", daemon=True)
        reporter.start()
        app.start_polling()
        handled_before = len(clock.handled)
        await asyncio.sleep(2 * refresh_s)
        rng = random.Random(7)
        latencies = [0.0] if not presses else []
        for _ in range(presses):
            await asyncio.sleep(rng.uniform(0, refresh_s))  # any phase of the poll
            row = table.cursor_row
            pressed = time.perf_counter()
            await pilot.press("down")
            while table.cursor_row == row:
                await asyncio.sleep(0.001)
            moved = next((m for m in clock.moved if m > pressed), time.perf_counter())
            latencies.append(await clock.frame_after(moved) - pressed)
        stop.set()
        app._stop.set()
        reporter.join()
        await asyncio.sleep(2 * refresh_s)  # the poller's last snapshot is in

        # The Run screen of the largest run, a refresh applied to it.
        run = max(app.latest.experiments[0].runs, key=lambda r: len(r.workers))
        screen = RunScreen(run.run_id, collector=collector, state=app.state, clock=app.clock,
                           read_only=False)  # fmt: skip
        await app.push_screen(screen)
        await pilot.pause()
        clock.attach_screen(screen)
        with gc_pauses() as pauses:
            applied = [await apply(later()) for _ in range(applies)]
        result["run_screen"] = {
            "ranks": screen.query_one(WorkerTable).row_count,
            "handler_wall_p50_s": statistics.median(a[0] for a in applied),
            "handler_cpu_p50_s": statistics.median(a[1] for a in applied),
            "to_frame_p50_s": statistics.median(a[2] for a in applied),
            "to_frame_p95_s": percentile([a[2] for a in applied], 0.95),
            "to_frame_max_s": max(a[2] for a in applied),
            "full_gc_pauses_s": pauses,
        }
        result["keys"] = {
            "n": len(latencies),
            "p50_s": statistics.median(latencies),
            "p95_s": percentile(latencies, 0.95),
            "max_s": max(latencies),
            "snapshots_applied": len(clock.handled) - handled_before,
            "handler_wall_p50_s": statistics.median(h[1] for h in clock.handled[handled_before:])
            if len(clock.handled) > handled_before else None,
        }  # fmt: skip
    return result


# -- one shape, in a process of its own ---------------------------------------------------


def ledger_memory(shape: Shape) -> dict[str, Any]:
    """What the Ledger actor holds for this shape: the real ``probe.ledger.Ledger`` given
    every rank's ``RankReport`` twice (a report round, then a heartbeat round), each
    unpickled as the actor receives it; Python's heap it keeps (tracemalloc), and the
    rank records it holds against its bound (``MAX_RANK_RECORDS``)."""
    import pickle
    import tracemalloc

    from raytop.probe import ledger as ledger_module

    class Ledger(ledger_module.Ledger):
        def _start_publisher(self) -> None:  # nothing is published here
            pass

    now = time.time()
    with tempfile.TemporaryDirectory() as folder:
        sent = [pickle.dumps(_rank_report(run, rank, shape, now, Path(folder)))
                for run in range(shape.runs) for rank in range(shape.ranks)]  # fmt: skip
    tracemalloc.start()
    try:
        ledger = Ledger()

        async def receive() -> None:
            for _ in range(2):
                for message in sent:
                    await ledger.update(pickle.loads(message))

        asyncio.run(receive())
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"bytes": held, "ranks": ledger.ranks_held, "per_rank": held / max(1, ledger.ranks_held),
            "max_ranks": ledger_module.MAX_RANK_RECORDS}  # fmt: skip


def run_shape(key: str, refreshes: int, applies: int, presses: int,
              dead_actors: int | None = None, tui: bool = True,
              watch_s: float = WATCH_S) -> dict[str, Any]:  # fmt: skip
    """Everything for one shape; the caller's process is this shape's alone when its
    peak RSS is to mean anything."""
    # What raytop's own process imports too, imported before the baseline: the RSS the
    # stand-ins add is then their data alone.
    import psutil  # noqa: F401
    import ray._private.state  # noqa: F401
    import textual.app  # noqa: F401
    from ray.core.generated import common_pb2, gcs_pb2  # noqa: F401

    import raytop.pipeline.collect  # noqa: F401
    import raytop.tui.app  # noqa: F401

    shape = SHAPES[key]
    # In a child of its own (forked before any thread starts), so that the Ledger's heap
    # is not in this process's peak RSS.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        held = pool.apply(ledger_memory, (shape,))
    baseline = rss_now()
    with tempfile.TemporaryDirectory(prefix="raytop-scale-") as root:
        cluster = StandInCluster(shape, Path(root), dead_actors)
        stand_ins = rss_now() - baseline
        # The stand-ins' objects would live in other processes: out of the collector's way
        # (Python's full garbage collections traverse every tracked object).
        gc.freeze()
        collector = cluster.collector()
        try:
            measured = measure_collect(cluster, collector, refreshes, watch_s)
            snapshot = measured.pop("snapshot")
            result = {
                "shape": {**asdict(shape), "workers": shape.workers}, "key": key,
                "alive_actors": cluster.alive_actors, "dead_actors": cluster.dead_actors,
                "trials_bytes": cluster.trials_bytes,
                "trials_write_s": cluster.trials_write_s,
                "trials_first_write_s": cluster.trials_first_write_s,
                "trials_whole_bytes": cluster.trials_whole_bytes,
                "trials_whole_write_s": cluster.trials_whole_write_s,
                "snapshot": describe_snapshot(snapshot),
                "collect": measured["kinds"],
                "watch": measured["watch"],
                "beating": measured["beating"],
                "screen_model": measure_screen_model(snapshot),
                "ledger_memory": held,
            }  # fmt: skip
            # Let go before the TUI's part: a raytop holds no snapshot beside its screen's
            # (held, it added ~15 MB to the peak at 2,000 ranks until 2026-12-06).
            del snapshot
            result["rss_after_collect"] = rss_now()
            if tui:
                result["tui"] = asyncio.run(measure_tui(cluster, collector, applies, presses))
        finally:
            collector.close()
            cluster.close()
            gc.unfreeze()
    result["rss"] = {"baseline": baseline, "stand_ins": stand_ins, "peak": rss_peak(),
                     "peak_less_stand_ins": rss_peak() - stand_ins}  # fmt: skip
    return result


# -- report ---------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f} ms"


def _pauses(pauses: list[float]) -> str:
    return f"{len(pauses)} ({', '.join(_ms(p) for p in pauses) or 'none'})"


def _size(count: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        shape, snap = r["shape"], r["snapshot"]
        print(f"\n== {shape['name']}: {shape['workers']} workers, {snap['trials']} trials, "
              f"{snap['placement_groups']} groups ({snap['pending_groups']} pending), "
              f"{snap['nodes']} nodes; actors {r['alive_actors']} alive + {r['dead_actors']} "
              f"dead; the trial table {_size(r['trials_bytes'])} in segments: first write "
              f"{_ms(r['trials_first_write_s'])}, one trial's result {_ms(r['trials_write_s'])} "
              f"(whole, as an older raytop wrote it: {_size(r['trials_whole_bytes'])} in "
              f"{_ms(r['trials_whole_write_s'])})")  # fmt: skip
        print(f"   snapshot: {snap['runs']} runs of {snap['workers']} ranks, "
              f"{snap['findings']} findings {snap['finding_kinds']}")  # fmt: skip
        print(f"   {'refresh':<28}{'CPU p50':>10}{'CPU p95':>10}{'wall p50':>10}"
              f"{'wall p95':>10}{'calls':>7}{'conns':>6}{'cluster B p50/mean/max':>27}"
              f"{'storage B p50/max':>22}")  # fmt: skip
        for kind, k in r["collect"].items():
            calls = (f"{k['calls_min']}" if k["calls_min"] == k["calls_max"]
                     else f"{k['calls_min']}-{k['calls_max']}")  # fmt: skip
            storage = f"{_size(k['storage_bytes_p50'])} / {_size(k['storage_bytes_max'])}"
            cluster = " / ".join(_size(k[f"cluster_bytes_{s}"]) for s in ("p50", "mean", "max"))
            print(f"   {kind:<28}{_ms(k['cpu_p50_s']):>10}{_ms(k['cpu_p95_s']):>10}"
                  f"{_ms(k['wall_p50_s']):>10}{_ms(k['wall_p95_s']):>10}{calls:>7}"
                  f"{k['connections']:>6}{cluster:>27}"
                  f"{storage:>22}")  # fmt: skip
        watch = r["watch"]
        print(f"   steady watch ({watch['refreshes']} refreshes 0.25 s apart, the Ledger "
              f"republishing each second, nothing else moving): "
              f"{100 * watch['core_share']:.1f} % of a core, "
              f"{_ms(watch['cpu_per_refresh_s'])} CPU and "
              f"{_size(watch['bytes_per_refresh'])} from the cluster "
              "a refresh on average")  # fmt: skip
        beating = r["beating"]
        print(f"   beating watch ({beating['refreshes']} refreshes, a quarter of the ranks "
              f"beating before each): {_ms(beating['cpu_per_refresh_s'])} CPU a refresh, "
              f"{100 * beating['core_share']:.1f} % of a core at 0.25 s")  # fmt: skip
        steady = r["collect"]["nothing changed"]
        print(f"   calls per refresh: {steady['calls']}")
        print(f"   bytes by call (nothing changed): {steady['bytes_by_call']}")
        model = r["screen_model"]
        print(f"   screen model (pure) per redraw: overview {_ms(model['overview_cpu_s'])}, "
              f"run screen {_ms(model['run screen_cpu_s'])}")  # fmt: skip
        if "tui" in r:
            tui = r["tui"]
            first, apply, keys = tui["first_apply"], tui["apply"], tui["keys"]
            print(f"   TUI: first snapshot ({tui['rows']} rows): handler "
                  f"{_ms(first['handler_wall_s'])}, "
                  f"to frame {_ms(first['to_frame_s'])}")  # fmt: skip
            print(f"   TUI: one refresh applied (n={apply['n']}): handler p50 "
                  f"{_ms(apply['handler_wall_p50_s'])} (UI CPU {_ms(apply['handler_cpu_p50_s'])}),"
                  f" post -> frame p50 {_ms(apply['to_frame_p50_s'])}, "
                  f"p95 {_ms(apply['to_frame_p95_s'])}, max {_ms(apply['to_frame_max_s'])}; "
                  f"full GCs meanwhile {_pauses(apply['full_gc_pauses_s'])}")  # fmt: skip
            print(f"   TUI: key -> frame under load (n={keys['n']}, "
                  f"{keys['snapshots_applied']} snapshots applied meanwhile, handler p50 "
                  f"{_ms(keys['handler_wall_p50_s'])}): p50 {_ms(keys['p50_s'])}, "
                  f"p95 {_ms(keys['p95_s'])}, max {_ms(keys['max_s'])}")  # fmt: skip
            run = tui["run_screen"]
            print(f"   TUI: Run screen ({run['ranks']} ranks), one refresh applied: handler "
                  f"p50 {_ms(run['handler_wall_p50_s'])} (UI CPU "
                  f"{_ms(run['handler_cpu_p50_s'])}), post -> frame p50 "
                  f"{_ms(run['to_frame_p50_s'])}, p95 {_ms(run['to_frame_p95_s'])}, max "
                  f"{_ms(run['to_frame_max_s'])}; full GCs meanwhile "
                  f"{_pauses(run['full_gc_pauses_s'])}")  # fmt: skip
        held = r["ledger_memory"]
        print(f"   Ledger actor: {_size(held['bytes'])} held for {held['ranks']} ranks "
              f"({_size(held['per_rank'])} a rank); at most {held['max_ranks']} ranks, "
              f"~{_size(held['per_rank'] * held['max_ranks'])}")  # fmt: skip
        rss = r["rss"]
        print(f"   RSS: peak {_size(rss['peak'])}; the stand-ins' data "
              f"{_size(rss['stand_ins'])}; peak less the stand-ins "
              f"{_size(rss['peak_less_stand_ins'])}")  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="wide-10,tall-10,wide,tall",
                        help=f"comma-separated, of {', '.join(SHAPES)}")  # fmt: skip
    parser.add_argument("--refreshes", type=int, default=20, help="per refresh kind")
    parser.add_argument("--applies", type=int, default=10, help="snapshots applied to the TUI")
    parser.add_argument("--presses", type=int, default=40, help="keys pressed under load")
    parser.add_argument("--dead-actors", type=int, default=None,
                        help=f"dead actors in the table (default: the ended trials', at most "
                             f"{DEAD_ACTORS_KEPT:,}, as the GCS keeps them)")  # fmt: skip
    parser.add_argument("--no-tui", action="store_true")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the shapes here, one after the other (RSS then mixes)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: one shape, JSON out
    args = parser.parse_args(argv)
    if args.one:
        result = run_shape(args.one, args.refreshes, args.applies, args.presses,
                           args.dead_actors, not args.no_tui)  # fmt: skip
        json.dump(result, sys.stdout)
        return [result]
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    results = []
    for key in args.shapes.split(","):
        if args.in_process:
            results.append(run_shape(key, args.refreshes, args.applies, args.presses,
                                     args.dead_actors, not args.no_tui))  # fmt: skip
            continue
        command = [sys.executable, __file__, "--one", key, "--refreshes", str(args.refreshes),
                   "--applies", str(args.applies), "--presses", str(args.presses)]  # fmt: skip
        if args.dead_actors is not None:
            command += ["--dead-actors", str(args.dead_actors)]
        if args.no_tui:
            command.append("--no-tui")
        done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
        results.append(json.loads(done.stdout))
    report(results)
    print(f"\nload average at the end {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
