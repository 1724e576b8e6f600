"""Runs raytop did not launch, without a cluster: Tune experiments in Tune's default
storage (``sources.tune_home``: live and recent ones read, older ones only counted), tied
to their driver's job (``pipeline.foreign``: its status, how it ended), their placement
groups named (a trial's, else the job's command), and the one list of everything that
runs (``pipeline.workloads``), in JSON and in ``raytop status``'s text."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from raytop.faces.text import status_text
from raytop.model import (
    Bundle,
    Experiment,
    ExperimentStatus,
    PlacementGroup,
    Snapshot,
    TrainRun,
    Trial,
    Worker,
)
from raytop.model.jobs import Job
from raytop.pipeline.collect import SnapshotCollector
from raytop.pipeline.foreign import find_driver, with_driver
from raytop.pipeline.workloads import workloads
from raytop.sources.tune_home import RECENT_S, TuneHome
from raytop.wire.jobs import JOB_INFO_NAMESPACE, submission_key
from tests.fakes import FakeKv

NODE = {"node_id": "n1", "address": "127.0.0.1", "alive": True, "is_head": True,
        "resources_total": {"CPU": 4.0}, "resources_available": {"CPU": 0.0},
        "labels": {}}  # fmt: skip
ENTRYPOINT = "python -m ray.tune.examples.async_hyperband_example --smoke-test"


def tune_experiment(folder: Path, started_at: float, trials: list[tuple[str, str, dict]]) -> Path:
    """An experiment folder as Tune leaves it: its state (trials in Tune's own order, the
    driver's start) and one folder per trial."""
    folder.mkdir(parents=True)
    rows = [[json.dumps({"trial_id": tid, "status": status, "config": {"width": 1.0}}),
             json.dumps({"last_result": last, "num_failures": 0})]
            for tid, status, last in trials]  # fmt: skip
    state = {"trial_data": rows, "runner_data": {"_start_time": started_at, "_metric": "loss"},
             "stats": {"start_time": started_at}}  # fmt: skip
    (folder / "experiment_state-2026-12-05_01-00-00.json").write_text(json.dumps(state))
    for tid, _, _ in trials:
        (folder / f"easy_objective_{tid}_0_width=1").mkdir()
    return folder


def table_row(job_id: str, start: float, sid: str | None, *, dead: bool = False,
              end: float = 0.0, entrypoint: str = ENTRYPOINT) -> dict:  # fmt: skip
    return {"job_id": job_id, "dead": dead, "driver_pid": 777, "driver_ip": "127.0.0.1",
            "start_ms": int(start * 1000), "end_ms": int(end * 1000), "entrypoint": entrypoint,
            "submission_id": sid, "namespace": "anon"}  # fmt: skip


def job_record(status: str) -> bytes:
    return json.dumps({"status": status, "entrypoint": ENTRYPOINT, "message": None}).encode()


class Gcs:
    """The GCS reader's calls, over fixed rows: the trial actors and groups of a Tune
    driver raytop did not launch (job 05000000)."""

    def __init__(self, actors: dict, groups: list[dict]) -> None:
        self._actors, self._groups = actors, groups

    def nodes(self):
        return [NODE]

    def actors(self):
        return self._actors

    def placement_groups(self):
        return self._groups

    def reset(self):
        pass


def group(pg_id: str, job: str, placed: bool, cpu: float = 1.0) -> dict:
    return {"pg_id": pg_id, "name": "", "strategy": "PACK",
            "state": "CREATED" if placed else "PENDING",
            "scheduling_state": "FINISHED" if placed else "NO_RESOURCES", "attempts": 1,
            "created_at": time.time() - 5, "creator_job_id": job, "creator_actor_id": "ff" * 16,
            "creator_dead": False, "detached": False,
            "bundles": [{"index": 0, "resources": {"CPU": cpu},
                         "node_id": "n1" if placed else None}]}  # fmt: skip


def trial_actor(pid: int, pg_id: str, job: str = "05000000") -> dict:
    return {"class_name": "ImplicitFunc", "job_id": job, "pid": pid, "node_id": "n1",
            "address": f"127.0.0.1:{pid}", "owner": "127.0.0.1:1", "pg_id": pg_id}  # fmt: skip


def test_a_live_foreign_experiment_is_running_in_id_order_with_its_job_and_groups(tmp_path):
    """The issue's reproduction: a Tune example submitted as a job, found with no flag in
    the default storage: RUNNING (not UNKNOWN), trials in id order, its pending trials
    with their reason, its groups named (the running trial's by its actor, the waiting
    ones as pending trials), and one row of the one list saying where it comes from."""
    now = time.time()
    home = tmp_path / "ray_results"
    trials = [("4e1a3_00002", "PENDING", {}), ("4e1a3_00000", "RUNNING",
              {"pid": 901, "node_ip": "127.0.0.1", "loss": 1.0, "training_iteration": 1}),
              ("4e1a3_00001", "PENDING", {})]  # fmt: skip
    tune_experiment(home / "asynchyperband_test", now - 20, trials)
    kv = FakeKv({}, namespaces={JOB_INFO_NAMESPACE: {
        submission_key("raysubmit_T"): job_record("RUNNING")}})  # fmt: skip
    kv.jobs = [table_row("05000000", now - 30, "raysubmit_T"),
               table_row("04000000", now - 200, None, dead=True, end=now - 100,
                         entrypoint="python old.py")]  # fmt: skip
    groups = [group("aa", "05000000", placed=True), group("bb", "05000000", placed=False),
              group("cc", "05000000", placed=False)]  # fmt: skip
    gcs = Gcs({"a1": trial_actor(901, "aa")}, groups)
    collector = SnapshotCollector("127.0.0.1:1", experiments=[], gcs=(gcs, kv),
                                  tune_home=[str(home)])  # fmt: skip
    snapshot = collector.collect()

    (exp,) = snapshot.experiments
    assert exp.status == ExperimentStatus.RUNNING and exp.job_id == "05000000"
    assert [t.trial_id for t in exp.trials] == ["4e1a3_00000", "4e1a3_00001", "4e1a3_00002"]
    assert all(t.pending_reason for t in exp.trials if t.status == "PENDING")
    by_pg = {g.pg_id: g for g in snapshot.placement_groups}
    assert (by_pg["aa"].owner_kind, by_pg["aa"].trial_id) == ("trial", "4e1a3_00000")
    assert by_pg["bb"].owner_label == "pending trial of asynchyperband_test"
    row = snapshot.workloads[0]
    assert (row.kind, row.status, row.origin, row.submission_id) == (
        "experiment",
        "RUNNING",
        "ray_job",
        "raysubmit_T",
    )
    assert row.entrypoint == ENTRYPOINT and row.origin_label.startswith("Ray job raysubmit_T: ")
    assert (row.cpu, row.waiting, row.live) == (1.0, 2, True)
    assert row.summary == "3 trials: 2 pending, 1 running"
    # The job that ended 100 s ago, with no run of its own, is a row too, after.
    assert [(w.kind, w.status, w.how_ended) for w in snapshot.workloads[1:]] == [
        ("job", "ENDED", "driver exited")
    ]
    text = status_text(snapshot)
    assert "runs on the cluster (2):" in text
    assert "RUNNING      experiment asynchyperband_test · Ray job raysubmit_T: python -m" in text
    again = Snapshot.from_json(json.loads(json.dumps(snapshot.to_json())))
    assert again.workloads == snapshot.workloads and again.jobs == snapshot.jobs


def test_a_stopped_jobs_experiment_is_interrupted_saying_how_and_what_could_resume(tmp_path):
    now = time.time()
    exp = Experiment(name="e", path=str(tmp_path), status=ExperimentStatus.UNKNOWN,
                     trials=(Trial("t0", "TERMINATED"), Trial("t1", "RUNNING"),
                             Trial("t2", "PENDING")))  # fmt: skip
    stopped = Job("05000000", submission_id="raysubmit_S", status="STOPPED", start_time=now - 60,
                  driver_pid=777)  # fmt: skip
    gone, how = with_driver(exp, stopped, jobs_known=True, state_mtime=now, now=now)
    assert (gone.status, how, gone.driver_alive, gone.driver_pid) == (
        ExperimentStatus.INTERRUPTED,
        "stopped",
        False,
        777,
    )
    (row,) = workloads([(gone, False, how)], (), {}, (stopped,), (), {}, now)
    assert (row.status, row.how_ended, row.live, row.resumable) == ("INTERRUPTED", "stopped",
                                                                     False, 2)  # fmt: skip
    assert row.summary == "2 of 3 trials could resume"
    # Every trial ended: FINISHED, whatever its driver does now.
    done = Experiment(name="e", path="p", status=ExperimentStatus.UNKNOWN,
                      trials=(Trial("t0", "TERMINATED"),))  # fmt: skip
    running = Job("06000000", start_time=now - 10)
    assert with_driver(done, running, jobs_known=True, state_mtime=now, now=now)[0].status == (
        ExperimentStatus.FINISHED
    )
    # No job of this cluster ran it: UNKNOWN while its state is fresh, "driver gone" once
    # Tune has not saved it for an hour (a live driver saves it every ~10 s).
    assert with_driver(exp, None, jobs_known=True, state_mtime=now - 60, now=now)[0].status == (
        ExperimentStatus.UNKNOWN
    )
    old, how = with_driver(exp, None, jobs_known=True, state_mtime=now - 7200, now=now)
    assert (old.status, how) == (ExperimentStatus.INTERRUPTED, "driver gone")
    assert with_driver(exp, None, jobs_known=False, state_mtime=now - 7200, now=now)[0] is exp


def test_a_foreign_driver_is_found_by_its_trials_actors_else_by_its_start_on_this_node():
    exp = Experiment(name="e", path="/x", status=ExperimentStatus.UNKNOWN)
    here = Job("05000000", start_time=100.0, driver_ip="10.0.0.1")
    there = Job("06000000", start_time=110.0, driver_ip="10.0.0.2")
    assert find_driver(exp, 120.0, (here, there), set(), None).job_id == "06000000"
    on_this_node = find_driver(exp, 120.0, (here, there), set(), lambda ip: ip == "10.0.0.1")
    assert on_this_node.job_id == "05000000"  # a local folder: its driver wrote it here
    assert find_driver(exp, 120.0, (here, there), {"05000000"}, None).job_id == "05000000"
    assert find_driver(exp, None, (here, there), set(), None) is None


def test_a_train_run_whose_job_was_stopped_is_ended_and_holds_its_group():
    now = time.time()
    ranks = (Worker(rank=0, state="dead"), Worker(rank=1, state="training"))
    run = TrainRun(run_id="r1", run_name="torch_linear", attempt_id="a", world_size=2,
                   placement_group_id="pg1", workers=ranks)  # fmt: skip
    stopped = Job("07000000", submission_id="raysubmit_L", status="STOPPED", start_time=now - 9)
    held = PlacementGroup(pg_id="pg1", strategy="PACK", state="CREATED",
                          scheduling_state="FINISHED",
                          bundles=(Bundle(0, {"CPU": 1.0, "GPU": 1.0}, "n1"),) * 2)  # fmt: skip
    creators = {"pg1": ("07000000", "ab" * 16)}
    (row,) = workloads([], (run,), {"r1": "07000000"}, (stopped,), (held,), creators, now)
    assert (row.kind, row.status, row.how_ended, row.live) == ("train_run", "ENDED", "stopped",
                                                               False)  # fmt: skip
    assert (row.cpu, row.gpu, row.submission_id) == (2.0, 2.0, "raysubmit_L")


def test_a_home_of_old_experiments_costs_a_glance_at_their_times(tmp_path):
    """Hundreds of old experiments: only the home is listed (their folders' times); the
    recent one and the one changed since the oldest live job started are opened."""
    home = tmp_path / "ray_results"
    now = time.time()
    for i in range(200):
        old = tune_experiment(home / f"old_{i:03d}", now - 3 * RECENT_S, [("t", "TERMINATED", {})])
        os.utime(old, (now - 3 * RECENT_S, now - 3 * RECENT_S))
    tune_experiment(home / "recent", now - 60, [("t", "RUNNING", {})])
    live = tune_experiment(home / "long_running", now - 5 * RECENT_S, [("t", "RUNNING", {})])
    os.utime(live, (now - 2 * RECENT_S, now - 2 * RECENT_S))
    (home / "not_tune").mkdir()  # a Train run's folder, say: no Tune state
    found = TuneHome([str(home)])
    names = [Path(p).name for p in found.find(alive_since=None, now=now)]
    assert names == ["recent"]
    assert found._storages[0].lists == 3  # the home, "recent" and "not_tune"
    assert found.older == {str(home): 201}
    names = [Path(p).name for p in found.find(alive_since=now - 2.5 * RECENT_S, now=now)]
    assert names == ["recent", "long_running"]
    found.show_all = True
    assert len(found.find(alive_since=None, now=now)) == 202


def test_a_driver_its_trials_actors_named_is_remembered_after_they_are_gone():
    """Two jobs submitted together: the time of the Tune start cannot tell which drives
    the experiment, its running trial's actor can; once that actor is gone (the trial
    ended) the job it named stays the driver, and it is never guessed from the time."""
    from types import SimpleNamespace

    from raytop.pipeline.others import OtherRuns

    now = time.time()
    here = {"driver_ip": "127.0.0.1"}  # the folder is local: drivers of this node only
    ours = Job("05000000", start_time=now - 30, **here)
    theirs = Job("06000000", start_time=now - 29, **here)
    others = OtherRuns(None, lambda ip: True)
    others.jobs, others.known = (ours, theirs), True
    reader = SimpleNamespace(raytop_dir=None, tune_started_at=now - 25, files_time=None,
                             state_mtime=now)  # fmt: skip
    last = {"pid": 4321, "node_ip": "127.0.0.1"}
    running = Experiment(name="e", path="/r/e", status=ExperimentStatus.UNKNOWN,
                         trials=(Trial("t0", "RUNNING", metrics=last),))  # fmt: skip
    actor = trial_actor(4321, "pg1", job="05000000")
    (found,), _, _ = others.drivers([running], [reader], {"a1": actor}, now)
    assert found.job_id == "05000000"
    ended = Experiment(name="e", path="/r/e", status=ExperimentStatus.UNKNOWN,
                       trials=(Trial("t0", "TERMINATED", metrics=last),))  # fmt: skip
    (found,), _, _ = others.drivers([ended], [reader], {}, now)
    assert (found.job_id, found.status) == ("05000000", ExperimentStatus.FINISHED)
    # A collector that never saw the actor names no job: the time alone is ambiguous.
    fresh = OtherRuns(None, lambda ip: True)
    fresh.jobs, fresh.known = (ours, theirs), True
    (guess,), _, _ = fresh.drivers([ended], [reader], {}, now)
    assert guess.job_id is None
    fresh.jobs = (ours,)  # one job then: the time names it
    assert fresh.drivers([ended], [reader], {}, now)[0][0].job_id == "05000000"
