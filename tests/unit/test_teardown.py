"""check --teardown over experiment folders laid out as Tune and Train write them."""

import dataclasses
import json
import os

import pytest

from raytop.diagnose import teardown
from raytop.diagnose.teardown import teardown_findings
from raytop.model import Trial
from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE, teardown_facts
from raytop.sources.tune_dir import ExperimentReader

STATE = "experiment_state-2026-12-02_00-00-00.json"


def good_state(*trial_ids: str) -> str:
    rows = [
        [json.dumps({"trial_id": t, "status": "TERMINATED", "config": {}}),
         json.dumps({"last_result": {"training_iteration": 1}})]
        for t in trial_ids
    ]  # fmt: skip
    return json.dumps({"trial_data": rows})


def read(folder):
    return ExperimentReader(str(folder)).read(require_state=True)


def verdict(facts) -> list[tuple[str, str]]:
    """(reason, line) of each teardown finding: which check failed, and what it says."""
    return [(f.evidence["reason"], f.message) for f in teardown_findings(facts)]


def layout(tmp_path, listed: list[str], on_disk: list[str], state=True):
    folder = tmp_path / "exp"
    folder.mkdir(exist_ok=True)
    if state:
        (folder / STATE).write_text(good_state("t1"))
    run_dir = folder / "train_runs" / train_run_name("exp", "t1")
    run_dir.mkdir(parents=True)
    results = [{"checkpoint_dir_name": name, "metrics": {}} for name in listed]
    latest = results[-1] if results else None
    snapshot = {"checkpoint_results": results, "latest_checkpoint_result": latest}
    (run_dir / SNAPSHOT_FILE).write_text(json.dumps(snapshot))
    for name in on_disk:
        (run_dir / name).mkdir()
    exp = read(folder)
    if state:
        assert exp.state_read == "ok", exp.state_reason
        assert [t.trial_id for t in exp.trials] == ["t1"]
    else:  # e.g. a probe's table with no state synced yet
        exp = dataclasses.replace(exp, trials=(Trial("t1", "TERMINATED"),))
    return dataclasses.replace(exp, driver_alive=False)


def test_everything_committed_is_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a", "checkpoint_b"], ["checkpoint_a", "checkpoint_b"])
    assert verdict(teardown_facts(exp)) == []


def test_an_upload_in_flight_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a", "checkpoint_b"])
    ((reason, problem),) = verdict(teardown_facts(exp))
    assert reason == teardown.UNCOMMITTED
    assert "1 checkpoint(s) not committed yet (checkpoint_b)" in problem


def test_a_missing_latest_checkpoint_and_no_state(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], [], state=False)
    problems = dict(verdict(teardown_facts(exp)))
    assert "no experiment_state file" in problems[teardown.STATE_MISSING]
    assert "latest checkpoint checkpoint_a is missing" in problems[teardown.CHECKPOINT_MISSING]


def test_a_running_driver_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    running = dataclasses.replace(exp, driver_alive=True)
    ((reason, problem),) = verdict(teardown_facts(running))
    assert reason == teardown.DRIVER_RUNNING
    assert "the Tune driver is running" in problem


def test_folders_cut_off_by_an_earlier_crash_do_not_block(tmp_path):
    exp = layout(tmp_path, ["checkpoint_b"], ["checkpoint_a", "checkpoint_b"])
    run_dir = tmp_path / "exp" / "train_runs" / train_run_name("exp", "t1")
    os.utime(run_dir / "checkpoint_a", (1_000_000, 1_000_000))  # older than the committed b
    assert verdict(teardown_facts(exp)) == []


BAD_STATES = {
    "torn": b'{"trial_data": [["{\\"trial_id',
    "empty list": b"[]",
    "string": b'"x"',
    "no trial_data": b"{}",
    "trial_data a number": b'{"trial_data": 5}',
    "pairs of numbers": b'{"trial_data": [[1, 2]]}',
    "binary": b"\xff\xfe\x00",
    "no trial_id": json.dumps({"trial_data": [[json.dumps({"status": "X"}), "{}"]]}).encode(),
    "not pairs": b'{"trial_data": [["a"]]}',
    "meta not an object": json.dumps(
        {"trial_data": [[json.dumps({"trial_id": "t1"}), "[1]"]]}
    ).encode(),
}


@pytest.mark.parametrize("content", BAD_STATES.values(), ids=BAD_STATES.keys())
def test_a_bad_experiment_state_is_not_safe(tmp_path, content):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    (tmp_path / "exp" / STATE).write_bytes(content)
    exp = dataclasses.replace(read(tmp_path / "exp"), driver_alive=False)
    assert exp.state_read in ("torn", "invalid"), exp.state_read
    problems = verdict(teardown_facts(exp))
    assert any(reason == teardown.STATE_UNREADABLE and STATE in p for reason, p in problems), (
        problems
    )


def test_state_listing_no_trials_is_not_safe(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / STATE).write_text(json.dumps({"trial_data": []}))
    exp = read(folder)
    assert exp.state_read == "ok"
    assert verdict(teardown_facts(exp)) == [
        (teardown.NO_TRIALS, "exp: the experiment state lists no trials: nothing to resume")
    ]


def test_unreadable_snapshot_is_tracked_structurally(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    run_dir = tmp_path / "exp" / "train_runs" / train_run_name("exp", "t1")
    for content in ('{"checkpoint_results": [', "[]", '{"checkpoint_results": 3}'):
        (run_dir / SNAPSHOT_FILE).write_text(content)
        facts = teardown_facts(exp)
        assert facts.stale_runs == ("t1",)
        ((reason, problem),) = verdict(facts)
        assert reason == teardown.SNAPSHOT_UNUSABLE
        assert problem.startswith("exp trial t1: checkpoint snapshot unusable")
    (run_dir / SNAPSHOT_FILE).unlink()
    ((reason, problem),) = verdict(teardown_facts(exp))
    assert SNAPSHOT_FILE in problem


def test_an_unread_state_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    unknown = dataclasses.replace(exp, state_read="unknown", state_reason=None)
    ((reason, problem),) = verdict(teardown_facts(unknown))
    assert reason == teardown.STATE_UNREADABLE
    assert "experiment state unknown" in problem


def test_a_driver_that_cannot_be_proven_stopped_is_never_safe() -> None:
    """driver.json names a pid raytop cannot prove (another host, an older record, a start
    time that differs): the driver may still be writing, so teardown is not safe."""
    from raytop.model.teardown import ExperimentFacts

    facts = ExperimentFacts(name="exp", driver_alive=None, state_on_storage=True, driver_pid=42)
    ((reason, problem),) = verdict(facts)
    assert reason == teardown.DRIVER_UNPROVEN
    assert "cannot tell whether its Tune driver (pid 42) has stopped" in problem
    # Not launched by raytop (no pid recorded): nothing to wait for.
    assert verdict(ExperimentFacts("exp", None, True)) == []


def test_a_driver_record_that_does_not_read_is_never_safe(tmp_path):
    """driver.json is there but is no valid record: raytop launched it and cannot tell
    whether it stopped. Beside exit.json (the driver's own word that it ended) it is safe."""
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    raytop_dir = tmp_path / "exp" / ".raytop"
    raytop_dir.mkdir()
    (raytop_dir / "driver.json").write_text('{"pid": "abc"}')
    exp = ExperimentReader(str(tmp_path / "exp")).read(require_state=True)
    assert exp.driver_alive is None and "driver.json" in exp.warnings[0]
    ((reason, problem),) = verdict(teardown_facts(exp))
    assert reason == teardown.DRIVER_RECORD_INVALID
    assert "driver.json is not a valid driver record" in problem
    (raytop_dir / "exit.json").write_text("{}")
    ended = ExperimentReader(str(tmp_path / "exp")).read(require_state=True)
    assert ended.driver_alive is False
    assert verdict(teardown_facts(ended)) == []


def test_a_run_folder_that_cannot_be_listed_is_not_safe(tmp_path):
    exp = layout(tmp_path, ["checkpoint_a"], ["checkpoint_a"])
    runs = tmp_path / "exp" / "train_runs"
    run_dir = runs / train_run_name("exp", "t1")
    import shutil

    shutil.rmtree(run_dir)
    run_dir.symlink_to(run_dir.name)  # a loop
    ((_reason, problem),) = verdict(teardown_facts(exp))
    assert "run folder is there but cannot be listed" in problem
    # train_runs itself a loop hides every run: named too.
    shutil.move(run_dir, tmp_path / "aside")
    runs.rmdir()
    runs.symlink_to(runs.name)
    ((_reason, problem),) = verdict(teardown_facts(exp))
    assert "train_runs is there but cannot be listed" in problem
    # A finished trial with no run folder at all (a function trial) is no problem.
    runs.unlink()
    assert verdict(teardown_facts(exp)) == []


def test_each_verdict_is_a_structured_finding(tmp_path):
    """The verdict is data: kind, severity, the experiment as subject and the reason in
    the evidence; the printed line is the finding's message."""
    from raytop.model import Severity
    from raytop.model.teardown import ExperimentFacts, RunFacts

    facts = ExperimentFacts(
        name="exp", driver_alive=True, state_on_storage=False,
        runs=(RunFacts("t1", "checkpoint_a", False, ("checkpoint_b",)),),
    )  # fmt: skip
    found = teardown.teardown_findings(facts)
    assert {f.kind for f in found} == {"teardown_unsafe"}
    assert {f.severity for f in found} == {Severity.ERROR}
    assert {f.subject for f in found} == {"exp"}
    assert [f.evidence["reason"] for f in found] == [
        teardown.DRIVER_RUNNING, teardown.STATE_MISSING,
        teardown.CHECKPOINT_MISSING, teardown.UNCOMMITTED,
    ]  # fmt: skip
    assert found[2].evidence["trial_id"] == "t1"
    (unlisted,) = teardown.unlisted_findings(["experiments.json: torn"])
    assert unlisted.evidence["reason"] == teardown.UNLISTED
    assert unlisted.message == "experiments.json: torn: name the experiments with --experiment PATH"


def test_check_prints_one_line_per_teardown_finding(tmp_path):
    from raytop.diagnose.check import TEARDOWN_UNSAFE
    from raytop.diagnose.teardown import teardown_findings
    from raytop.faces import check
    from raytop.model.teardown import ExperimentFacts

    found = teardown_findings(ExperimentFacts("exp", True, True))
    lines, code = check.teardown(found, 1)
    assert code == TEARDOWN_UNSAFE
    assert lines == [f"teardown_unsafe {found[0].message}"]
    assert check.teardown([], 2) == (["safe to tear down: 2 experiment(s) complete on storage"], 0)
