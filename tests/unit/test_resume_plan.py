"""The resume preview's source side (launch/control.py) over experiment folders on disk:
which experiments a storage path holds, and what raytop refuses to resume, in one line."""

from __future__ import annotations

import json
import os
import time

import pytest

from raytop.launch.control import ControlError, experiments_under, plan_resume
from tests.unit.bounded import answered_within, raised_within


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


# ------------------------------------------------------------- bounded reads (no hang)

SPEC = """[experiment]
name = "exp"
[trainable]
kind = "function"
entrypoint = "objective:objective"
"""


def launched(tmp_path, spec_named=None):
    """An interrupted experiment raytop launched from ``<tmp>/spec.toml`` (the copy saved
    beside its driver.json); ``spec_named``: what driver.json names instead."""
    (tmp_path / "spec.toml").write_text(SPEC)
    folder = experiment(tmp_path / "store" / "exp", launched_by_raytop=True)
    info = {
        "pid": 999_999_999,
        "host": "elsewhere",
        "spec": spec_named or str(tmp_path / "spec.toml"),
    }
    (folder / ".raytop" / "driver.json").write_text(json.dumps(info))
    (folder / ".raytop" / "spec.toml").write_text(SPEC)
    return folder


def refused(folder) -> str:
    message = str(raised_within(3, lambda: plan_resume(str(folder), "skip"), ControlError))
    assert "\n" not in message, message
    return message


def warnings_of(folder) -> tuple[str, ...]:
    outcome, value = answered_within(3, lambda: plan_resume(str(folder), "skip"))
    assert outcome == "value", value
    return value[0].warnings


@pytest.mark.parametrize("planted", ["fifo", "zero"])
def test_a_driver_json_that_is_not_a_file_is_refused_unread(tmp_path, planted):
    info = launched(tmp_path) / ".raytop" / "driver.json"
    info.unlink()
    os.mkfifo(info) if planted == "fifo" else info.symlink_to("/dev/zero")
    kind = "a FIFO" if planted == "fifo" else "a character device"
    assert refused(info.parents[1]) == f"{info}: not a regular file ({kind}): not read"


@pytest.mark.parametrize("planted", ["fifo", "zero"])
def test_a_saved_spec_that_is_not_a_file_is_refused_unread(tmp_path, planted):
    copy = launched(tmp_path) / ".raytop" / "spec.toml"
    copy.unlink()
    os.mkfifo(copy) if planted == "fifo" else copy.symlink_to("/dev/zero")
    kind = "a FIFO" if planted == "fifo" else "a character device"
    assert refused(copy.parents[1]) == (
        f"the spec this experiment was launched with: {copy}: not a regular file ({kind}): not read"
    )


@pytest.mark.parametrize("planted", ["fifo", "zero"])
def test_a_named_spec_that_is_not_a_file(tmp_path, planted):
    """With the copy saved at launch the resume needs only the copy: the user's file is
    compared, bounded, and said to be what it is; without the copy it is one line."""
    named = tmp_path / "named.toml"
    os.mkfifo(named) if planted == "fifo" else named.symlink_to("/dev/zero")
    kind = "a FIFO" if planted == "fifo" else "a character device"
    folder = launched(tmp_path, spec_named=str(named))
    copy = folder / ".raytop" / "spec.toml"
    uses_copy = f"; the resume uses the spec as launched ({copy})"
    assert f"{named}: not a regular file ({kind}): not read{uses_copy}" in warnings_of(folder)
    copy.unlink()
    assert refused(folder) == (
        f"the spec this experiment was launched with: {named}: not a regular file ({kind}): "
        "not read"
    )


def test_the_named_spec_changed_or_gone_since_launch(tmp_path):
    folder = launched(tmp_path)
    copy = folder / ".raytop" / "spec.toml"
    assert not any("since launch" in w for w in warnings_of(folder))
    (tmp_path / "spec.toml").write_text(SPEC + "# edited\n")
    uses_copy = f"; the resume uses the spec as launched ({copy})"
    assert f"{tmp_path / 'spec.toml'} changed since launch{uses_copy}" in warnings_of(folder)
    (tmp_path / "spec.toml").unlink()
    assert f"{tmp_path / 'spec.toml'} is gone since launch{uses_copy}" in warnings_of(folder)


@pytest.mark.parametrize(
    "named", ["/tmp/a\0b.toml", "/tmp/a\ud800b.toml"], ids=["nul", "surrogate"]
)
def test_a_named_spec_no_system_call_takes_is_one_line(tmp_path, named):
    folder = launched(tmp_path, spec_named=named)
    (folder / ".raytop" / "spec.toml").unlink()
    assert "not a usable file name" in refused(folder)


def test_a_symlink_loop_is_no_experiment_not_a_crash(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    assert refused(tmp_path / "loop").endswith(
        "no Tune experiment there (no tuner.pkl / experiment_state)"
    )


@pytest.mark.waits  # ~6 s of S3 retries
def test_unreachable_storage_is_said_to_be_unreachable(tmp_path, monkeypatch):
    """Not "no Tune experiment there": the storage did not answer, and why. pyarrow takes
    ~6 s (its retries) to give up on a refused connection; one listing is made, not two."""
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    uri = "s3://bucket/exp?endpoint_override=127.0.0.1:1&scheme=http"
    started = time.monotonic()
    message = str(raised_within(20, lambda: plan_resume(uri, "skip"), ControlError))
    assert message.startswith(f"{uri}: storage unreachable (")
    assert "Could not connect" in message and message.endswith("); nothing read")
    assert time.monotonic() - started < 10
