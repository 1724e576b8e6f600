"""The Ledger: one named, detached actor that collects every probe's report counts.

``raytop_ledger`` in namespace ``raytop``, 0 CPU, pinned to the head node (DESIGN
decision 2). Probes send their whole cumulative state (fire-and-forget ``update``), so a
ledger that is killed and recreated is whole again after one flush. Memory is bounded:
at most ``MAX_PAGES`` attempts (least recently updated evicted), one record per rank.

It publishes into the GCS internal KV (the namespace and keys in ``wire.kv_keys``):
``ledger/index`` (its start time, last publish time and each page's version) and
``ledger/page/<key>`` for the pages that changed. Readers fetch the index and only the
changed pages: O(1) calls per refresh whatever the cluster size, and raytop never has to
join the cluster as a driver.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from typing import Any

from raytop.model.records import LedgerIndex, RankReport, RunAttempts
from raytop.wire.cluster_kv import kv_del_in_cluster, kv_put_in_cluster
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, RUN_PREFIX, page_key

LEDGER_NAME = "raytop_ledger"
LEDGER_NAMESPACE = "raytop"
MAX_PAGES = 256
MAX_RUNS = 256  # run records (RunProbe), least recently updated evicted
PUBLISH_INTERVAL_S = 0.1  # when something changed
INDEX_HEARTBEAT_S = 1.0  # otherwise: proves the ledger is alive


class Ledger:
    def __init__(self) -> None:
        self.started_at = time.time()
        self.pages: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.version = 0
        self.published: dict[str, int] = {}
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
                "ranks": {},
            }
            self.pages[key] = page
        self.pages.move_to_end(key)
        page["ranks"][str(message["rank"])] = {**message, "received_at": time.time()}
        self.version += 1
        page["version"] = self.version
        while len(self.pages) > MAX_PAGES:
            evicted, _ = self.pages.popitem(last=False)
            self.published.pop(evicted, None)
            kv_del_in_cluster(PAGE_PREFIX + evicted)

    async def _publish_loop(self) -> None:
        last_index = 0.0
        while True:
            await asyncio.sleep(PUBLISH_INTERVAL_S)
            try:
                changed = [
                    k for k, p in self.pages.items() if p["version"] != self.published.get(k)
                ]
                for key in changed:
                    kv_put_in_cluster(PAGE_PREFIX + key, json.dumps(self.pages[key]).encode())
                    self.published[key] = self.pages[key]["version"]
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
                        pages={k: p["version"] for k, p in self.pages.items()},
                        runs={k: v for k, (v, _) in self.runs.items()},
                    )
                    kv_put_in_cluster(INDEX_KEY, json.dumps(index).encode())
                    last_index = now
            except Exception:  # a KV hiccup must not end the loop; the next tick retries
                self.published.clear()
                self.published_runs.clear()


def get_or_create_ledger() -> Any:
    """The ledger actor handle, creating it (detached, 0 CPU, head node) if missing."""
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
