"""Resume after a crash, on a real cluster: kill -9 the driver of a running torch sweep,
`raytop resume --yes` finishes every trial, each Train run continues from its latest
checkpoint, and not one file of the experiment folder is deleted. Plus the guards."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import experiment_status, kill_driver, launch_run, run_raytop

pytestmark = pytest.mark.ray

EDIT = {
    "lr = { grid = [0.01, 0.05] }": "lr = { grid = [0.01, 0.05] }",
    "hidden = { grid = [16, 32] }": "hidden = 16",
    "epochs = 8": "epochs = 10",
    "epoch_seconds = 4": "epoch_seconds = 0",
    "[checkpoint]\nnum_to_keep = 2": "",  # keep every checkpoint: the listing must not shrink
}
# Every rank holds before it reports epoch 2 while the file ``hold_file`` names exists (a
# param of the spec): the kill below then finds both trials mid-run, each with epoch 1
# committed, however unevenly the machine's load starts them (racing an unpaced or paced
# sweep, one trial once reached epoch 8 before the other's first checkpoint). The test
# removes the file before the resume.
HOLD_BEFORE_EPOCH_2 = {
    "        time.sleep(max(0.0, pace_s - (time.monotonic() - epoch_started)))\n": (
        "        time.sleep(max(0.0, pace_s - (time.monotonic() - epoch_started)))\n"
        "        while epoch >= 2 and os.path.exists(config['hold_file']):\n"
        "            time.sleep(0.05)\n"
    ),
}


def committed_epochs(experiment: Path) -> dict[str, int]:
    """Train run name → the epoch of its latest committed checkpoint (runs with none yet, or
    whose snapshot is being rewritten, are left out)."""
    found = {}
    for snapshot in experiment.glob("train_runs/*/checkpoint_manager_snapshot.json"):
        try:
            latest = json.loads(snapshot.read_text())["latest_checkpoint_result"]
            found[snapshot.parent.name] = int(latest["metrics"]["epoch"])
        except (OSError, ValueError, KeyError, TypeError):
            # Rewritten in place (docs/RAY_FACTS.md#checkpoint-snapshot), or no checkpoint yet.
            continue
    return found


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_kill_9_then_resume_finishes_every_trial_from_its_checkpoint(
    ray_cluster, example_copy, tmp_path
):
    hold = tmp_path / "hold"
    hold.touch()
    edit = EDIT | {"seed = 7": f'seed = 7\nhold_file = "{hold}"'}
    spec = example_copy("torch_sweep.toml", "torch_sweep_loop.py", edit=edit,
                        module_edit=HOLD_BEFORE_EPOCH_2)  # fmt: skip
    experiment = spec.parent / "results" / "torch_sweep"
    watcher = launch_run(spec, ray_cluster.address)
    # Kill while every trial is provably mid-run: its Train run has committed epoch 1 and
    # holds before epoch 2 (read straight from the snapshots).
    deadline = time.monotonic() + 240
    while not committed_epochs(experiment):
        assert time.monotonic() < deadline, "the sweep never got going"
        time.sleep(0.2)
    running = run_raytop("check", "--teardown", "--experiment", str(experiment))
    assert running.returncode == 14 and "the Tune driver is running" in running.stdout
    while True:
        epochs = committed_epochs(experiment)
        assert max(epochs.values(), default=0) <= 1, f"a trial ran past the hold: {epochs}"
        if len(epochs) == 2 and min(epochs.values()) == 1:
            break
        assert time.monotonic() < deadline, f"the trials never both held: {epochs}"
        time.sleep(0.1)
    kill_driver(experiment)
    watcher.wait(timeout=60)
    time.sleep(5)
    before = files(experiment)
    crashed = experiment_status(ray_cluster.address, experiment)
    assert crashed["status"] == "INTERRUPTED"
    # what each Train run had committed when its driver died (read again now)
    latest_epoch = {run.rsplit("-", 1)[-1]: e for run, e in committed_epochs(experiment).items()}
    assert sorted(latest_epoch) == sorted(t["trial_id"] for t in crashed["trials"])
    assert all(e == 1 for e in latest_epoch.values()), latest_epoch
    hold.unlink()

    resumed = run_raytop("resume", str(experiment), "--yes", "--no-tui",
                         "--address", ray_cluster.address, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.count("resume from checkpoint_") == 2

    done = experiment_status(ray_cluster.address, experiment)
    assert done["status"] == "FINISHED"
    for trial in done["trials"]:
        assert trial["status"] == "TERMINATED"
        assert trial["metrics"]["epoch"] == 9
        # each Train run resumed from its latest checkpoint: the epoch did not go back to 0
        assert trial["metrics"]["start_epoch"] == latest_epoch[trial["trial_id"]] + 1 > 0
    safe = run_raytop("check", "--teardown", "--experiment", str(experiment))
    assert safe.returncode == 0, safe.stdout
    missing = before - files(experiment)
    assert not missing, f"files deleted by the resume: {sorted(missing)[:5]}"


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
