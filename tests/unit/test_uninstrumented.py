"""Train runs raytop did not instrument, from the actor table's shapes (``GcsReader.actors``):
a controller and the workers it owns become a run with no probe, unless the probe is there
(its pids are in the ledger) or the run is a raytop trial's."""

from __future__ import annotations

from raytop.diagnose import diagnose
from raytop.model import Cluster, Snapshot, TrainRun, Worker
from raytop.pipeline.uninstrumented import uninstrumented_runs


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


def test_a_run_with_no_probe_raises_no_rank_finding():
    """No counts, no heartbeat: its ranks are not 'silent' or 'dead', just unknown."""
    (run,) = uninstrumented_runs(ACTORS, (), lambda owner: False)
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("a", True), runs=(run,))
    assert diagnose(snapshot) == ()
