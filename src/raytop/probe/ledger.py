"""The Ledger: one named, detached actor that collects every probe's report counts.

``raytop_ledger`` in namespace ``raytop``, 0 CPU (it never takes capacity from training),
pinned to the head node (worker nodes come and go with autoscaling and preemption; the head
lives as long as the cluster and its GCS, where the ledger publishes). Probes send their
whole cumulative state (fire-and-forget ``update``), so a ledger that is killed and
recreated is whole again after one flush. Memory is bounded: at most ``MAX_PAGES`` attempts
and ``MAX_RANK_RECORDS`` ranks (least recently updated attempts evicted), one record per
rank.

It publishes into the GCS internal KV (the namespace and keys in ``wire.kv_keys``):
``ledger/index`` (its start time, last publish time and each key's version) and the keys
that changed. Readers fetch the index and only the changed keys: O(1) calls per refresh
whatever the cluster size, and raytop never has to join the cluster as a driver.

What a refresh reads follows what changed, not the run's size. A rank's record splits in
two (``model.records.BEAT_FIELDS``): its heartbeat figures (CPU, RSS, activity, when the
ledger heard from it), which move every second, go into the attempt's beats; the rest
(counts, report history, barrier waits, checkpoints) into its pages. Pages come in chunks
of ``PAGE_CHUNK_RANKS`` ranks, beats of ``BEAT_CHUNK_RANKS`` (``wire.kv_keys`` says why
the two differ), each with a version that moves only when one of its ranks' figures
does. So a heartbeat round reads the beats alone, and one rank's report of a 2,000-rank
run reads its page chunk of 8 ranks and its 32 ranks' beats, not the whole run. (A Ledger
before 2026-12-05 published an attempt's beats whole, as its chunk 0's name: one rank's
report made every reader fetch and check all 2,000 beats again, 2.8 MB, and the Ledger
serialize them on every publish.)
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from typing import Any

from raytop.model.records import BEAT_FIELDS, LedgerIndex, RankReport, RunAttempts
from raytop.wire.cluster_kv import kv_del_in_cluster, kv_put_in_cluster
from raytop.wire.kv_keys import (
    BEAT_CHUNK_RANKS,
    BEAT_PREFIX,
    INDEX_KEY,
    PAGE_CHUNK_RANKS,
    PAGE_PREFIX,
    RUN_PREFIX,
    chunk_key,
    page_key,
    split_chunk_key,
)

LEDGER_NAME = "raytop_ledger"
LEDGER_NAMESPACE = "raytop"
MAX_PAGES = 256  # attempts
# Ranks held, all attempts together: ~13 kB each as the probes send them (32 report times,
# 16 barrier waits, checkpoints), so ~210 MB at most; measured in docs/PERFORMANCE.md.
# Above it the least recently updated attempts go, never the one just updated.
MAX_RANK_RECORDS = 16_384
MAX_RUNS = 256  # run records (RunProbe), least recently updated evicted
PUBLISH_INTERVAL_S = 0.1  # when something changed
INDEX_HEARTBEAT_S = 1.0  # otherwise: proves the ledger is alive


class Ledger:
    def __init__(self) -> None:
        self.started_at = time.time()
        # page key → the attempt: its identity, ``chunks`` (chunk number → {"version",
        # "ranks": {rank: record without its beat}}) and ``beat_chunks`` (chunk number →
        # {"version", "ranks": {rank: beat}}).
        self.pages: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.version = 0
        self.ranks_held = 0
        self.published: dict[str, int] = {}  # KV key → the version published there
        # run_id → (version, the RunProbe's record): a run's failure config and attempts.
        self.runs: OrderedDict[str, tuple[int, RunAttempts]] = OrderedDict()
        self.published_runs: dict[str, int] = {}
        self._publisher: asyncio.Task | None = None

    def _start_publisher(self) -> None:
        if self._publisher is None:
            self._publisher = asyncio.get_running_loop().create_task(self._publish_loop())

    async def update_run(self, message: RunAttempts) -> None:
        """One RunProbe's whole record of its run (see ``RunProbe``)."""
        self._start_publisher()
        run_id = str(message["run_id"])
        self.version += 1
        self.runs[run_id] = (self.version, message)
        self.runs.move_to_end(run_id)
        while len(self.runs) > MAX_RUNS:
            evicted, _ = self.runs.popitem(last=False)
            self.published_runs.pop(evicted, None)
            kv_del_in_cluster(RUN_PREFIX + evicted)

    async def update(self, message: RankReport) -> None:
        """One probe's cumulative state (see ``ReportProbe``)."""
        self._start_publisher()
        key = page_key(message["run_id"], message["attempt_id"])
        page = self.pages.get(key)
        if page is None:
            page = {
                "run_id": message["run_id"],
                "run_name": message["run_name"],
                "attempt_id": message["attempt_id"],
                "world_size": message["world_size"],
                "placement_group_id": message.get("placement_group_id"),
                "first_seen_at": time.time(),
                "chunks": {},
                "beat_chunks": {},
            }
            self.pages[key] = page
        self.pages.move_to_end(key)
        rank = int(message["rank"])
        record = {k: v for k, v in message.items() if k not in BEAT_FIELDS}
        beat = {k: message[k] for k in BEAT_FIELDS if k in message and k != "sent_at"}
        beat["received_at"] = time.time()
        self.version += 1
        beats = page["beat_chunks"].setdefault(
            rank // BEAT_CHUNK_RANKS, {"version": 0, "ranks": {}}
        )
        beats["ranks"][str(rank)] = beat
        beats["version"] = self.version
        chunk = page["chunks"].setdefault(rank // PAGE_CHUNK_RANKS, {"version": 0, "ranks": {}})
        before = chunk["ranks"].get(str(rank))
        if before != record:
            self.ranks_held += before is None
            chunk["ranks"][str(rank)] = record
            chunk["version"] = self.version
            # the rank's own number: a reader keeps the others' records of this chunk
            # (``model.untrusted_ledger_page``)
            chunk.setdefault("rank_versions", {})[str(rank)] = self.version
        while len(self.pages) > MAX_PAGES or (
            self.ranks_held > MAX_RANK_RECORDS and len(self.pages) > 1
        ):
            evicted_key, evicted = self.pages.popitem(last=False)
            self.ranks_held -= sum(len(c["ranks"]) for c in evicted["chunks"].values())
            for gone in [
                BEAT_PREFIX + chunk_key(evicted_key, n) for n in evicted["beat_chunks"]
            ] + [PAGE_PREFIX + chunk_key(evicted_key, n) for n in evicted["chunks"]]:
                self.published.pop(gone, None)
                kv_del_in_cluster(gone)

    def _versions(self) -> dict[str, int]:
        """Every KV key of the pages (chunks and beats) and its version now."""
        versions = {}
        for key, page in self.pages.items():
            for n, chunk in page["chunks"].items():
                versions[PAGE_PREFIX + chunk_key(key, n)] = chunk["version"]
            for n, beats in page["beat_chunks"].items():
                versions[BEAT_PREFIX + chunk_key(key, n)] = beats["version"]
        return versions

    def _value(self, kv_key: str) -> bytes:
        """What ``kv_key`` (one of ``_versions``) holds: a chunk as a page of its ranks, or
        the beats of a chunk's ranks."""
        if kv_key.startswith(BEAT_PREFIX):
            key, n = split_chunk_key(kv_key[len(BEAT_PREFIX) :])
            return json.dumps({"ranks": self.pages[key]["beat_chunks"][n]["ranks"]}).encode()
        key, n = split_chunk_key(kv_key[len(PAGE_PREFIX) :])
        page = self.pages[key]
        header = {k: v for k, v in page.items() if k not in ("chunks", "beat_chunks")}
        chunk = page["chunks"][n]
        return json.dumps({**header, "ranks": chunk["ranks"],
                           "rank_versions": chunk.get("rank_versions", {})}).encode()  # fmt: skip

    async def _publish_loop(self) -> None:
        last_index = 0.0
        while True:
            await asyncio.sleep(PUBLISH_INTERVAL_S)
            try:
                versions = self._versions()
                changed = [k for k, v in versions.items() if v != self.published.get(k)]
                for kv_key in changed:
                    kv_put_in_cluster(kv_key, self._value(kv_key))
                    self.published[kv_key] = versions[kv_key]
                runs = [k for k, (v, _) in self.runs.items() if v != self.published_runs.get(k)]
                for run_id in runs:
                    version, record = self.runs[run_id]
                    kv_put_in_cluster(RUN_PREFIX + run_id, json.dumps(record).encode())
                    self.published_runs[run_id] = version
                changed += runs
                now = time.time()
                if changed or now - last_index >= INDEX_HEARTBEAT_S:
                    index = LedgerIndex(
                        started_at=self.started_at,
                        published_at=now,
                        pages={
                            k[len(PAGE_PREFIX) :]: v
                            for k, v in versions.items()
                            if k.startswith(PAGE_PREFIX)
                        },
                        beats={
                            k[len(BEAT_PREFIX) :]: v
                            for k, v in versions.items()
                            if k.startswith(BEAT_PREFIX)
                        },
                        runs={k: v for k, (v, _) in self.runs.items()},
                    )
                    kv_put_in_cluster(INDEX_KEY, json.dumps(index).encode())
                    last_index = now
            except Exception:  # a KV hiccup must not end the loop; the next tick retries
                self.published.clear()
                self.published_runs.clear()


def call_failed(ref: Any) -> bool:
    """Whether a call to the Ledger, made earlier, has failed: its ref is ready and holds
    an error (the Ledger died). A call to a dead actor does not raise when made, only
    through its ref; one not ready yet has not failed."""
    # heavy: Ray, already loaded in the Ray process this runs in
    import ray

    ready, _ = ray.wait([ref], timeout=0)
    if not ready:
        return False
    try:
        ray.get(ready[0])
    except Exception:
        return True
    return False


def get_or_create_ledger() -> Any:
    """The ledger actor handle, creating it (detached, 0 CPU, head node) if missing."""
    # heavy: Ray, already loaded in the Ray process this runs in
    import ray

    actor = ray.remote(Ledger).options(
        name=LEDGER_NAME,
        namespace=LEDGER_NAMESPACE,
        lifetime="detached",
        get_if_exists=True,
        num_cpus=0,
        resources={"node:__internal_head__": 0.001},
        max_restarts=-1,
        max_concurrency=64,
        # Explicit, so that a probe inside a Tune trial's placement group (which captures
        # child actors) does not try to place the ledger into that group's bundles.
        scheduling_strategy="DEFAULT",
    )
    return actor.remote()
