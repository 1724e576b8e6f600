"""check --teardown over experiment folders laid out as Tune and Train write them."""

import json
import os

from raytop.diagnose.teardown import teardown_problems
from raytop.model import Experiment, ExperimentStatus, Trial
from raytop.sources.checkpoints import SNAPSHOT_FILE, teardown_facts


def layout(tmp_path, listed: list[str], on_disk: list[str], state=True):
    if state:
        (tmp_path / "experiment_state-2026-12-02_00-00-00.json").write_text("{}")
    run_dir = tmp_path / "train_runs" / "exp-t1"
    run_dir.mkdir(parents=True)
    results = [{"checkpoint_dir_name": name, "metrics": {}} for name in listed]
    latest = results[-1] if results else None
    snapshot = {"checkpoint_results": results, "latest_checkpoint_result": latest}
    (run_dir / SNAPSHOT_FILE).write_text(json.dumps(snapshot))
    for name in on_disk:
        (run_dir / name).mkdir()
    trials = (Trial("t1", "TERMINATED"),)
    return Experiment("exp", str(tmp_path), ExperimentStatus.FINISHED, trials=trials,
                      driver_alive=False)  # fmt: skip


def test_everything_committed_is_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a", "checkpoint_b"], ["checkpoint_a", "checkpoint_b"])
    assert teardown_problems(teardown_facts(exp)) == []


def test_an_upload_in_flight_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a", "checkpoint_b"])
    (problem,) = teardown_problems(teardown_facts(exp))
    assert "1 checkpoint(s) not committed yet (checkpoint_b)" in problem


def test_a_missing_latest_checkpoint_and_no_state(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], [], state=False)
    problems = teardown_problems(teardown_facts(exp))
    assert any("no experiment_state file" in p for p in problems)
    assert any("latest checkpoint checkpoint_a is missing" in p for p in problems)


def test_a_running_driver_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    running = Experiment(exp.name, exp.path, ExperimentStatus.RUNNING, trials=exp.trials,
                         driver_alive=True)  # fmt: skip
    (problem,) = teardown_problems(teardown_facts(running))
    assert "the Tune driver is running" in problem


def test_folders_cut_off_by_an_earlier_crash_do_not_block(tmp_path):
    exp = layout(tmp_path, ["checkpoint_b"], ["checkpoint_a", "checkpoint_b"])
    run_dir = tmp_path / "train_runs" / "exp-t1"
    os.utime(run_dir / "checkpoint_a", (1_000_000, 1_000_000))  # older than the committed b
    assert teardown_problems(teardown_facts(exp)) == []
