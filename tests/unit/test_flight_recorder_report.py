"""``status --flight-recorder`` without a cluster (``pipeline.flight_recorder``): the request
through the ledger's KV, the ranks' answers, waiting for dumps newer than the request, the
summary per trial folder; read-only asks nothing and reads what is on storage; the report
in the snapshot's JSON and as text."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from raytop.faces.text import flight_recorder_text
from raytop.model import Cluster, Experiment, ExperimentStatus, Snapshot, TrainRun, Worker
from raytop.pipeline.flight_recorder import READ_ONLY_NOTE, request_dumps
from raytop.pipeline.ledger_commands import LedgerCommands
from raytop.probe.flight_recorder import NOT_ENABLED
from raytop.wire.kv_keys import FLIGHT_RECORDER_COMMAND_KEY

DATA = Path(__file__).parent.parent / "data" / "flight_recorder"


class FakeKv:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = value


def gpu_run(answer: str | None, request: str | None) -> TrainRun:
    workers = tuple(
        Worker(rank=r, pid=10 + r, flight_recorder=answer and f"{answer}{r}.pipe",
               flight_recorder_request=request)
        for r in (0, 1)
    )  # fmt: skip
    return TrainRun(run_id="r1", run_name="exp-t1", attempt_id="a", world_size=2,
                    trial_id="t1", workers=workers)  # fmt: skip


def snapshot(*runs: TrainRun, loose: tuple[TrainRun, ...] = ()) -> Snapshot:
    exp = Experiment(name="exp", path="/x/exp", status=ExperimentStatus.RUNNING, runs=runs)
    return Snapshot(taken_at=time.time(), cluster=Cluster(address="a", connected=True),
                    experiments=(exp,), runs=loose)  # fmt: skip


def test_the_request_waits_for_fresh_dumps_and_names_the_missing_rank(tmp_path):
    rdir = tmp_path / ".raytop"
    folder = rdir / "flight_recorder" / "t1"
    folder.mkdir(parents=True)
    kv = FakeKv()
    commands = LedgerCommands(kv)
    polls = {"n": 0}

    def collect() -> Snapshot:
        command = json.loads(kv.data[FLIGHT_RECORDER_COMMAND_KEY])
        polls["n"] += 1
        if polls["n"] == 1:
            return snapshot(gpu_run(None, None))  # not answered yet
        if polls["n"] == 3:  # torch writes the dumps a moment after the pipe was written
            for rank in (0, 1):
                shutil.copy(DATA / f"rank_{rank}", folder / f"rank_{rank}")
        return snapshot(gpu_run("dump requested through /tmp/raytop-fr-exp-t1-rank_",
                                command["request_id"]))  # fmt: skip

    snap, report = request_dumps(commands, collect, lambda: [rdir], timeout_s=20)
    assert polls["n"] == 3  # answered, then waited for the dumps, not for the deadline
    assert report.note == (
        "flight recorder: 2 of 2 ranks answered; 2 dump(s) requested through the ranks' pipes"
    )
    (run,) = report.runs
    assert (run.trial_id, run.run_name, run.folder) == ("t1", "exp-t1", str(folder))
    assert [a.answer for a in run.answers] == [
        "dump requested through /tmp/raytop-fr-exp-t1-rank_0.pipe",
        "dump requested through /tmp/raytop-fr-exp-t1-rank_1.pipe",
    ]
    assert run.dumped_ranks == (0, 1) and run.fresh_ranks == (0, 1)
    assert run.groups[0].missing == (1,)
    text = flight_recorder_text(report).splitlines()
    assert text[1] == f"run exp-t1 (dumps in {folder})"
    assert "  dumps from ranks 0, 1; new since the request: 2" in text
    assert ("  group 0 (default_pg): rank 1 missing from collective #4 (gloo:all_reduce); "
            "rank 0 entered it") in text  # fmt: skip
    # In the snapshot's JSON, and back.
    data = json.loads(json.dumps(replace(snap, flight_recorder=report).to_json()))
    group = data["flight_recorder"]["runs"][0]["groups"][0]
    assert group["missing"] == [1] and group["line"].startswith("group 0 (default_pg): rank 1")
    assert Snapshot.from_json(data).flight_recorder == report


def test_read_only_asks_nothing_and_reads_what_is_on_storage(tmp_path):
    rdir = tmp_path / ".raytop"
    folder = rdir / "flight_recorder" / "t1"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "rank_0", folder / "rank_0")  # left by a timeout, say
    kv = FakeKv()
    _, report = request_dumps(LedgerCommands(kv), lambda: snapshot(gpu_run(None, None)),
                              lambda: [rdir], read_only=True)  # fmt: skip
    assert kv.data == {}  # nothing written to the cluster
    assert report.note == READ_ONLY_NOTE and report.requested_at is None
    (run,) = report.runs
    assert run.dumped_ranks == (0,) and run.answers == () and run.fresh_ranks == ()
    assert run.groups[0].missing == ()  # one rank's dump: nobody to compare with


def test_a_cpu_run_answers_why_it_has_no_flight_recorder(tmp_path):
    kv = FakeKv()

    def collect() -> Snapshot:
        request = json.loads(kv.data[FLIGHT_RECORDER_COMMAND_KEY])["request_id"]
        run = gpu_run(None, request)
        # Rank 1's loop has returned; its probe answers all the same, and counts.
        run = replace(run, workers=tuple(replace(w, flight_recorder=NOT_ENABLED, done=w.rank == 1)
                                         for w in run.workers))  # fmt: skip
        return snapshot(run)

    started = time.monotonic()
    _, report = request_dumps(LedgerCommands(kv), collect, lambda: [tmp_path / ".raytop"])
    assert time.monotonic() - started < 3  # no dump to wait for
    (run,) = report.runs
    assert run.folder is None and [a.answer for a in run.answers] == [NOT_ENABLED] * 2
    assert report.note == (
        "flight recorder: 2 of 2 ranks answered; 0 dump(s) requested through the ranks' pipes"
    )
    assert f"  rank 0: {NOT_ENABLED}" in flight_recorder_text(report).splitlines()
