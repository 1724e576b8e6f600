"""The resume preview's source side (launch/control.py) over experiment folders on disk:
which experiments a storage path holds, and what raytop refuses to resume, in one line."""

from __future__ import annotations

import json
import os

import pytest

from raytop.launch.control import ControlError, experiments_under, plan_resume


def experiment(folder, trials=("t1",), launched_by_raytop=False, pid=None):
    folder.mkdir(parents=True)
    (folder / "tuner.pkl").write_bytes(b"x")
    state = {"trial_data": [[json.dumps({"trial_id": t, "status": "ERROR", "config": {}}),
                             json.dumps({"num_failures": 1, "last_result": {}})]
                            for t in trials]}  # fmt: skip
    (folder / "experiment_state-2026-12-02_10-00-00.json").write_text(json.dumps(state))
    if launched_by_raytop:
        (folder / ".raytop").mkdir()
        info = {"pid": pid or 999_999_999, "host": "elsewhere", "spec": "/nonexistent.toml"}
        (folder / ".raytop" / "driver.json").write_text(json.dumps(info))
        (folder / ".raytop" / "exit.json").write_text("{}")
    return folder


def test_lists_the_experiments_under_a_storage_path_newest_first(tmp_path):
    old = experiment(tmp_path / "old", trials=("a", "b"))
    new = experiment(tmp_path / "new", launched_by_raytop=True)
    os.utime(old, (1, 1))
    (tmp_path / "not_an_experiment").mkdir()
    found = experiments_under(str(tmp_path))
    assert [(e.name, e.trials, e.can_restore, e.launched_by_raytop) for e in found] == [
        ("new", 1, True, True), ("old", 2, True, False)
    ]  # fmt: skip
    # an experiment folder itself lists just itself
    assert [e.name for e in experiments_under(str(new))] == ["new"]


def test_a_missing_storage_path_is_one_line(tmp_path):
    with pytest.raises(ControlError, match=r"no such folder$"):
        experiments_under(str(tmp_path / "nope"))


def test_what_cannot_be_resumed_is_said_in_one_line(tmp_path):
    with pytest.raises(ControlError, match="no Tune experiment there"):
        plan_resume(str(tmp_path), "skip")
    foreign = experiment(tmp_path / "foreign")
    with pytest.raises(ControlError, match="not launched by raytop here"):
        plan_resume(str(foreign), "skip")
    launched = experiment(tmp_path / "launched", launched_by_raytop=True)
    with pytest.raises(ControlError, match="the spec this experiment was launched with"):
        plan_resume(str(launched), "skip")
