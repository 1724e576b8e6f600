"""`raytop run` refuses a sweep the planner proves will deadlock, on a real 2-CPU cluster,
and the suggested fix launches and completes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_raytop

pytestmark = pytest.mark.ray

LOOP = """
import time
import ray.train

def train_loop(config):
    for epoch in range(2):
        time.sleep(0.2)
        ray.train.report({"epoch": epoch, "x": config["x"]})
"""

SPEC = """
[experiment]
name = "tight"
[trainable]
kind = "torch"
entrypoint = "tight_loop:train_loop"
[param_space]
x = {{ grid = [1, 2] }}
[tune]
metric = "epoch"
mode = "max"
max_concurrent_trials = 2
trial_resources = {trial_resources}
[scaling]
num_workers = 1
resources_per_worker = {{ CPU = 1 }}
"""


def test_deadlock_is_refused_and_the_suggested_fix_runs(two_cpu_cluster, tmp_path):
    (tmp_path / "tight_loop.py").write_text(LOOP)
    spec = tmp_path / "tight.toml"
    spec.write_text(SPEC.format(trial_resources="{ CPU = 1 }"))
    refused = run_raytop("run", str(spec), "--no-tui", "--address", two_cpu_cluster.address)
    assert refused.returncode == 13, refused.stderr
    error = refused.stderr.strip().splitlines()[-1]
    assert error.startswith("raytop: error: refusing to launch: deadlock: 2 trial driver(s)")
    assert "trial_resources = { CPU = 0, memory = 1 }" in refused.stderr
    assert not (tmp_path / "results" / "tight").exists()  # nothing was launched

    spec.write_text(SPEC.format(trial_resources="{ CPU = 0, memory = 1 }"))
    accepted = run_raytop("run", str(spec), "--no-tui", "--address", two_cpu_cluster.address)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "FITS with 1 workers: 2 trial(s), 2 started at once, 2 running" in accepted.stderr
    status = run_raytop("status", "--json", "--experiment", str(tmp_path / "results" / "tight"),
                        "--address", two_cpu_cluster.address)  # fmt: skip
    (experiment,) = json.loads(status.stdout)["experiments"]
    assert [t["status"] for t in experiment["trials"]] == ["TERMINATED", "TERMINATED"]


def test_plan_alone_explains_and_never_launches(two_cpu_cluster, tmp_path):
    (tmp_path / "tight_loop.py").write_text(LOOP)
    spec = tmp_path / "tight.toml"
    spec.write_text(SPEC.format(trial_resources="{ CPU = 1 }"))
    planned = run_raytop("plan", str(spec), "--address", two_cpu_cluster.address)
    assert planned.returncode == 13
    assert "DEADLOCK with 1 workers" in planned.stdout
    assert not (tmp_path / "results" / "tight").exists()
