"""The pipeline's join, without a cluster: a stand-in GCS reader and KV store serve the
shapes the real ones return (a node, a ledger index and page as the probe publishes them),
an experiment folder on disk names the trial, and one ``collect()`` must attach the Train
run to its trial, derive every rank's state with the collector's thresholds, and name the
barrier stall. The same code runs against a real cluster in tests/integration."""

from __future__ import annotations

import json
import time

from raytop.model.thresholds import Thresholds
from raytop.pipeline.collect import SnapshotCollector
from raytop.rundir import train_run_name
from raytop.sources.placement_source import PlacementReader
from raytop.wire import kv_keys
from tests.fakes import FakeKv

NODE = {"node_id": "n1", "address": "127.0.0.1", "alive": True, "is_head": True,
        "resources_total": {"CPU": 4.0}, "resources_available": {"CPU": 2.0},
        "labels": {}}  # fmt: skip


def rank(r: int, entered: int, exited: int, entered_at: float, now: float,
         run_path: str | None = None) -> dict:  # fmt: skip
    return {"rank": r, "local_rank": r, "node_rank": 0, "node_id": "n1", "gpu_ids": [],
            "pid": 100 + r, "entered": entered, "exited": exited, "last_enter_at": entered_at,
            "last_exit_at": entered_at if exited == entered else None, "usual_interval_s": 2.0,
            "done": False, "dropped": 0, "sent_at": now, "cpu_percent": 1.0,
            "rss_bytes": 1, "gpu_memory_bytes": None, "run_path": run_path, "checkpoints": [],
            "syncs": [], "stack_request": None, "stack": None, "received_at": now}  # fmt: skip


class Gcs:
    def nodes(self):
        return [NODE]

    def actors(self):
        return {}

    def placement_groups(self):
        return []

    def reset(self):
        pass


def test_one_collect_joins_the_run_to_its_trial_and_names_the_stall(tmp_path):
    now = time.time()
    run_name = train_run_name("exp", "t1")
    run_dir = tmp_path / "exp" / "train_runs" / run_name
    run_dir.mkdir(parents=True)
    (run_dir / "checkpoint_manager_snapshot.json").write_text('{"checkpoint_results": [')
    ranks = {"0": rank(0, 3, 2, now - 30, now, str(run_dir)),
             "1": rank(1, 2, 2, now - 32, now, str(run_dir))}  # fmt: skip
    page = {"run_id": "r", "run_name": run_name, "attempt_id": "a", "world_size": 2,
            "placement_group_id": None, "first_seen_at": now - 60, "ranks": ranks}  # fmt: skip
    index = {"started_at": now - 100, "published_at": now, "pages": {"r.a": 1}}
    kv = FakeKv({kv_keys.INDEX_KEY: json.dumps(index).encode(),
             kv_keys.PAGE_PREFIX + "r.a": json.dumps(page).encode()})  # fmt: skip
    experiment = tmp_path / "exp"
    (experiment / ".raytop").mkdir()
    (experiment / ".raytop" / "trials.json").write_text(
        json.dumps(
            {"trials": [{"trial_id": "t1", "status": "RUNNING", "config": {}, "metrics": {}}]}
        )
    )

    collector = SnapshotCollector(
        "127.0.0.1:1",
        experiments=[(str(experiment), None)],
        thresholds=Thresholds(stall_after_s=10),
        gcs=(Gcs(), kv),
    )
    snapshot = collector.collect()

    assert snapshot.cluster.connected and snapshot.cluster.total("CPU") == 4.0
    (exp,) = snapshot.experiments
    (run,) = exp.runs
    assert (run.run_name, run.trial_id) == (run_name, "t1")
    assert [(w.rank, w.state, w.behind) for w in run.workers] == [
        (0, "waiting", 0),
        (1, "behind", 1),
    ]
    # The run's torn snapshot is a warning of its experiment, attached by the run's name.
    assert any(w.startswith(f"{run_name}/checkpoint_manager_snapshot.json") for w in exp.warnings)
    (stall,) = [f for f in snapshot.findings if f.kind == "barrier_stall"]
    assert "rank 1" in stall.message
    # The collector's threshold, not a default: under a 60 s stall_after, no stall yet.
    patient = SnapshotCollector(
        "127.0.0.1:1",
        experiments=[(str(experiment), None)],
        thresholds=Thresholds(stall_after_s=60),
        gcs=(Gcs(), kv),
    )
    assert not [f for f in patient.collect().findings if f.kind == "barrier_stall"]


def test_nodes_on_this_host_get_its_os_figures_and_no_other_node_does(tmp_path):
    """Ray's logical CPUs are bookkeeping: the node on raytop's own host (here loopback)
    also carries what the OS says; a node elsewhere carries nothing rather than a guess."""
    far = {**NODE, "node_id": "n2", "address": "203.0.113.9", "is_head": False}

    class TwoNodes(Gcs):
        def nodes(self):
            return [NODE, far]

    collector = SnapshotCollector("127.0.0.1:1", experiments=[], gcs=(TwoNodes(), FakeKv({})))
    here, there = collector.collect().cluster.nodes
    assert here.host is not None and there.host is None
    assert here.host.cpus >= 1 and 0 < here.host.memory_used <= here.host.memory_total
    assert 0.0 <= here.host.cpu_percent <= 100.0


def test_a_resumed_run_is_its_newest_controller_and_its_restore_is_read_from_storage(tmp_path):
    """``raytop resume`` gives a Train run a new controller: the same name, a new run id.
    The trial shows the newest (whatever order the KV lists them in), the older one is not
    an "other run", and the new controller's first attempt, which its RunProbe saw start
    fresh, gets the metrics of the checkpoint its ranks say they started from, from Train's
    snapshot: a loop that starts at epoch 0 again is going backwards."""
    now = time.time()
    run_name = train_run_name("exp", "t1")
    run_dir = tmp_path / "exp" / "train_runs" / run_name
    run_dir.mkdir(parents=True)
    (run_dir / "checkpoint_manager_snapshot.json").write_text(json.dumps({
        "checkpoint_results": [{"checkpoint_dir_name": "checkpoint_e4", "metrics": {"epoch": 4}}],
        "latest_checkpoint_result": {"checkpoint_dir_name": "checkpoint_e4",
                                     "metrics": {"epoch": 4}},
    }))  # fmt: skip

    def page(run_id: str, first_seen: float, restored_from: str | None) -> bytes:
        ranks = {str(r): {**rank(r, 1, 1, now - 1, now, str(run_dir)),
                          "restored_from": restored_from} for r in (0, 1)}  # fmt: skip
        return json.dumps({"run_id": run_id, "run_name": run_name, "attempt_id": "a",
                           "world_size": 2, "placement_group_id": None,
                           "first_seen_at": first_seen, "ranks": ranks}).encode()  # fmt: skip

    record = {"run_id": "new", "run_name": run_name, "failure_config": {}, "sent_at": now,
              "attempts": [{"index": 1, "attempt_id": "a", "status": "running",
                            "started_at": now - 5, "ended_at": None, "error_class": None,
                            "error": None, "failure_class": None,
                            "first_report": {"epoch": 0.0}, "restored": None}]}  # fmt: skip
    index = {"started_at": now - 100, "published_at": now, "pages": {"new.a": 1, "old.a": 1},
             "runs": {"new": 1}}  # fmt: skip
    kv = FakeKv({kv_keys.INDEX_KEY: json.dumps(index).encode(),
                 kv_keys.PAGE_PREFIX + "new.a": page("new", now - 5, "checkpoint_e4"),
                 kv_keys.PAGE_PREFIX + "old.a": page("old", now - 90, None),
                 kv_keys.RUN_PREFIX + "new": json.dumps(record).encode()})  # fmt: skip
    experiment = tmp_path / "exp"
    (experiment / ".raytop").mkdir()
    (experiment / ".raytop" / "trials.json").write_text(json.dumps(
        {"trials": [{"trial_id": "t1", "status": "RUNNING", "config": {}, "metrics": {}}]}
    ))  # fmt: skip
    snapshot = SnapshotCollector("127.0.0.1:1", experiments=[(str(experiment), None)],
                                 gcs=(Gcs(), kv)).collect()  # fmt: skip
    (run,) = snapshot.experiments[0].runs
    assert run.run_id == "new" and snapshot.runs == ()
    (attempt,) = run.attempts
    assert (attempt.restored_from, attempt.restored) == ("checkpoint_e4", {"epoch": 4.0})
    (back,) = [f for f in snapshot.findings if f.kind == "progress_backwards"]
    assert back.evidence["checkpoint"] == "checkpoint_e4" and back.evidence["first_report"] == 0.0


def test_a_trials_registration_is_fetched_by_its_actor_once_and_never_listed(tmp_path, monkeypatch):
    """Placement and the runs of no experiment both need the trials' registrations: one
    fetch serves both, by the alive trial actor's own key (never a listing of every trial
    that ever registered); a trial known is not asked for again, nor are the actors an
    alive actor owns (a trial is its driver's) or in no group (a trial runs in its own)."""
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))  # a bare raytop: no registry
    group = {"pg_id": "pg1", "name": "", "strategy": "PACK", "state": "CREATED",
             "scheduling_state": "FINISHED", "attempts": 1, "created_at": None,
             "creator_job_id": "01000000", "creator_actor_id": "a1", "creator_dead": False,
             "detached": False, "bundles": [{"index": 0, "resources": {"CPU": 1.0},
                                             "node_id": "n1"}]}  # fmt: skip
    actor = {"class_name": "ImplicitFunc", "job_id": "01000000", "pid": 7, "node_id": "n1",
             "address": "127.0.0.1:1", "owner": "127.0.0.1:2", "pg_id": "pg1"}  # fmt: skip
    controller = {**actor, "class_name": "TrainController", "pid": 8,
                  "address": "127.0.0.1:3", "owner": "127.0.0.1:1"}  # fmt: skip
    ledger = {**actor, "class_name": "Ledger", "pid": 9, "address": "127.0.0.1:4", "pg_id": ""}

    class WithGroups(Gcs):
        def placement_groups(self):
            return [group]

        def actors(self):
            return {"a1": actor, "c1": controller, "l1": ledger}

    registration = {"experiment": "exp", "trial_id": "t1", "actor_id": "a1", "pg_id": "pg1"}
    kv = FakeKv({kv_keys.TRIAL_PREFIX + "a1": json.dumps(registration).encode()})
    collector = SnapshotCollector("127.0.0.1:1", gcs=(WithGroups(), kv))
    for _ in range(2):
        (placed,) = collector.collect().placement_groups
        assert (placed.owner_kind, placed.trial_id) == ("trial", "t1")
    asked = [keys for keys in kv.multi_gets if any(k.startswith("trial/") for k in keys)]
    assert asked == [[kv_keys.TRIAL_PREFIX + "a1"]]


def test_a_runs_checkpoints_are_worked_out_again_only_when_their_inputs_changed(tmp_path):
    """``pipeline.run_checkpoints``: the same pages, snapshot and folders give the very same
    records; a changed page, a new folder or an upload in flight (its duration grows) do
    not."""
    now = time.time()
    run_name = train_run_name("exp", "t1")
    run_dir = tmp_path / "exp" / "train_runs" / run_name
    (run_dir / "checkpoint_000001").mkdir(parents=True)
    upload = {"dir_name": "checkpoint_000001", "report": 1, "mode": "SYNC",
              "custom_upload": False, "files": {"model.pt": 10}, "sync_s": 0.1,
              "start": now - 5, "end": now - 4, "error": None}  # fmt: skip

    def publish(version: int, uploads: list[dict]) -> None:
        ranks = {"0": {**rank(0, 1, 1, now - 5, now, str(run_dir)), "checkpoints": uploads}}
        page = {"run_id": "r", "run_name": run_name, "attempt_id": "a", "world_size": 1,
                "placement_group_id": None, "first_seen_at": now - 60, "ranks": ranks}  # fmt: skip
        index = {"started_at": now - 100, "published_at": time.time(), "pages": {"r.a": version}}
        kv.data[kv_keys.INDEX_KEY] = json.dumps(index).encode()
        kv.data[kv_keys.PAGE_PREFIX + "r.a"] = json.dumps(page).encode()

    kv = FakeKv()
    publish(1, [upload])
    (tmp_path / "exp" / ".raytop").mkdir()
    (tmp_path / "exp" / ".raytop" / "trials.json").write_text(
        json.dumps({"trials": [{"trial_id": "t1", "status": "RUNNING", "config": {}}]})
    )
    collector = SnapshotCollector(
        "127.0.0.1:1", experiments=[(str(tmp_path / "exp"), None)], gcs=(Gcs(), kv)
    )

    def checkpoints():
        ((run,),) = (e.runs for e in collector.collect().experiments)
        return run.checkpoints

    first = checkpoints()
    assert [(c.dir_name, c.state) for c in first] == [("checkpoint_000001", "uploaded")]
    assert checkpoints() is first  # nothing changed
    (run_dir / "checkpoint_000002").mkdir()
    assert checkpoints() is not first and checkpoints() == first  # a folder: worked out again
    publish(2, [upload, {**upload, "dir_name": "checkpoint_000002", "report": 2, "end": None}])
    in_flight = checkpoints()
    assert [c.state for c in in_flight] == ["uploaded", "uploading"]
    assert checkpoints() is not in_flight  # its duration grows: never kept


def test_the_placement_reader_reads_and_the_pipeline_says_why_a_group_waits(tmp_path, monkeypatch):
    """``PlacementReader`` returns the groups as the GCS has them (no judgement); the
    collection gives an unplaced one its reason (``pipeline.pending``)."""
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    group = {"pg_id": "pg1", "name": "", "strategy": "PACK", "state": "PENDING",
             "scheduling_state": "INFEASIBLE", "attempts": 3, "created_at": None,
             "creator_job_id": "01000000", "creator_actor_id": "", "creator_dead": False,
             "detached": False, "bundles": [{"index": 0, "resources": {"GPU": 1.0},
                                             "node_id": None}]}  # fmt: skip

    class Waiting(Gcs):
        def placement_groups(self):
            return [group]

    (read,) = PlacementReader(Waiting(), FakeKv()).read([], (), {})
    assert not read.placed and read.why_pending is None
    collector = SnapshotCollector("127.0.0.1:1", gcs=(Waiting(), FakeKv()))
    (judged,) = collector.collect().placement_groups
    assert judged.why_pending == "bundle 0 needs {GPU: 1}; no node has GPU"
