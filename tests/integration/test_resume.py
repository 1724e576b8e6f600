"""The guards of `raytop run` and `raytop resume` on a real cluster: an experiment folder,
or Train runs with checkpoints, are never reused silently, and ``--read-only`` refuses
every mutation. The resume after a crash (``kill -9`` of a torch sweep's driver) is done
to the bundled sweep of tests/integration/test_tui_tmux.py."""

from __future__ import annotations

import pytest

from tests.conftest import run_raytop

pytestmark = pytest.mark.ray


def test_an_existing_experiment_is_never_reused_silently(ray_cluster, example_copy, tmp_path):
    spec = example_copy("scalar.toml", "scalar_objective.py", edit={"[1, 2, 3, 4]": "[3]"})
    first = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert first.returncode == 0, first.stderr
    again = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert again.returncode == 2
    assert "already holds an experiment" in again.stderr and "--new-name" in again.stderr
    fresh = run_raytop("run", str(spec), "--no-tui", "--new-name", "--address", ray_cluster.address)
    assert fresh.returncode == 0, fresh.stderr
    names = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert names[0] == "scalar" and names[1].startswith("scalar-") and len(names) == 2
    # The fresh run's Tune state is in its own folder; the first one's is untouched.
    old, new = (tmp_path / "results" / n for n in names)
    assert len(list(old.glob("experiment_state-*.json"))) == 1
    assert list(new.glob("experiment_state-*.json")) and (new / "tuner.pkl").exists()


@pytest.mark.parametrize("command", [["run", "SPEC"], ["resume", "EXP"], ["stop", "EXP", "--yes"]])
def test_read_only_refuses_every_mutation(example_copy, command):
    spec = example_copy("scalar.toml", "scalar_objective.py")
    args = [str(spec) if a == "SPEC" else str(spec.parent) if a == "EXP" else a for a in command]
    result = run_raytop(*args, "--read-only")
    assert result.returncode == 2
    assert result.stderr.startswith(f"raytop: error: read-only: `raytop {command[0]}`")
    env_result = run_raytop(*args, env={"RAYTOP_READ_ONLY": "1"})
    assert env_result.returncode == 2 and "read-only" in env_result.stderr


def test_train_runs_with_checkpoints_are_never_reused_silently(example_copy):
    spec = example_copy("torch_sweep.toml", "torch_sweep_loop.py")
    experiment = spec.parent / "results" / "torch_sweep"
    run = experiment / "train_runs" / "torch_sweep-a1b2c_00000"
    run.mkdir(parents=True)
    (run / "checkpoint_manager_snapshot.json").write_text("{}")
    refused = run_raytop("run", str(spec), "--no-tui")
    assert refused.returncode == 2
    assert "holds Train runs with checkpoints (torch_sweep-a1b2c_00000)" in refused.stderr
    assert "--new-name" in refused.stderr and "nothing was changed" in refused.stderr
    assert sorted(p.name for p in experiment.iterdir()) == ["train_runs"]
