"""Graceful stops on a real cluster: one trial ends early at its next result, the whole
experiment stops with its state saved, and `raytop resume` then finishes it."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import experiment_status, launch_run, run_raytop, wait_for

pytestmark = pytest.mark.ray


def test_stop_a_trial_then_the_experiment_then_resume(ray_cluster, example_copy):
    spec = example_copy("scalar.toml", "scalar_objective.py",
                        edit={"steps = 3": "steps = 150", "[1, 2, 3, 4]": "[1, 2]"})  # fmt: skip
    experiment = spec.parent / "results" / "scalar"
    watcher = launch_run(spec, ray_cluster.address, stderr=subprocess.PIPE, text=True)

    def both_running():
        if not experiment.is_dir():
            return None
        trials = experiment_status(ray_cluster.address, experiment)["trials"]
        running = [t for t in trials if t["status"] == "RUNNING" and t["iterations"] > 2]
        return running if len(running) == 2 else None

    try:
        first, _ = wait_for(both_running, 120, "both trials to run")
    except AssertionError:
        watcher.kill()
        raise AssertionError(watcher.stderr.read()) from None
    stopped = run_raytop("stop", str(experiment), "--trial", first["trial_id"], "--yes")
    assert stopped.returncode == 0, stopped.stderr

    def trial_ended():
        trials = {
            t["trial_id"]: t for t in experiment_status(ray_cluster.address, experiment)["trials"]
        }
        return (
            trials[first["trial_id"]]
            if trials[first["trial_id"]]["status"] == "TERMINATED"
            else None
        )

    ended = wait_for(trial_ended, 30, "the stopped trial to end")
    assert ended["iterations"] < 150  # it ended early, at a result, not at its last step

    whole = run_raytop("stop", str(experiment), "--yes")
    assert whole.returncode == 0, whole.stderr
    assert "resume it with `raytop resume" in whole.stderr
    watcher.wait(timeout=60)
    assert experiment_status(ray_cluster.address, experiment)["status"] == "INTERRUPTED"

    spec.write_text(spec.read_text() + "\n# edited after launch\n")
    resumed = run_raytop("resume", str(experiment), "--yes", "--no-tui",
                         "--address", ray_cluster.address)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "changed since launch; the resume uses the spec as launched" in resumed.stdout
    final = experiment_status(ray_cluster.address, experiment)
    assert [t["status"] for t in final["trials"]] == ["TERMINATED", "TERMINATED"]
