"""GPU code paths without a GPU: logical GPUs on the local cluster, a Train run with
``use_gpu = true`` and a CPU collective backend. Placement, GPU ids per rank and the planner
see exactly what they would see on GPU nodes."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import launch_run, run_raytop, status_json

pytestmark = pytest.mark.ray

GPU_EDIT = {
    "[scaling]\nnum_workers = 2": '[scaling]\nnum_workers = 2\nuse_gpu = true\nbackend = "gloo"',
    "skip_rank = 1": "skip_rank = -1",
    "epochs = 5": "epochs = 12",
    "[tune]": "[tune]\ntrial_resources = { CPU = 0, memory = 1 }",
}


def test_gpu_train_run_places_one_logical_gpu_per_rank(ray_cluster, example_copy):
    spec = example_copy("stall.toml", "stall_loop.py", edit=GPU_EDIT)
    experiment = spec.parent / "results" / "stall"
    watcher = launch_run(
        spec, ray_cluster.address, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    gpu_groups = []
    deadline = time.monotonic() + 180
    while watcher.poll() is None and time.monotonic() < deadline:
        if experiment.is_dir():
            snapshot = status_json(ray_cluster.address, experiment)
            gpu_groups += [
                g for g in snapshot["placement_groups"]
                if g["owner_kind"] == "train_run" and g["state"] == "CREATED"
                and all(b["resources"].get("GPU") == 1 for b in g["bundles"])
            ]  # fmt: skip
        time.sleep(1)
    output = watcher.stdout.read()
    assert watcher.returncode == 0, output
    head = next(n for n in snapshot["cluster"]["nodes"] if n["is_head"])

    assert gpu_groups, "the Train worker group's GPU bundles were never seen placed"
    group = gpu_groups[-1]
    assert len(group["bundles"]) == 2
    assert {b["node_id"] for b in group["bundles"]} == {head["node_id"]}
    (trial,) = snapshot["experiments"][0]["trials"]
    assert group["owner"] == f"stall-{trial['trial_id']}"

    final = json.loads(run_raytop("status", "--json", "--address", ray_cluster.address,
                                  "--experiment", str(experiment)).stdout)  # fmt: skip
    (run,) = final["experiments"][0]["runs"]
    assert sorted(tuple(w["gpu_ids"]) for w in run["workers"]) == [("0",), ("1",)]
    assert {w["node_id"] for w in run["workers"]} == {head["node_id"]}


def test_planner_on_logical_gpus(ray_cluster, example_copy):
    edit = {**GPU_EDIT, "num_workers = 2\nuse_gpu": "num_workers = 3\nuse_gpu"}
    spec = example_copy("stall.toml", "stall_loop.py", edit=edit)
    result = run_raytop("plan", str(spec), "--address", ray_cluster.address)
    assert result.returncode == 12, result.stdout
    assert "3 worker bundles need {GPU: 3}; the whole cluster holds 2 of them" in result.stdout
