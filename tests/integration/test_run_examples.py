"""Both bundled examples run to completion through ``raytop run --no-tui`` on a real local
cluster, and ``raytop status --json`` then shows every trial TERMINATED with metrics."""

from __future__ import annotations

import json

import pytest

from raytop.rundir import train_run_name
from tests.conftest import run_raytop, status_json

pytestmark = pytest.mark.ray

FAST = {"epochs = 8": "epochs = 5", "epoch_seconds = 4": "epoch_seconds = 0"}


def test_scalar_example_runs_to_completion(ray_cluster, example_copy):
    # Stopped after 2 of its 3 steps by [tune] stop_iterations (MaximumIterationStopper
    # beside raytop's TrialStopper), which is also each trial's expected count.
    stop = {"max_concurrent_trials = 2": "max_concurrent_trials = 2\nstop_iterations = 2"}
    spec = example_copy("scalar.toml", "scalar_objective.py", stop)
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scalar FINISHED | trials: 4 TERMINATED" in result.stdout

    snapshot = status_json(ray_cluster.address, spec.parent / "results" / "scalar")
    assert snapshot["cluster"]["connected"] is True
    (experiment,) = snapshot["experiments"]
    assert experiment["status"] == "FINISHED"
    trials = experiment["trials"]
    assert sorted(t["config"]["x"] for t in trials) == [1, 2, 3, 4]
    for trial in trials:
        assert trial["status"] == "TERMINATED"
        score = -((trial["config"]["x"] - 3) ** 2)
        assert trial["metrics"]["score"] == score
        assert trial["iterations"] == 2
        assert trial["max_iterations"] == 2
        assert trial["metric_history"] == [score, score]  # the metric of each result
        assert trial["num_failures"] == 0
    assert snapshot["findings"] == []


def test_torch_sweep_example_runs_to_completion(ray_cluster, example_copy):
    # Unpaced and shorter than the bundled example (which paces 8 epochs for watching).
    spec = example_copy("torch_sweep.toml", "torch_sweep_loop.py", edit=FAST)
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr

    assert "barrier_stall" not in result.stdout and "report_mispaired" not in result.stdout
    experiment_path = spec.parent / "results" / "torch_sweep"
    snapshot = status_json(ray_cluster.address, experiment_path)
    assert snapshot["findings"] == []  # no false alarm from a healthy run
    (experiment,) = snapshot["experiments"]
    assert experiment["status"] == "FINISHED"
    assert len(experiment["trials"]) == 4
    for trial in experiment["trials"]:
        assert trial["status"] == "TERMINATED"
        assert trial["iterations"] == 5
        assert trial["metrics"]["epoch"] == 4
        assert 0 < trial["metrics"]["loss"] < 1.0  # it learned the synthetic regression
        # the probe's history of the metric, one value per result, and the expected
        # count from the config's epochs (no stop_iterations in this spec)
        assert len(trial["metric_history"]) == trial["iterations"] == 5
        assert trial["metric_history"][-1] == trial["metrics"]["loss"]
        assert trial["max_iterations"] == trial["config"]["epochs"] == 5
        # one Train run per trial, named for it, with rank 0's checkpoints kept (num_to_keep 2)
        run_dir = experiment_path / "train_runs" / train_run_name("torch_sweep", trial["trial_id"])
        snapshot = json.loads((run_dir / "checkpoint_manager_snapshot.json").read_text())
        kept = [c["checkpoint_dir_name"] for c in snapshot["checkpoint_results"]]
        assert len(kept) == 2
        assert all((run_dir / name / "state.pt").is_file() for name in kept)
    # every trial's Train run got the ReportProbe without any change to the user's loop
    runs = {r["trial_id"]: r for r in experiment["runs"]}
    assert sorted(runs) == sorted(t["trial_id"] for t in experiment["trials"])
    for run in runs.values():
        assert run["world_size"] == 2
        counts = [(w["rank"], w["reports_entered"], w["reports_exited"], w["done"])
                  for w in run["workers"]]  # fmt: skip
        assert counts == [(0, 5, 5, True), (1, 5, 5, True)]
        # what Ray assigned each worker (resources_per_worker), shown beside its CPU use
        assert [w["declared_resources"].get("CPU") for w in run["workers"]] == [1.0, 1.0]
