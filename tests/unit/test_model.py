import dataclasses
import json

import pytest

from raytop.model import (
    Activity,
    Attempt,
    Cluster,
    Experiment,
    ExperimentStatus,
    Finding,
    LedgerStatus,
    Node,
    Severity,
    Snapshot,
    TrainRun,
    Trial,
    Worker,
)
from raytop.model.format import fmt_duration, fmt_params, fmt_value, varying_keys


def sample_snapshot() -> Snapshot:
    node = Node(
        node_id="n1",
        address="10.0.0.1",
        alive=True,
        is_head=True,
        resources_total={"CPU": 4.0, "GPU": 2.0},
        resources_available={"GPU": 1.0},  # CPU absent: fully used
    )
    trial = Trial("t1", "RUNNING", {"lr": 0.1}, {"loss": 0.5}, 1, 3, 12.5, None)
    exp = Experiment("exp", "/tmp/exp", ExperimentStatus.RUNNING, "loss", "min", (trial,), 42, True)
    finding = Finding("trial_error", Severity.ERROR, "trial t1", "boom", {"n": 1})
    seconds = {"compute": 3.0, "collective": 1.0}
    activity = Activity("compute", "step", 0.5, 0.9, time_s=seconds, recent_time_s={})
    worker = Worker(0, 3, 2, pid=7, gpu_ids=("0",), stack="...", heartbeat_at=0.7,
                    activity=activity,
                    report_times=(10.0, 12.5, 15.0), report_exits=(10.5, 13.0, None))  # fmt: skip
    run = TrainRun("r1", "exp-t1", "a1", 2, trial_id="t1", workers=(worker,))
    exp = dataclasses.replace(exp, runs=(run,))
    foreign = TrainRun("r2", "other", "a2", 1)
    ledger = LedgerStatus(True, started_at=1.0, published_at=2.0)
    return Snapshot(
        1.0, Cluster("h:1", True, nodes=(node,)), (exp,), (finding,), (foreign,), ledger
    )


def test_snapshot_json_round_trip():
    snapshot = sample_snapshot()
    data = json.loads(json.dumps(snapshot.to_json()))  # through real JSON text
    assert data["schema_version"] == 1
    assert Snapshot.from_json(data) == snapshot
    # Its ages, said as of ``ages_at`` (the taken_at 1.0, before the ledger's publish 2.0)
    (said,) = data["experiments"][0]["runs"][0]["workers"]
    assert (said["heartbeat_age_s"], said["last_report_age_s"]) == (pytest.approx(0.3), None)
    # and its time shares, from its Activity (the model's are read from it)
    assert (
        said["time_shares"]["compute"]
        == 0.75
        == snapshot.all_runs()[0].workers[0].time_shares["compute"]
    )
    assert said["recent_time_shares"] is None  # nothing sampled in the last minute
    assert snapshot.all_runs()[0].workers[0].in_report
    assert Snapshot.from_json(data).all_runs()[0].workers[0].report_exits == (10.5, 13.0, None)


def test_a_workers_report_intervals_come_from_its_history():
    worker = Worker(0, report_times=(0.0, 2.0, 6.0, 12.0))
    assert worker.report_intervals_s == (2.0, 4.0, 6.0)
    assert Worker(0, report_times=(0.0, 5.0, 4.0)).report_intervals_s == (5.0,)  # clock stepped
    assert Worker(0).report_intervals_s == ()


def test_resources_absent_from_available_count_as_used():
    cluster = sample_snapshot().cluster
    assert cluster.total("CPU") == 4.0 and cluster.used("CPU") == 4.0
    assert cluster.total("GPU") == 2.0 and cluster.used("GPU") == 1.0


def test_dead_nodes_do_not_count():
    dead = Node("n2", "x", alive=False, is_head=False, resources_total={"CPU": 8.0})
    cluster = Cluster("h:1", True, nodes=(*sample_snapshot().cluster.nodes, dead))
    assert cluster.total("CPU") == 4.0 and cluster.alive_nodes == 1


def test_formatting():
    assert fmt_duration(None) == "-"
    assert fmt_duration(75.2) == "1m15s"
    assert fmt_duration(3700) == "1h01m"
    assert fmt_value(0.000012345) == "1.234e-05"
    assert fmt_value(0.5) == "0.5"
    assert fmt_params({"lr": 0.01, "hidden": 32}) == "hidden=32 lr=0.01"
    assert fmt_params({"lr": 0.01, "epochs": 5}, frozenset({"lr"})) == "lr=0.01"


def test_varying_keys_are_the_swept_params():
    configs = [{"lr": 0.1, "epochs": 5}, {"lr": 0.2, "epochs": 5}, {"lr": 0.2, "extra": 1}]
    assert varying_keys(configs) == {"lr", "epochs", "extra"}
    assert varying_keys(configs[:2]) == {"lr"}
    assert varying_keys([]) == frozenset()


def test_a_running_attempt_lasts_to_the_ledgers_publish_or_to_the_snapshot():
    """A run its probes report is said as of the ledger's last publish (its counts are
    true then); one known from Train's own state as of the snapshot (a silent ledger does
    not stop its clock). The same in ``status --json``."""
    ledger = LedgerStatus(True, started_at=1.0, published_at=90.0)
    running = (Attempt(1, "running", 50.0),)
    probed = TrainRun("r1", "exp-t1", "a1", 1, attempts=running)
    unprobed = TrainRun("r2", "other", "a2", 1, instrumented=False, source="train_state",
                        attempts=running)  # fmt: skip
    snapshot = Snapshot(100.0, Cluster("h:1", True), runs=(probed, unprobed), ledger=ledger)
    assert [snapshot.ages_at_for(r) for r in snapshot.runs] == [90.0, 100.0]
    assert [r["attempts"][0]["duration_s"] for r in snapshot.to_json()["runs"]] == [40.0, 50.0]
    assert Snapshot.from_json(snapshot.to_json()) == snapshot  # said, not kept
