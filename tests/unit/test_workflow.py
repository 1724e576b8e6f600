"""The launch workflow's guard: an experiment folder in use is never reused silently."""

from raytop.launch.workflow import existing_experiment
from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE


def test_an_empty_folder_is_free(tmp_path):
    assert existing_experiment(str(tmp_path / "exp")) is None


def test_tune_state_can_be_resumed(tmp_path):
    (tmp_path / "tuner.pkl").write_bytes(b"")
    found = existing_experiment(str(tmp_path))
    assert found is not None and found.resumable
    assert found.refusal.startswith(f"{tmp_path} already holds an experiment: ")


def test_train_runs_with_checkpoints_cannot(tmp_path):
    run = tmp_path / "train_runs" / train_run_name("exp", "t1")
    run.mkdir(parents=True)
    (run / SNAPSHOT_FILE).write_text("{}")
    found = existing_experiment(str(tmp_path))
    assert found is not None and not found.resumable
    assert f"Train runs with checkpoints ({run.name})" in found.refusal
