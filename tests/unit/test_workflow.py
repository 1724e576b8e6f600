"""The launch workflow's guard: an experiment folder in use is never reused silently; what
a stop acts on; what a launch saves."""

import json
import os
from types import SimpleNamespace

import pytest

from raytop.launch.experiment_folder import existing_experiment
from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE
from tests.unit.bounded import answered_within


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


def test_stop_of_a_symlink_loop_is_one_line(tmp_path):
    """``Path.resolve`` raised RuntimeError on a loop (an internal error at the CLI)."""
    from raytop.launch.control import ControlError, stop_target

    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(ControlError, match=r"loop: its driver is not running here"):
        stop_target(str(tmp_path / "loop"), None)


def test_a_launch_saves_the_spec_it_validated(tmp_path, monkeypatch):
    """The copy beside driver.json is the bytes load_spec read and checked, not the file
    as it is by the time the driver starts (changed, or swapped for a FIFO)."""
    from raytop.launch import launcher
    from raytop.launch.cluster import Target
    from raytop.launch.spec import load_spec

    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(launcher, "preflight", lambda spec: None)
    ended = SimpleNamespace(pid=1, poll=lambda: 0)  # a driver that ended at once
    monkeypatch.setattr(launcher.subprocess, "Popen", lambda *a, **k: ended)
    path = tmp_path / "spec.toml"
    text = (
        f'[experiment]\nname = "exp"\nstorage_path = "{tmp_path}"\n'
        '[trainable]\nkind = "function"\nentrypoint = "objective:objective"\n'
    )
    path.write_text(text)
    spec = load_spec(path)
    path.unlink()
    os.mkfifo(path)
    launched = answered_within(3, lambda: launcher.launch(spec, Target("127.0.0.1:1", False)))
    assert launched[0] == "value", launched
    assert (tmp_path / "exp" / ".raytop" / "spec.toml").read_text() == text


def test_a_trial_stop_does_not_block_on_a_planted_requests_file(tmp_path, monkeypatch):
    """The stop requests are read bounded: a FIFO (or garbage) there is replaced by the
    requests it could not hold, never read until it ends."""
    from raytop.launch import control
    from raytop.rundir import STOP_REQUESTS

    monkeypatch.setattr(control, "check_driver", lambda _d: SimpleNamespace(alive=True))
    os.mkfifo(tmp_path / STOP_REQUESTS)
    assert answered_within(3, lambda: control.stop_trial(tmp_path, "t2"))[0] == "value"
    assert json.loads((tmp_path / STOP_REQUESTS).read_text()) == ["t2"]
    (tmp_path / STOP_REQUESTS).write_text('["t1", 5]')
    control.stop_trial(tmp_path, "t3")
    assert json.loads((tmp_path / STOP_REQUESTS).read_text()) == ["t1", "t3"]
