"""Another Tune run's trial folders in an experiment folder (``model.tune_folders``), read
the way Ray 2.60 leaves them when two runs of one name start in the same second (the
shape and times of a folder observed so, docs/RAY_FACTS.md#tune-staging-collision): each
one's storage holds the other's trial folders. Only that evidence warns: an earlier
run's folders, a folder that is not a trial's, or a state whose trials' folders are not
all named say nothing."""

import json
import os

import pytest

from raytop.model.tune_folders import unnamed_recent
from raytop.sources.tune_dir import ExperimentReader

START = 1_796_587_067.0  # the state's run start (runner_data._start_time)


def experiment(tmp_path, own: dict[str, float], other: dict[str, float] | None = None,
               logdirs: bool = True, extra: dict[str, float] | None = None):  # fmt: skip
    """An experiment folder whose state names the trial folders ``own`` (name → mtime);
    ``other``: trial folders (with params.json) no trial of it names; ``extra``: folders
    with no params.json."""
    folder = tmp_path / "hyperband_test"
    folder.mkdir()
    rows = []
    for i, name in enumerate(own):
        trial = {"trial_id": f"4e74d_0000{i}", "status": "TERMINATED", "config": {}}
        if logdirs:
            trial["relative_logdir"] = name
        rows.append([json.dumps(trial), json.dumps({"last_result": {}})])
    state = {"trial_data": rows, "runner_data": {"_start_time": START}}
    (folder / "experiment_state-2026-12-06_19-57-47.json").write_text(json.dumps(state))
    for name, mtime in {**own, **(other or {}), **(extra or {})}.items():
        (folder / name).mkdir()
        if name not in (extra or {}):
            (folder / name / "params.json").write_text("{}")
        os.utime(folder / name, (mtime, mtime))
    return folder


def warned(folder) -> list[str]:
    return [w for w in ExperimentReader(str(folder)).read().warnings if "no trial of" in w]


OWN = {f"train_func_4e74d_0000{i}_{i}_height=35.5,width=24": START + 11 for i in range(2)}


def test_another_runs_trial_folders_written_while_it_ran_are_named(tmp_path):
    other = {f"easy_objective_4e82c_0000{i}_123": START + 11 for i in range(5)}
    (line,) = warned(experiment(tmp_path, OWN, other))
    assert line.startswith("5 trial folders here (easy_objective_4e82c_00000_123, …)"), line
    assert "experiment_state-2026-12-06_19-57-47.json" in line and "same second" in line


@pytest.mark.parametrize(
    "other, logdirs, extra",
    [
        ({"easy_objective_1a2b3_00000_123": START - 3600}, True, None),  # an earlier run's
        (None, True, {"train_runs": START + 30, ".raytop": START + 30}),  # not trials'
        ({"easy_objective_4e82c_00000_123": START + 11}, False, None),  # names not in state
        (None, True, None),  # only its own
    ],
    ids=["earlier-run", "not-a-trial-folder", "state-names-no-folders", "own-only"],
)
def test_no_warning_without_the_evidence(tmp_path, other, logdirs, extra):
    assert warned(experiment(tmp_path, OWN, other, logdirs, extra)) == []


def test_unnamed_recent_needs_a_start_and_times():
    folders = [("a", START + 1), ("b", None), (".raytop", START + 1), ("c", START - 60)]
    assert unnamed_recent(frozenset(), folders, START) == ["a"]
    assert unnamed_recent(frozenset({"a"}), folders, START) == []
    assert unnamed_recent(None, folders, START) == []
    assert unnamed_recent(frozenset(), folders, None) == []
