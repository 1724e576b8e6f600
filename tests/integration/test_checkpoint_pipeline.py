"""The checkpoint pipeline on a real cluster: two ranks writing the same file into one
checkpoint is named as a collision, a slow ASYNC upload is shown in flight, then
committed, and a NO_UPLOAD checkpoint is committed without an upload. The three are one
experiment, a trial per ``mode`` (one Tune driver; a launched run costs ~40 CPU-s, mostly
start-ups, on the 2 cores the suite shares), followed to its end once."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from tests.conftest import kill_driver, launch_run, run_output, run_raytop, status_json

pytestmark = pytest.mark.ray

LOOP = """
import os
import shutil
import tempfile
import time

import ray.train
from ray.train import Checkpoint, CheckpointUploadMode


def slow_upload(checkpoint, dir_name):
    time.sleep(UPLOAD_S)
    target = os.path.join(ray.train.get_context().get_storage().experiment_fs_path, dir_name)
    shutil.copytree(checkpoint.path, target, dirs_exist_ok=True)
    return Checkpoint(target)


def train_loop(config):
    global UPLOAD_S
    UPLOAD_S = config["upload_s"]
    rank = ray.train.get_context().get_world_rank()
    for epoch in range(config["epochs"]):
        time.sleep(0.3)
        if config["mode"] == "collide":  # every rank writes model.pt: one overwrites the other
            folder = tempfile.mkdtemp()
            with open(os.path.join(folder, "model.pt"), "wb") as f:
                f.write(b"x" * (100 + rank))
            ray.train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder))
        elif config["mode"] == "no_upload" and rank == 0:  # saved in place on storage
            storage = ray.train.get_context().get_storage().experiment_fs_path
            folder = os.path.join(storage, f"checkpoint_epoch_{epoch}")
            os.makedirs(folder)
            with open(os.path.join(folder, "state.pt"), "wb") as f:
                f.write(b"z" * 500)
            ray.train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder),
                             checkpoint_upload_mode=CheckpointUploadMode.NO_UPLOAD)
        elif config["mode"] == "async" and rank == 0:  # through a slow custom upload
            folder = tempfile.mkdtemp()
            with open(os.path.join(folder, "state.pt"), "wb") as f:
                f.write(b"y" * 1000)
            ray.train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder),
                             checkpoint_upload_mode=CheckpointUploadMode.ASYNC,
                             checkpoint_upload_fn=slow_upload)
        else:
            ray.train.report({"epoch": epoch}, checkpoint=None)
"""

SPEC = """
[experiment]
name = "ckpt"
[trainable]
kind = "torch"
entrypoint = "ckpt_loop:train_loop"
[param_space]
mode = { grid = ["collide", "async", "no_upload"] }
epochs = 2
upload_s = 6
[tune]
metric = "epoch"
mode = "max"
[scaling]
num_workers = 2
"""


def by_mode(snapshot: dict) -> dict[str, list[dict]]:
    """mode → its Train run's checkpoints (only the modes whose run has shown up)."""
    (experiment,) = snapshot["experiments"]
    modes = {t["trial_id"]: t["config"]["mode"] for t in experiment["trials"]}
    return {modes[r["trial_id"]]: r["checkpoints"] for r in experiment["runs"]
            if r["trial_id"] in modes}  # fmt: skip


@pytest.fixture(scope="module")
def pipeline(ray_cluster, tmp_path_factory):
    """The experiment, followed to its end: (the driver's exit code, the final snapshot,
    mode → checkpoints, (mode, checkpoint) → every state seen on the way)."""
    tmp_path = tmp_path_factory.mktemp("ckpt")
    (tmp_path / "ckpt_loop.py").write_text(LOOP)
    spec = tmp_path / "ckpt.toml"
    spec.write_text(SPEC)
    experiment = tmp_path / "results" / "ckpt"
    watcher = launch_run(spec, ray_cluster.address)
    seen: dict[tuple[str, str], set[str]] = {}
    try:
        deadline = time.monotonic() + 240
        while watcher.poll() is None and time.monotonic() < deadline:
            snapshot = status_json(ray_cluster.address, experiment) if experiment.is_dir() else {}
            if snapshot.get("experiments"):
                for mode, checkpoints in by_mode(snapshot).items():
                    for c in checkpoints:
                        seen.setdefault((mode, c["dir_name"]), set()).add(c["state"])
                        if mode == "async" and c["state"] == "uploading":
                            assert (c["mode"], c["custom_upload"], c["ranks"]) == (
                                "ASYNC", True, [0])  # fmt: skip
            time.sleep(0.5)
        assert watcher.returncode is not None, run_output(spec, experiment)
    finally:
        if watcher.poll() is None:
            kill_driver(experiment)
    snapshot = status_json(ray_cluster.address, experiment)
    return SimpleNamespace(code=watcher.returncode, snapshot=snapshot, experiment=experiment,
                           checkpoints=by_mode(snapshot), seen=seen,
                           output=run_output(spec, experiment))  # fmt: skip


def test_two_ranks_writing_model_pt_is_a_collision_naming_both(ray_cluster, pipeline):
    assert pipeline.code == 1, pipeline.output  # an error finding remains: the collision
    snapshot, checkpoints = pipeline.snapshot, pipeline.checkpoints["collide"]
    assert [c["state"] for c in checkpoints] == ["committed", "committed"]
    assert all(c["collisions"] == {"model.pt": [0, 1]} for c in checkpoints)
    # both ranks' barrier waits, and the upload's throughput
    assert all(set(c["sync_s"]) == {"0", "1"} and c["throughput_bps"] > 0 for c in checkpoints)
    # each rank's own upload, start to end
    assert all(set(c["rank_uploads"]) == {"0", "1"} for c in checkpoints)
    assert all(end >= start for c in checkpoints for start, end in c["rank_uploads"].values())
    # One finding for both checkpoints' collisions, with its count (ranks wrote 100 and
    # 101 bytes: the contents differ); none for the other modes' runs.
    (collision,) = [f for f in snapshot["findings"] if f["kind"] == "checkpoint_collision"]
    assert collision["count"] == 2
    assert collision["first"] == checkpoints[0]["dir_name"]
    assert collision["evidence"]["ranks"] == [0, 1]
    assert "ranks 0, 1 all wrote model.pt" in collision["message"]
    check = run_raytop("check", "--address", ray_cluster.address, "--experiment",
                       str(pipeline.experiment))  # fmt: skip
    assert check.returncode == 14


def test_a_slow_async_upload_is_shown_in_flight_then_committed(pipeline):
    final = pipeline.checkpoints["async"]
    assert len(final) == 2 and all(c["state"] == "committed" for c in final), pipeline.output
    seen = pipeline.seen
    assert all("uploading" in seen.get(("async", c["dir_name"]), set()) for c in final), seen
    # rank 1 attached nothing, yet its barrier wait for the report is known
    assert all(set(c["sync_s"]) == {"0", "1"} for c in final), final
    assert all(c["upload_s"] >= 6 and 0 < c["throughput_bps"] < 1000 / 6 + 1 for c in final)


def test_a_no_upload_checkpoint_is_committed_without_an_upload(pipeline):
    checkpoints = pipeline.checkpoints["no_upload"]
    assert [(c["dir_name"], c["state"], c["mode"], c["ranks"], c["bytes"], c["upload_s"])
            for c in checkpoints] == [
        (f"checkpoint_epoch_{e}", "committed", "NO_UPLOAD", [0], 500, None) for e in (0, 1)
    ]  # fmt: skip
