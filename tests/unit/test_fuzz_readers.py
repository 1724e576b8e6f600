"""Property: every reader of a file or a KV value survives any input. Random bytes, random
JSON shapes and valid documents with one part replaced by a random value go to the
experiment reader (Tune's state, the probe's table, driver.json, job.json), the checkpoint
snapshot reader, the ledger reader, the trial registrations, experiments.json and Ray's
dashboard's answer on its nodes' hosts: no exception escapes, and whatever could not be
used is a warning."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raytop.home import registered_experiments
from raytop.sources import storage_base
from raytop.sources.checkpoints import SNAPSHOT_FILE, CheckpointSnapshots
from raytop.sources.ledger_source import LedgerReader
from raytop.sources.placement_source import PlacementReader
from raytop.sources.remote_hosts import RemoteHosts
from raytop.sources.tune_dir import ExperimentReader
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, RUN_PREFIX, TRIAL_PREFIX
from tests.fakes import FakeKv

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
garbage = st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v).encode())


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a document a value could be replaced."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    return [_replace(v, rest, value) if i == head else v for i, v in enumerate(doc)]


@st.composite
def mutated(draw, valid: Any) -> bytes:
    """``valid`` with one part replaced by a random JSON value (or left as it is), or
    random bytes."""
    if draw(st.integers(0, 5)) == 0:
        return draw(garbage)
    path = draw(st.sampled_from(_paths(valid)))
    doc = _replace(valid, path, draw(json_values)) if draw(st.booleans()) else valid
    return json.dumps(doc).encode()


@pytest.fixture(autouse=True)
def _one_try(monkeypatch):
    """A bad file is re-read a few times, 50 ms apart (test_storage covers that): once here."""
    monkeypatch.setattr(storage_base, "PARSE_RETRIES", 1)


# -- what raytop's and Ray's writers write ---------------------------------------------------

TRIAL = {"trial_id": "t1", "status": "RUNNING", "config": {"lr": 0.1}}
META = {"num_failures": 0, "last_result": {"training_iteration": 2, "time_total_s": 3.0, "loss": 1}}
STATE = {"trial_data": [[json.dumps(TRIAL), json.dumps(META)]], "runner_data": {}}
ROW = {"trial_id": "t1", "status": "RUNNING", "config": {"lr": 0.1}, "metrics": {"loss": 1.0},
       "num_failures": 0, "iterations": 1, "elapsed_s": 1.0, "error": None,
       "metric_history": [1.5, 1.0], "max_iterations": 5}  # fmt: skip
DRIVER = {"pid": 2**22 + 1, "pid_create_time": 1.0, "host": "h", "experiment_name": "exp",
          "experiment_path": "/x", "metric": "loss", "mode": "min"}  # fmt: skip
CHECKPOINT = {"checkpoint_dir_name": "checkpoint_1", "metrics": {"epoch": 1}}
SNAPSHOT = {"checkpoint_results": [CHECKPOINT], "latest_checkpoint_result": CHECKPOINT}
RANK = {"rank": 0, "entered": 3, "exited": 3, "pid": 11, "last_enter_at": 90.0,
        "received_at": 100.0, "gpu_ids": ["0"], "done": False, "run_path": "/r",
        "checkpoints": [{"dir_name": "checkpoint_1", "report": 1, "mode": "SYNC",
                         "files": {"a": 1}, "start": 95.0, "end": 96.0, "error": None}],
        "syncs": [[1, 95.0, 95.5]]}  # fmt: skip
PAGE = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 1,
        "first_seen_at": 10.0, "version": 1, "ranks": {"0": RANK}}  # fmt: skip
INDEX = {"started_at": 1.0, "published_at": 100.0, "pages": {"r.a": 1}}
ATTEMPT = {"index": 1, "attempt_id": "a", "status": "errored", "started_at": 5.0,
           "ended_at": 9.0, "error_class": "RuntimeError", "error": "boom",
           "failure_class": "worker", "first_report": {"epoch": 0.0},
           "restored": None}  # fmt: skip
RUN_RECORD = {"run_id": "r", "run_name": "exp-t1", "sent_at": 9.0,
              "failure_config": {"max_failures": 1, "controller_failure_limit": -1,
                                 "max_preemption_failures": -1},
              "attempts": [ATTEMPT, {**ATTEMPT, "index": 2, "status": "running",
                                     "ended_at": None, "error": None, "error_class": None,
                                     "failure_class": None,
                                     "restored": {"epoch": 0.0}}]}  # fmt: skip
NODE_SUMMARY = {"result": True, "msg": "Node summary fetched.", "data": {"summary": [
    {"raylet": {"nodeId": "c7401", "state": "ALIVE"}, "cpu": 12.5, "cpus": [2, 2],
     "mem": [25276203008, 21309267968, 15.7, 3966935040], "ip": "10.0.0.5", "hostname": "w1",
     "loadAvg": [[1.5, 1.0, 0.5], [0.75, 0.5, 0.25]]},
    {"raylet": {"nodeId": "d8502", "state": "ALIVE"}, "tpus": []}]}}  # fmt: skip
REGISTRATION = {"experiment": "exp", "trial_id": "t1", "actor_id": "a1", "pg_id": "pg1"}
REGISTRY = [{"name": "exp", "path": "/x", "raytop_dir": "/x/.raytop"}]


@FUZZ
@given(
    state=mutated(STATE),
    trials=mutated({"updated_at": 1.0, "trials": [ROW]}),
    driver=mutated(DRIVER),
    job=mutated({"job_id": "01000000"}),
    stopped=st.booleans(),
)
def test_the_experiment_reader_survives_any_folder(state, trials, driver, job, stopped):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "exp"
        rdir = folder / ".raytop"
        rdir.mkdir(parents=True)
        (folder / "experiment_state-2026-12-03_00-00-00.json").write_bytes(state)
        (rdir / "trials.json").write_bytes(trials)
        (rdir / "driver.json").write_bytes(driver)
        (rdir / "job.json").write_bytes(job)
        if stopped:
            (rdir / "stop").write_text("")
        reader = ExperimentReader(str(folder))
        exp = reader.read()
        assert all(isinstance(w, str) and "\n" not in w for w in exp.warnings)
        exp = reader.read(require_state=True)
        try:
            parsed = json.loads(state)
        except ValueError:
            parsed = None
        if exp.state_read == "ok":  # only ever for a state of Tune's shape
            assert isinstance(parsed, dict) and isinstance(parsed["trial_data"], list)
        else:
            assert exp.state_reason  # the one line teardown prints
        if parsed is None:
            assert exp.state_read != "ok" and exp.warnings


@FUZZ
@given(
    index=mutated({"updated_at": 1.0, "generation": "ab", "trials": 1, "segments": [1]}),
    segment=mutated({"generation": "ab", "version": 1, "trials": [ROW]}),
    driver=mutated(DRIVER),
)
def test_the_experiment_reader_survives_any_trial_table_in_segments(index, segment, driver):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "exp"
        (folder / ".raytop" / "trials").mkdir(parents=True)
        (folder / ".raytop" / "trials" / "index.json").write_bytes(index)
        (folder / ".raytop" / "trials" / "0.json").write_bytes(segment)
        (folder / ".raytop" / "driver.json").write_bytes(driver)
        exp = ExperimentReader(str(folder)).read()
        assert all(isinstance(w, str) and "\n" not in w for w in exp.warnings)
        assert all(isinstance(t.trial_id, str) for t in exp.trials)


@FUZZ
@given(snapshot=mutated(SNAPSHOT))
def test_the_checkpoint_snapshot_reader_survives_any_snapshot(snapshot):
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "exp-t1"
        run.mkdir()
        (run / SNAPSHOT_FILE).write_bytes(snapshot)
        snapshots = CheckpointSnapshots()
        data, problem = snapshots.read_checked(run)
        assert (data is None) == (problem is not None)
        if problem is not None:
            assert problem in snapshots.warnings


@FUZZ
@given(index=mutated(INDEX), page=mutated(PAGE), again=mutated(PAGE))
def test_the_ledger_reader_survives_any_index_and_page(index, page, again):
    kv = FakeKv({INDEX_KEY: index, PAGE_PREFIX + "r.a": page})
    reader = LedgerReader(kv)
    runs, status = reader.read(now=100.5)
    for run in runs:  # what the collector asks of each run next
        reader.uploads(run.run_id, run.attempt_id)
        reader.syncs(run.run_id, run.attempt_id)
    good_index = index == json.dumps(INDEX).encode()
    if good_index and page != json.dumps(PAGE).encode() and not runs:
        assert status.warnings  # a page that could not be used is said
    if not good_index and not status.available:
        assert status.error
    kv.data[PAGE_PREFIX + "r.a"] = again  # the next refresh, over the last good copy
    kv.data[INDEX_KEY] = json.dumps({**INDEX, "pages": {"r.a": 2}}).encode()
    reader.read(now=101.0)


@FUZZ
@given(record=mutated(RUN_RECORD), again=mutated(RUN_RECORD))
def test_the_ledger_reader_survives_any_run_record(record, again):
    index = {**INDEX, "runs": {"r": 1}}
    kv = FakeKv({INDEX_KEY: json.dumps(index).encode(),
                 PAGE_PREFIX + "r.a": json.dumps(PAGE).encode(),
                 RUN_PREFIX + "r": record})  # fmt: skip
    reader = LedgerReader(kv)
    (run,), status = reader.read(now=100.5)
    if record != json.dumps(RUN_RECORD).encode() and not run.attempts:
        assert (
            any(RUN_PREFIX + "r" in w for w in status.warnings)
            or record == json.dumps({**RUN_RECORD, "attempts": []}).encode()
        )
    before = [(a.index, a.status, a.error) for a in run.attempts]
    kv.data[RUN_PREFIX + "r"] = again  # the next refresh, over the last good copy
    kv.data[INDEX_KEY] = json.dumps({**index, "runs": {"r": 2}}).encode()
    (run,), status = reader.read(now=101.0)
    if status.warnings:
        # a bad record keeps the last good copy
        assert [(a.index, a.status, a.error) for a in run.attempts] == before


@FUZZ
@given(first=mutated(NODE_SUMMARY), then=mutated(NODE_SUMMARY))
def test_the_dashboards_host_figures_survive_any_answer(first, then):
    class Answers:
        endpoint = "http://head:8265/nodes?view=summary"
        answer = first

        def node_summary(self):
            return self.answer

    clock = [0.0]
    client = Answers()
    hosts = RemoteHosts(client, lambda: clock[0])
    stats = hosts.stats()
    if first == json.dumps(NODE_SUMMARY).encode():
        assert set(stats) == {"c7401"} and hosts.warning is None
    if hosts.warning is not None:
        assert stats == {}  # nothing good yet: no figures rather than a guess
    for figures in stats.values():  # whatever is taken is in range
        assert 0.0 <= figures.cpu_percent <= 100.0 and figures.cpus >= 0
        assert 0 <= figures.memory_used <= figures.memory_total
        assert figures.load_1m is None or figures.load_1m >= 0
    if hosts.warning is not None:
        assert "\n" not in hosts.warning and hosts.warning.startswith(Answers.endpoint)
    client.answer, clock[0] = then, 10.0  # the next ask, over the last good copy
    again = hosts.stats()
    if hosts.warning is not None:
        assert again == stats  # a bad answer keeps the last good figures


@FUZZ
@given(values=st.lists(mutated(REGISTRATION), max_size=3))
def test_trial_registrations_survive_any_value(values):
    class NoGroups:
        def placement_groups(self):
            return []

    kv = FakeKv({f"{TRIAL_PREFIX}a{i}": v for i, v in enumerate(values)})
    reader = PlacementReader(NoGroups(), kv)
    actors = {
        f"a{i}": {"address": f"10.0.0.1:{i}", "owner": "10.0.0.9:1", "pg_id": "pg"}
        for i in range(3)
    }
    good = reader._registrations(actors, 0.0)
    assert len(good) + len(reader.warnings) == len(values)


@FUZZ
@given(content=mutated(REGISTRY))
def test_experiments_json_survives_any_content(content):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "experiments.json").write_bytes(content)
        before = os.environ.get("RAYTOP_HOME")
        os.environ["RAYTOP_HOME"] = tmp
        try:
            entries = registered_experiments()
        finally:
            if before is None:
                del os.environ["RAYTOP_HOME"]
            else:
                os.environ["RAYTOP_HOME"] = before
        assert all(set(e) == {"name", "path", "raytop_dir"} for e in entries)
        assert all(isinstance(v, str) and v for e in entries for v in e.values())
