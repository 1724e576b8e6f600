"""Graceful stops on a real cluster: one trial ends early at its next result, the whole
experiment stops with its state saved, every mutation under ``--read-only`` leaves it and
the cluster exactly as they were, and `raytop resume` then finishes it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import experiment_status, launch_run, run_raytop, wait_for

pytestmark = pytest.mark.ray


def tree_bytes(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` → its bytes (None: a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}  # fmt: skip


def cluster_state(address: str) -> tuple:
    """The cluster's jobs, alive actors and placement groups (with their states)."""
    from raytop.wire.gcs import GcsKv, GcsReader

    jobs = sorted(str(j) for j in GcsKv(address).job_table())
    reader = GcsReader(address)
    groups = sorted((g["pg_id"], g["state"]) for g in reader.placement_groups())
    return jobs, sorted(reader.actors()), groups


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

    # --read-only (and RAYTOP_READ_ONLY=1) on this real stopped experiment: every mutation
    # is refused in one line, and the folder and the cluster stay exactly as they were.
    folder, cluster = tree_bytes(experiment), cluster_state(ray_cluster.address)
    mutations = (["resume", str(experiment), "--yes", "--no-tui"],
                 ["stop", str(experiment), "--yes"],
                 ["stop", str(experiment), "--trial", first["trial_id"], "--yes"],
                 ["run", str(spec), "--no-tui", "--new-name"], ["down"],
                 ["status", "--stacks", "--experiment", str(experiment)])  # fmt: skip
    for argv in mutations:
        for how in ({"args": ("--read-only",)}, {"env": {"RAYTOP_READ_ONLY": "1"}}):
            refused = run_raytop(*argv, "--address", ray_cluster.address, *how.get("args", ()),
                                 env=how.get("env"))  # fmt: skip
            assert refused.returncode == 2, (argv, refused.stdout, refused.stderr)
            assert refused.stderr.startswith(f"raytop: error: read-only: `raytop {argv[0]}")
            assert refused.stderr.count("\n") == 1 and "nothing was changed" in refused.stderr
    assert tree_bytes(experiment) == folder
    assert cluster_state(ray_cluster.address) == cluster

    spec.write_text(spec.read_text() + "\n# edited after launch\n")
    resumed = run_raytop("resume", str(experiment), "--yes", "--no-tui",
                         "--address", ray_cluster.address)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "changed since launch; the resume uses the spec as launched" in resumed.stdout
    final = experiment_status(ray_cluster.address, experiment)
    assert [t["status"] for t in final["trials"]] == ["TERMINATED", "TERMINATED"]
