"""The ReportProbe's report history, without Ray: what a rank's state sends is what the
reader validates into ``Worker.report_times`` / ``report_exits``."""

from __future__ import annotations

import json
import time

import psutil

from raytop.model import untrusted_ledger_page
from raytop.model.records import MAX_REPORT_HISTORY
from raytop.probe.rank_state import RankState
from raytop.sources.ledger_records import worker_from_record
from raytop.wire.train_hooks import WorkerIdentity

IDENTITY = WorkerIdentity(
    run_id="r", run_name="exp-t1", attempt_id="a", world_rank=1, world_size=2, local_rank=1,
    node_rank=0, node_id="n1", gpu_ids=[], placement_group_id=None, run_path="/tmp/run",
    declared={"CPU": 1.0}, restored_from="checkpoint_2026-12-04_08-00-00.000001",
)  # fmt: skip


def state() -> RankState:
    # A flush period far beyond the test: the flush thread never sends (no Ray here).
    return RankState(IDENTITY, flush_interval_s=3600.0)


def test_the_probe_sends_its_last_reports_bounded_and_the_reader_keeps_them():
    rank = state()
    before = time.time()
    for _ in range(MAX_REPORT_HISTORY + 8):
        rank.enter()
        rank.exit()
    rank.enter()  # inside the newest report
    message = rank._message(psutil.Process())
    history = message["report_times"]
    assert len(history) == MAX_REPORT_HISTORY
    assert all(before <= entered <= exited for entered, exited in history[:-1])
    assert history[-1][0] >= history[-2][1] and history[-1][1] is None
    # The sent copy does not change when the rank goes on.
    rank.exit()
    assert message["report_times"][-1][1] is None
    page = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 2,
            "first_seen_at": 1.0, "placement_group_id": None,
            "ranks": {"1": {**message, "received_at": time.time()}}}  # fmt: skip
    record = untrusted_ledger_page.ledger_page(json.loads(json.dumps(page)))["ranks"]["1"]
    worker = worker_from_record(record)
    assert worker.report_times == tuple(entered for entered, _ in history)
    assert worker.report_exits[-1] is None and None not in worker.report_exits[:-1]
    assert worker.reports_entered == MAX_REPORT_HISTORY + 9
    assert worker.declared_resources == {"CPU": 1.0}  # what Ray assigned it, beside its use
    assert worker.restored_from == "checkpoint_2026-12-04_08-00-00.000001"


def test_an_exit_with_no_entry_recorded_adds_nothing():
    rank = state()
    rank.exit()
    assert list(rank.history) == []
    assert rank._message(psutil.Process())["report_times"] == []
