"""Train runs raytop did not instrument, from the actor table's shapes (``GcsReader.actors``):
a controller and the workers it owns become a run with no probe, unless the probe is there
(its pids are in the ledger) or the run is a raytop trial's. When Train's own state knows
the controller (the answer recorded from a real cluster's dashboard), the run has Train's
name, attempts and world ranks; Train's state is asked only when there is such a run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from raytop.diagnose import diagnose
from raytop.model import Cluster, Snapshot, TrainRun, Worker, untrusted_train_state
from raytop.model.records import MAX_ATTEMPTS
from raytop.pipeline.uninstrumented import KeptProbed, uninstrumented_runs


def actor(cls: str, pid: int, address: str, owner: str, node: str = "n1", job: str = "02000000"):
    return {"class_name": cls, "job_id": job, "pid": pid, "node_id": node, "address": address,
            "owner": owner}  # fmt: skip


CONTROLLER = actor("TrainController", 10, "127.0.0.1:7001", "127.0.0.1:6000")
ACTORS = {
    "c1": CONTROLLER,
    "w2": actor("RayTrainWorker", 22, "127.0.0.1:7003", "127.0.0.1:7001", node="n2"),
    "w1": actor("RayTrainWorker", 21, "127.0.0.1:7002", "127.0.0.1:7001"),
    "x": actor("SomethingElse", 30, "127.0.0.1:7009", "127.0.0.1:7001"),
}


def test_a_controller_and_its_workers_are_a_run_with_no_probe():
    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False)
    assert (run.instrumented, run.world_size, run.attempt_id) == (False, 2, "c1")
    assert [(w.rank, w.pid, w.node_id) for w in run.workers] == [(0, 21, "n1"), (1, 22, "n2")]
    assert "job 02000000" in run.run_name


def test_probed_or_raytop_launched_runs_are_left_to_the_ledger():
    probed = TrainRun("r", "exp-t1", "a", 2, workers=(Worker(rank=0, pid=22),))
    assert uninstrumented_runs(ACTORS, (probed,), lambda owner: False) == ()
    assert uninstrumented_runs(ACTORS, (), lambda owner: owner == "127.0.0.1:6000") == ()


def probed_by(pid: int, node: str | None, beat_at: float | None) -> TrainRun:
    worker = Worker(rank=0, pid=pid, node_id=node, heartbeat_at=beat_at)
    return TrainRun("r", "exp-t1", "a", 1, workers=(worker,))


def test_a_pid_a_probed_worker_had_on_another_node_or_long_ago_hides_no_run():
    """Pids repeat across nodes, and a host reuses the pid of an ended process: a run with
    no probe is hidden only by a probed worker of the same pid, on the same node, whose
    probe still beats (seen in CI: an earlier run's worker had had the pid)."""
    now = 1_000_000.0
    for gone in (probed_by(21, "n2", now - 1), probed_by(21, "n1", now - 600)):
        (run,) = uninstrumented_runs(ACTORS, (gone,), lambda owner: False, now=now)
        assert run.attempt_id == "c1"
    here = probed_by(21, "n1", now - 1)
    assert uninstrumented_runs(ACTORS, (here,), lambda owner: False, now=now) == ()


def test_a_silent_ledger_keeps_its_probed_workers_claiming_their_pids():
    """Beats are as of the ledger's last publish: while it is gone its runs stay probed."""
    now = 1_000_000.0
    probed = probed_by(21, "n1", now - 300)
    assert uninstrumented_runs(ACTORS, (probed,), lambda owner: False, now=now,
                               beats_known_at=now - 299) == ()  # fmt: skip


def test_the_probed_pids_are_kept_until_a_claim_runs_out_or_the_runs_change():
    """``KeptProbed``: the same answer as working the pids out afresh, at every time; kept
    while the runs are the very same and no probed worker's claim ran out."""
    kept, now = KeptProbed(), 1_000_000.0
    runs = (probed_by(21, "n1", now - 30),)
    first = kept.of(runs, now)
    assert first == {21: {"n1"}} and kept.of((*runs,), now + 29) is first

    def claim(at: float) -> tuple[TrainRun, ...]:
        return uninstrumented_runs(ACTORS, runs, lambda owner: False, now=at,
                                   probed_processes=kept.of)  # fmt: skip

    assert claim(now + 30) == ()  # the last second of its claim: hidden
    (shown,) = claim(now + 30.5)  # its claim ran out: the run with no probe shows
    assert shown.attempt_id == "c1" and kept.of(runs, now + 30.5) == {}
    again = (probed_by(21, "n1", now + 30),)  # a new run object: worked out again
    assert kept.of(again, now + 31) == {21: {"n1"}}


def test_a_run_with_no_probe_raises_no_rank_finding():
    """No counts, no heartbeat: its ranks are not 'silent' or 'dead', just unknown."""
    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False)
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("a", True), runs=(run,))
    assert diagnose(snapshot) == ()


# -- completed from Train's own state (sources.train_state), when it knows the controller ---

RECORDED = json.loads(
    (Path(__file__).parents[1] / "data" / "dashboard" / "train_v2_runs.json").read_bytes()
)
(STATE,) = untrusted_train_state.train_runs(RECORDED)
NOW = STATE.attempts[-1].started_at + 30.0
TRACKED = {
    STATE.controller_actor_id: CONTROLLER,
    "w2": ACTORS["w2"],
    "w1": ACTORS["w1"],
}


class Known:
    """A stand-in for ``TrainState.runs``: Train's runs by controller; counts the asks."""

    def __init__(self, *runs) -> None:
        self.runs = {r.controller_actor_id: r for r in runs}
        self.asked = 0

    def __call__(self):
        self.asked += 1
        return self.runs


def test_a_controller_train_knows_gets_its_name_attempts_and_world_ranks():
    (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(STATE), NOW)
    assert (run.instrumented, run.source) == (False, "train_state")
    assert run.run_id == f"actor-{STATE.controller_actor_id}"  # its place, whichever source
    assert (run.run_name, run.world_size, run.attempt_index) == ("state-tracked-run", 2, 2)
    assert run.attempt_id == STATE.attempts[-1].attempt_id
    first, second = run.attempts
    assert (first.index, first.status, first.error_class, first.error) == (
        1, "errored", "RuntimeError", "injected failure at step 1"
    )  # fmt: skip
    assert first.duration_s == pytest.approx(first.ended_at - first.started_at)
    assert (second.index, second.status, second.ended_at, second.lasted(NOW)) == (
        2, "running", None, pytest.approx(30.0)
    )  # fmt: skip
    workers = RECORDED["train_runs"][0]["attempts"][1]["workers"]
    assert [(w.rank, w.local_rank, w.node_rank, w.pid, w.node_id) for w in run.workers] == [
        (w["world_rank"], w["local_rank"], w["node_rank"], w["pid"], w["node_id"]) for w in workers
    ]
    assert all(w.declared_resources == {"CPU": 1.0} for w in run.workers)
    # Counts and states stay unknown: nothing a probe would say is made up.
    assert all(w.reports_entered == 0 and w.state == "" and w.heartbeat_at is None
               for w in run.workers)  # fmt: skip
    assert run.checkpoints == () and run.retry_budget == {}


def test_the_json_of_a_run_from_trains_state_reads_back():
    (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(STATE), NOW)
    snapshot = Snapshot(taken_at=NOW, cluster=Cluster("a", True), runs=(run,))
    data = json.loads(json.dumps(snapshot.to_json()))
    assert data["runs"][0]["source"] == "train_state" and not data["runs"][0]["instrumented"]
    assert Snapshot.from_json(data).runs == (run,)
    assert diagnose(snapshot) == ()  # no probe: no rank or attempt finding


def test_a_controller_train_does_not_know_stays_the_actor_tables():
    other = dataclasses.replace(STATE, controller_actor_id="ffff")
    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False, Known(other), NOW)
    assert (run.source, run.attempt_id, run.attempts) == ("actor_table", "c1", ())
    assert [(w.rank, w.pid) for w in run.workers] == [(0, 21), (1, 22)]
    assert run == uninstrumented_runs(ACTORS, (), lambda owner: False)[0]


def test_trains_state_is_asked_only_when_there_is_a_run_with_no_probe():
    known = Known(STATE)
    probed = TrainRun("r", "exp-t1", "a", 2, workers=(Worker(rank=0, pid=22),))
    assert uninstrumented_runs(TRACKED, (probed,), lambda owner: False, known, NOW) == ()
    assert uninstrumented_runs(TRACKED, (), lambda owner: True, known, NOW) == ()
    assert uninstrumented_runs({"w1": ACTORS["w1"]}, (), lambda owner: False, known, NOW) == ()
    assert uninstrumented_runs({}, (), lambda owner: False, known, NOW) == ()
    assert known.asked == 0
    uninstrumented_runs(TRACKED, (), lambda owner: False, known, NOW)
    assert known.asked == 1


def test_workers_only_while_the_latest_attempt_runs():
    latest = STATE.attempts[-1]
    for status in ("PENDING", "FINISHED", "ERRORED", "ABORTED"):
        state = dataclasses.replace(
            STATE, attempts=(*STATE.attempts[:-1], dataclasses.replace(latest, status=status))
        )
        (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(state), NOW)
        assert (run.workers, run.world_size) == ((), 2), status
    fresh = dataclasses.replace(STATE, attempts=())  # INITIALIZING: no attempt yet
    (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(fresh), NOW)
    assert (run.attempts, run.workers, run.world_size, run.attempt_index) == ((), (), 0, 1)
    assert run.attempt_id == STATE.controller_actor_id


def test_a_long_retry_loop_keeps_its_newest_attempts_numbered_in_the_run():
    errored = STATE.attempts[0]
    many = tuple(errored for _ in range(MAX_ATTEMPTS + 10)) + (STATE.attempts[-1],)
    state = dataclasses.replace(STATE, attempts=many)
    (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(state), NOW)
    assert len(run.attempts) == MAX_ATTEMPTS and run.attempt_index == MAX_ATTEMPTS + 11
    assert [a.index for a in run.attempts] == list(range(12, MAX_ATTEMPTS + 12))
    assert run.attempts[-1].status == "running"


# -- what Ray itself can tell of a run with no probe: its job, and what would give counts ---


def test_a_run_with_no_probe_names_its_job_and_who_needs_the_probe():
    from raytop.pipeline.uninstrumented import ACTOR_HINT, DRIVER_HINT, README_SECTION

    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False)
    assert (run.job_id, run.job_entrypoint) == ("02000000", None)
    assert run.probe_hint == DRIVER_HINT
    assert "RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe" in DRIVER_HINT
    assert f"README: {README_SECTION}" in DRIVER_HINT and "\n" not in DRIVER_HINT
    # A controller created by an actor (a Tune trial's trainable): that actor's node's env.
    trial = actor("ImplicitFunc", 9, "127.0.0.1:6000", "127.0.0.1:5000", job="03000000")
    (run,) = uninstrumented_runs({**ACTORS, "t": trial}, (), lambda owner: False)
    assert (run.job_id, run.probe_hint) == ("02000000", ACTOR_HINT)
    assert "every node's Ray container" in ACTOR_HINT


def test_a_run_from_trains_state_names_its_job_and_the_hint_too():
    (run,) = uninstrumented_runs(TRACKED, (), lambda owner: False, Known(STATE), NOW)
    assert run.source == "train_state" and run.job_id == CONTROLLER["job_id"]
    assert run.probe_hint is not None
    data = json.loads(json.dumps(Snapshot(NOW, Cluster("a", True), runs=(run,)).to_json()))
    assert data["runs"][0]["job_id"] == "02000000" and data["runs"][0]["probe_hint"]
    assert "job_entrypoint" in data["runs"][0]


def test_the_job_tables_entrypoint_joins_by_job_id():
    from raytop.pipeline.uninstrumented import with_job_entrypoints

    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False)
    probed = TrainRun("r", "Train run of job 02000000 (no probe)", "a", 1)  # a name, no job id
    joined = with_job_entrypoints((run, probed), {"02000000": "python train.py", "03": ""})
    assert joined[0].job_entrypoint == "python train.py"
    assert joined[1] == probed
    assert with_job_entrypoints((run,), {"02000000": ""}) == (run,)  # empty: not known


def counted_walks(monkeypatch, label):
    """``uninstrumented._claimed`` counted from now on: the labels of the runs it walks,
    and the function itself (to work an answer out afresh, uncounted)."""
    import raytop.pipeline.uninstrumented as module

    walked: list[str] = []
    claimed = module._claimed

    def counted(runs, at):
        runs = tuple(runs)
        walked.extend(label(r) for r in runs)
        return claimed(runs, at)

    monkeypatch.setattr(module, "_claimed", counted)
    return walked, claimed


def test_a_run_that_did_not_change_keeps_its_claims_and_pids_of_several_runs_merge(
    monkeypatch,
):
    """Only a changed run (or one whose claim ran out) is walked again; a pid claimed by
    runs on two nodes is claimed on both, as worked out afresh."""
    import raytop.pipeline.uninstrumented as module

    walked, _ = counted_walks(monkeypatch, lambda r: r.attempt_id)
    kept, now = KeptProbed(), 1_000_000.0
    a = dataclasses.replace(probed_by(21, "n1", now - 10), run_id="a", attempt_id="a")
    b = dataclasses.replace(probed_by(21, "n2", now - 50), run_id="b", attempt_id="b")
    assert kept.of((a, b), now) == {21: {"n1", "n2"}}
    assert walked == ["a", "b"]
    moved = dataclasses.replace(b.workers[0], pid=22)
    b2 = dataclasses.replace(b, run_name="changed", workers=(moved,))
    assert kept.of((a, b2), now + 1) == {21: {"n1"}, 22: {"n2"}}
    assert walked == ["a", "b", "b"]  # a kept its own
    assert kept.of((a, b2), now + 11) == {21: {"n1"}}  # b's claim ran out: b walked again
    assert walked == ["a", "b", "b", "b"]
    assert kept.of((a, b2), now + 11) == module._probed_processes((a, b2), now + 11)


def test_a_run_made_again_by_a_report_or_a_heartbeat_keeps_its_claims(monkeypatch):
    """A run re-made with the same pids on the same nodes, its beats only later, is not
    walked again; a worker whose stale beat (no claim) became fresh is, and claims its
    pid. Every answer is the one worked out afresh."""
    walked, claimed = counted_walks(monkeypatch, lambda r: r.run_name)
    kept, now = KeptProbed(), 1_000_000.0
    fresh = Worker(rank=0, pid=21, node_id="n1", heartbeat_at=now - 10)
    stale = Worker(rank=1, pid=31, node_id="n1", heartbeat_at=now - 100)
    run = TrainRun("r", "first", "a", 2, workers=(fresh, stale))
    assert kept.of((run,), now) == {21: {"n1"}} and walked == ["first"]
    reported = dataclasses.replace(fresh, reports_entered=1)
    beat = dataclasses.replace(fresh, heartbeat_at=now - 1)
    for name, worker in (("reported", reported), ("beat", beat)):
        again = TrainRun("r", name, "a", 2, workers=(worker, stale))
        assert kept.of((again,), now + 1) == claimed((again,), now + 1)[0]
    assert walked == ["first"]
    back = dataclasses.replace(stale, heartbeat_at=now)
    woke = TrainRun("r", "woke", "a", 2, workers=(beat, back))
    assert kept.of((woke,), now + 2) == {21: {"n1"}, 31: {"n1"}}
    assert walked == ["first", "woke"]
    older = TrainRun("r", "older", "a", 2, workers=(fresh, back))  # a beat that went back
    assert kept.of((older,), now + 3) == claimed((older,), now + 3)[0]
    assert walked == ["first", "woke", "older"]
