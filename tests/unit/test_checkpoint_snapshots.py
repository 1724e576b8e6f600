"""Half-written files never lose the last good state: Train's checkpoint snapshot and
Tune's experiment state are both rewritten in place."""

import json

from raytop.model import Experiment, ExperimentStatus, Trial
from raytop.sources.checkpoints import SNAPSHOT_FILE, CheckpointSnapshots
from raytop.sources.tune_dir import ExperimentReader


def snapshot(dir_name: str, epoch: int) -> str:
    latest = {"checkpoint_dir_name": dir_name, "metrics": {"epoch": epoch}}
    return json.dumps({"checkpoint_results": [latest], "latest_checkpoint_result": latest})


def test_half_written_checkpoint_snapshot_keeps_the_last_good_copy(tmp_path):
    run_dir = tmp_path / "train_runs" / "exp-t1"
    run_dir.mkdir(parents=True)
    experiment = Experiment(
        "exp", str(tmp_path), ExperimentStatus.RUNNING, trials=(Trial("t1", "RUNNING"),)
    )
    reader = CheckpointSnapshots()
    (run_dir / SNAPSHOT_FILE).write_text(snapshot("checkpoint_a", 3))
    assert reader.latest(experiment)["t1"].dir_name == "checkpoint_a"
    assert reader.warnings == []
    (run_dir / SNAPSHOT_FILE).write_text(snapshot("checkpoint_b", 4)[:40])  # torn write
    kept = reader.latest(experiment)["t1"]
    assert (kept.dir_name, kept.epoch) == ("checkpoint_a", 3)
    assert reader.warnings == [f"exp-t1/{SNAPSHOT_FILE} is unreadable (partly written?); "
                               "using the last good copy"]  # fmt: skip


def test_truncated_experiment_state_keeps_the_last_good_copy(tmp_path):
    trial = json.dumps({"trial_id": "a", "status": "RUNNING", "config": {}})
    meta = json.dumps({"last_result": {"training_iteration": 4, "loss": 0.5}})
    state = tmp_path / "experiment_state-2026-12-02_00-00-00.json"
    state.write_text(json.dumps({"trial_data": [[trial, meta]]}))
    reader = ExperimentReader(str(tmp_path))
    assert reader.read().trials[0].iterations == 4
    state.write_text(state.read_text()[:50])
    exp = reader.read()
    assert exp.trials[0].iterations == 4
    assert exp.warnings and "last good copy" in exp.warnings[0]
