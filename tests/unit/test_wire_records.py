"""The probe's wire records (model.records) against what is already in the KV store: a page
published by the raytop before the records were typed still validates into them, reads
into the same workers and checkpoint pipeline, and writes back as the same JSON; the two
sides meet only in raytop.wire and raytop.model."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from raytop.diagnose.checkpoints import pipeline
from raytop.model import untrusted_ledger_page
from raytop.sources.ledger_source import LedgerReader
from raytop.wire import kv_keys

# A page as the untyped Ledger published it (one rank; its second upload is from a probe
# older than barrier timing, so it has no sync_s).
OLD_PAGE = (
    b'{"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 2, '
    b'"placement_group_id": "pg", "first_seen_at": 1016.0, "ranks": {"1": {"run_id": "r", '
    b'"run_name": "exp-t1", "attempt_id": "a", "world_size": 2, "rank": 1, "local_rank": 1, '
    b'"node_rank": 0, "node_id": "n", "gpu_ids": ["0"], "placement_group_id": "pg", '
    b'"pid": 7265, "entered": 2, "exited": 2, "last_enter_at": 1007.0, '
    b'"last_exit_at": 1011.0, "usual_interval_s": 6.0, "done": false, "dropped": 0, '
    b'"sent_at": 1014.0, "cpu_percent": 5.0, "rss_bytes": 1234, "gpu_memory_bytes": null, '
    b'"run_path": "/tmp/run", "checkpoints": [{"dir_name": "checkpoint_1", "report": 1, '
    b'"mode": "SYNC", "custom_upload": false, "files": {"model.pt": 10}, "sync_s": 1.0, '
    b'"start": 1004.0, "end": 1005.0, "error": null}, {"dir_name": "checkpoint_2", '
    b'"report": 2, "mode": "ASYNC", "custom_upload": true, "files": {}, "start": 1012.0, '
    b'"end": null, "error": null}], "syncs": [[1, 1002.0, 1003.0], [2, 1008.0, 1009.5]], '
    b'"stack_request": "req1", "stack": "stack text", "received_at": 1017.0}}, "version": 1}'
)
OLD_INDEX = b'{"started_at": 1015.0, "published_at": 1019.0, "pages": {"r.a": 1}}'


def test_the_key_names_are_the_ones_already_in_the_store():
    assert (kv_keys.KV_NAMESPACE, kv_keys.INDEX_KEY, kv_keys.PAGE_PREFIX) == (
        "raytop", "ledger/index", "ledger/page/"
    )  # fmt: skip
    assert (kv_keys.STACKS_COMMAND_KEY, kv_keys.TRIAL_PREFIX) == ("cmd/stacks", "trial/")
    assert kv_keys.page_key("r", "a") == "r.a"


def test_an_old_page_validates_into_the_records():
    page = untrusted_ledger_page.ledger_page(json.loads(OLD_PAGE))
    rank = page["ranks"]["1"]
    assert (rank["rank"], rank["entered"], rank["received_at"], rank["stack"]) == (
        1, 2, 1017.0, "stack text"
    )  # fmt: skip
    first, second = rank["checkpoints"]
    assert (first["dir_name"], first["sync_s"], first["files"]) == ("checkpoint_1", 1.0,
                                                                    {"model.pt": 10})  # fmt: skip
    assert second["sync_s"] is None and second["end"] is None and second["custom_upload"]
    assert rank["syncs"] == ((1, 1002.0, 1003.0), (2, 1008.0, 1009.5))
    assert all(type(wait) is tuple for wait in rank["syncs"])  # untracked by the collector
    assert rank["syncs"][1][2] == 1009.5  # (report, start, end)
    # Written back, the records are the JSON they came from.
    old = json.loads(OLD_PAGE)["ranks"]["1"]
    assert json.loads(json.dumps(rank["syncs"])) == old["syncs"]
    assert json.loads(json.dumps(first)) == old["checkpoints"][0]


def test_an_old_page_reads_into_workers_and_the_checkpoint_pipeline():
    class Kv:
        data = {kv_keys.INDEX_KEY: OLD_INDEX, kv_keys.PAGE_PREFIX + "r.a": OLD_PAGE}

        def get(self, key):
            return self.data.get(key)

        def multi_get(self, keys):
            return {k: self.data[k] for k in keys if k in self.data}

    reader = LedgerReader(Kv())
    (run,), status = reader.read(now=1020.0)
    assert status.available and status.warnings == ()
    (worker,) = run.workers
    # its heartbeat (1017) 2 s old as of the index's publish (1019): ages run to it
    at = status.known_at(1020.0)
    assert (worker.rank, worker.reports_entered, worker.since_beat(at), worker.gpu_ids) == (
        1, 2, 2.0, ("0",)
    )  # fmt: skip
    assert run.run_path == "/tmp/run"
    uploads, syncs = reader.uploads("r", "a"), reader.syncs("r", "a")
    assert list(uploads) == list(syncs) == [1]
    done, uploading = pipeline(uploads, None, None, now=1020.0, syncs=syncs)
    assert (done.dir_name, done.state, done.sync_s, done.throughput_bps) == (
        "checkpoint_1", "uploaded", {1: 1.0}, 10.0
    )  # fmt: skip
    assert (uploading.state, uploading.custom_upload, uploading.sync_s) == (
        "uploading", True, {1: 1.5}
    )  # fmt: skip


def _raytop_imports(package: str) -> set[str]:
    root = Path(__file__).resolve().parents[2] / "src" / "raytop" / package
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("raytop.")}


def test_probe_and_sources_meet_only_in_wire_and_model():
    assert not {m for m in _raytop_imports("probe") if m.startswith("raytop.sources")}
    assert not {m for m in _raytop_imports("sources") if m.startswith("raytop.probe")}
    assert not {m for m in _raytop_imports("wire") if m.split(".")[1] in ("probe", "sources")}
