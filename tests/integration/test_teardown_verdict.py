"""``raytop check --teardown`` as a user runs it, on experiment folders as Tune and Train
write them: "safe" (exit 0) only when the experiment state was positively read as valid;
a torn, empty or wrong-shape state is exit 14 with one line naming the file, no traceback."""

import json

import pytest

from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE
from tests.conftest import run_raytop

STATE = "experiment_state-2026-12-02_00-00-00.json"
TRIAL = json.dumps({"trial_id": "t1", "status": "TERMINATED", "config": {"lr": 0.1}})
META = json.dumps({"num_failures": 0, "last_result": {"training_iteration": 2}})
GOOD = json.dumps({"trial_data": [[TRIAL, META]]}).encode()

BAD = {
    "torn": GOOD[: len(GOOD) // 2],
    "empty list": b"[]",
    "string": b'"x"',
    "empty object": b"{}",
    "trial_data a number": b'{"trial_data": 5}',
    "pairs of numbers": b'{"trial_data": [[1, 2]]}',
    "binary": b"\xff\xfe\x00garbage",
    "no trial_id": json.dumps({"trial_data": [[json.dumps({"status": "X"}), META]]}).encode(),
    "no trials": b'{"trial_data": []}',
}


def experiment(tmp_path, state: bytes):
    """A finished torch experiment: its state, one Train run with a committed checkpoint."""
    folder = tmp_path / "exp"
    run = folder / "train_runs" / train_run_name("exp", "t1")
    (run / "checkpoint_000001").mkdir(parents=True)
    result = {"checkpoint_dir_name": "checkpoint_000001", "metrics": {"epoch": 1}}
    snapshot = {"checkpoint_results": [result], "latest_checkpoint_result": result}
    (run / SNAPSHOT_FILE).write_text(json.dumps(snapshot))
    (folder / STATE).write_bytes(state)
    return folder


def teardown(tmp_path, folder):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return run_raytop(
        "check", "--teardown", "--experiment", str(folder), timeout=60,
        env={"RAYTOP_HOME": str(home)},
    )  # fmt: skip


def test_a_good_experiment_is_safe(tmp_path):
    result = teardown(tmp_path, experiment(tmp_path, GOOD))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("safe to tear down")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("state", BAD.values(), ids=BAD.keys())
def test_a_bad_experiment_state_is_not_safe(tmp_path, state):
    result = teardown(tmp_path, experiment(tmp_path, state))
    out = result.stdout + result.stderr
    assert result.returncode == 14, out
    assert "Traceback" not in out and "safe to tear down" not in out
    lines = [line for line in result.stdout.splitlines() if line.startswith("teardown_unsafe")]
    expected = "lists no trials" if state == BAD["no trials"] else STATE
    assert len(lines) == 1 and expected in lines[0], out


def test_a_missing_snapshot_is_not_safe(tmp_path):
    folder = experiment(tmp_path, GOOD)
    (folder / "train_runs" / train_run_name("exp", "t1") / SNAPSHOT_FILE).write_text("[]")
    result = teardown(tmp_path, folder)
    assert result.returncode == 14, result.stdout + result.stderr
    assert SNAPSHOT_FILE in result.stdout and "Traceback" not in result.stderr
