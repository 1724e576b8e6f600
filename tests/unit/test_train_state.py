"""Train V2's own state of the runs with no probe, without a cluster: a tiny HTTP server on
127.0.0.1 stands in for the dashboard head (serving the answer to
``GET /api/train/v2/runs/v1`` recorded from a real one), a stand-in GCS reader lists the
run's controller and worker actors, and the real ``wire.dashboard`` client,
``sources.train_state`` and the collector's join do the rest. The dashboard is asked only
while a run with no probe is shown, at most once per period; a dashboard with no Train
state (HTTP 500: tracking off), none at all, or a bad answer never fails a refresh."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from raytop.model import untrusted, untrusted_train_state
from raytop.pipeline.collect import SnapshotCollector
from raytop.sources.dashboard_poll import MAX_BACKOFF_S
from raytop.sources.train_state import CACHE_S, TrainState
from raytop.wire.dashboard import TRAIN_RUNS_PATH, DashboardClient, DashboardUnreachable
from tests.fakes import Clock, FakeDashboard, ScriptedAnswers, kv_for

RECORDED = (Path(__file__).parents[1] / "data" / "dashboard" / "train_v2_runs.json").read_bytes()
RUN = json.loads(RECORDED)["train_runs"][0]
CONTROLLER_ID = RUN["controller_actor_id"]
NODE = {"node_id": RUN["attempts"][1]["workers"][0]["node_id"], "address": "127.0.0.1",
        "alive": True, "is_head": True, "resources_total": {"CPU": 4.0},
        "resources_available": {"CPU": 2.0}, "labels": {}}  # fmt: skip


def actor(cls: str, pid: int, address: str, owner: str) -> dict:
    return {"class_name": cls, "job_id": RUN["job_id"], "pid": pid, "node_id": NODE["node_id"],
            "address": address, "owner": owner}  # fmt: skip


WORKERS = RUN["attempts"][1]["workers"]
ACTORS = {
    CONTROLLER_ID: actor("TrainController", 10, "127.0.0.1:7001", "127.0.0.1:6000"),
    "aa01": actor("RayTrainWorker", WORKERS[1]["pid"], "127.0.0.1:7003", "127.0.0.1:7001"),
    "aa02": actor("RayTrainWorker", WORKERS[0]["pid"], "127.0.0.1:7002", "127.0.0.1:7001"),
}


class Gcs:
    def __init__(self, actors: dict) -> None:
        self.listed = actors

    def nodes(self):
        return [NODE]

    def actors(self):
        return self.listed

    def placement_groups(self):
        return []

    def reset(self):
        pass


@pytest.fixture
def dashboard() -> Iterator[FakeDashboard]:
    server = FakeDashboard(RECORDED)
    yield server
    server.stop()


def collector(address: str | None, actors: dict = ACTORS) -> SnapshotCollector:
    kv = kv_for(address)
    return SnapshotCollector(
        "127.0.0.1:1", experiments=None, gcs=(Gcs(actors), kv), dashboard=DashboardClient(kv)
    )


@pytest.fixture(autouse=True)
def no_registry(monkeypatch):
    """A bare collector (``experiments=None``) shows no experiment: none is registered."""
    monkeypatch.setattr("raytop.pipeline.collect.default_experiments", lambda warnings=None: [])


# -- the collector's join -------------------------------------------------------------------


def test_a_run_with_no_probe_gets_trains_name_attempts_and_ranks(dashboard):
    collect = collector(dashboard.address)
    snapshot = collect.collect()
    (run,) = snapshot.runs
    assert (run.run_name, run.source, run.instrumented) == ("state-tracked-run", "train_state",
                                                            False)  # fmt: skip
    assert [(a.index, a.status, a.error_class) for a in run.attempts] == [
        (1, "errored", "RuntimeError"), (2, "running", None)
    ]  # fmt: skip
    assert [(w.rank, w.pid) for w in run.workers] == [(w["world_rank"], w["pid"]) for w in WORKERS]
    assert not snapshot.warnings and snapshot.findings == ()
    assert dashboard.paths == [TRAIN_RUNS_PATH]
    # Refreshes within the period reuse the answer.
    for _ in range(3):
        assert collect.collect().runs[0].run_name == "state-tracked-run"
    assert dashboard.paths == [TRAIN_RUNS_PATH]
    # What status --json says says where it came from.
    assert json.loads(json.dumps(snapshot.to_json()))["runs"][0]["source"] == "train_state"


def test_no_run_without_a_probe_asks_nothing(dashboard):
    """Every run probed, or none running: the refresh costs what it did."""
    kv = kv_for(dashboard.address)
    only_workers = {k: v for k, v in ACTORS.items() if k != CONTROLLER_ID}
    for actors in ({}, only_workers):
        SnapshotCollector("127.0.0.1:1", experiments=None, gcs=(Gcs(actors), kv),
                          dashboard=DashboardClient(kv)).collect()  # fmt: skip
    assert dashboard.paths == [] and kv.gets_from == []


def test_tracking_off_keeps_the_actor_tables_run_quietly(dashboard):
    """No state actor: the dashboard answers HTTP 500 (its text names the env var)."""
    dashboard.status, dashboard.body = 500, b"Train state data is not available."
    (run,) = (snapshot := collector(dashboard.address).collect()).runs
    assert (run.source, run.attempts) == ("actor_table", ())
    assert run.run_name == f"Train run of job {RUN['job_id']} (no probe)"
    assert [w.pid for w in run.workers] == sorted(w["pid"] for w in WORKERS)
    assert not snapshot.warnings and snapshot.cluster.host_note is None
    # An empty state (tracking on elsewhere, not for this run) is the same.
    dashboard.status, dashboard.body = 200, b'{"train_runs": []}'
    (run,) = collector(dashboard.address).collect().runs
    assert run.source == "actor_table"


def test_no_dashboard_keeps_the_actor_tables_run_quietly():
    snapshot = collector(None).collect()
    (run,) = snapshot.runs
    assert run.source == "actor_table" and not snapshot.warnings


def test_a_bad_answer_is_one_warning_naming_the_endpoint(dashboard):
    dashboard.body = json.dumps({"train_runs": {"oops": 1}}).encode()
    snapshot = collector(dashboard.address).collect()
    (run,) = snapshot.runs
    assert run.source == "actor_table"
    assert snapshot.warnings == (
        f"http://{dashboard.address}{TRAIN_RUNS_PATH}: train_runs: expected a list, got a dict",
    )


def test_an_answer_over_the_cap_is_refused(dashboard, monkeypatch):
    monkeypatch.setattr(untrusted_train_state, "MAX_TRAIN_STATE_BYTES", 1000)
    client = DashboardClient(kv_for(dashboard.address))
    with pytest.raises(untrusted.Refused, match="over the 1,000 bytes cap"):
        client.train_runs()
    assert client.train_runs_endpoint == f"http://{dashboard.address}{TRAIN_RUNS_PATH}"


def test_an_error_status_says_which(dashboard):
    dashboard.status = 404
    with pytest.raises(DashboardUnreachable, match="answered HTTP 404") as exc:
        DashboardClient(kv_for(dashboard.address)).train_runs()
    assert exc.value.status == 404


# -- the period: at most one ask per CACHE_S, less often while nothing answers ---------------


class Answers(ScriptedAnswers):
    train_runs_endpoint = "http://head:8265/api/train/v2/runs/v1"

    def train_runs(self) -> bytes:
        return self.next_answer()


def test_at_most_one_ask_per_period_and_a_bad_answer_keeps_the_last_good_runs():
    clock, client = Clock(), Answers(RECORDED, b'{"train_runs": [7]}', RECORDED)
    state = TrainState(client, clock)
    good = state.runs()
    assert list(good) == [CONTROLLER_ID] and client.asked == 1
    clock.now += CACHE_S - 0.1
    assert state.runs() == good and client.asked == 1
    clock.now += 0.1
    assert state.runs() == good and client.asked == 2  # bad: the last good copy
    assert state.warning == (
        "http://head:8265/api/train/v2/runs/v1: train_runs[0]: expected a dict, got a number; "
        "Train runs without a probe are from its last good answer"
    )
    clock.now += CACHE_S
    assert state.runs() == good and client.asked == 3 and state.warning is None


def test_a_controller_listed_twice_keeps_its_newest_run():
    data = json.loads(RECORDED)
    older = json.loads(json.dumps(data["train_runs"][0]))
    older.update(id="0" * 32, name="older")
    for attempt in older["attempts"]:
        attempt["run_id"] = "0" * 32
    data["train_runs"].append(older)  # the dashboard lists the newest first
    state = TrainState(Answers(json.dumps(data).encode()), Clock())
    assert state.runs()[CONTROLLER_ID].name == "state-tracked-run"


def test_a_dashboard_that_stays_silent_is_asked_less_and_less_often():
    clock = Clock()
    client = Answers(DashboardUnreachable("at http://head:8265 did not answer (timed out)"))
    state = TrainState(client, clock)
    asked_at = []
    for _ in range(400):  # 400 refreshes a second apart
        before = client.asked
        assert state.runs() == {}
        if client.asked != before:
            asked_at.append(clock.now - 1000.0)
        clock.now += 1.0
    gaps = [b - a for a, b in zip(asked_at, asked_at[1:], strict=False)]
    assert gaps[:4] == [CACHE_S, 2 * CACHE_S, 4 * CACHE_S, 8 * CACHE_S]
    assert max(gaps) == MAX_BACKOFF_S and state.warning is None


def test_a_dashboard_that_answers_an_error_is_asked_every_period():
    """Tracking off (HTTP 500) is a quick answer, and a driver may turn it on any time."""
    clock = Clock()
    client = Answers(DashboardUnreachable("at http://head:8265 answered HTTP 500", 500))
    state = TrainState(client, clock)
    for _ in range(5):
        assert state.runs() == {}
        clock.now += CACHE_S
    assert client.asked == 5
    client.answers, client.asked = [RECORDED], 0
    assert list(state.runs()) == [CONTROLLER_ID] and client.asked == 1


def test_runs_gone_when_the_dashboard_stops_answering():
    """No answer is not a bad answer: the run is then what the actor table says."""
    clock = Clock()
    client = Answers(RECORDED, DashboardUnreachable("at http://head:8265 did not answer (x)"))
    state = TrainState(client, clock)
    assert list(state.runs()) == [CONTROLLER_ID]
    clock.now += CACHE_S
    assert state.runs() == {} and state.warning is None
