"""The experiment reader: probe table first, Tune's state as fallback, and a half-written
file never loses the last good picture."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from raytop.jsonfile import write_json_atomic
from raytop.model import ExperimentStatus
from raytop.rundir import STOP_MARKER
from raytop.sources.storage import Storages
from raytop.sources.tune_dir import ExperimentReader


def trial_row(trial_id: str, status: str, loss: float | None = None) -> dict:
    return {
        "trial_id": trial_id, "status": status, "config": {"lr": 0.1},
        "metrics": {} if loss is None else {"loss": loss}, "num_failures": 0,
        "iterations": 0 if loss is None else 1, "elapsed_s": 1.0, "error": None,
    }  # fmt: skip


def launched(tmp_path, pid: int, rows: list[dict], create_time: float | None = None):
    rdir = tmp_path / "exp" / ".raytop"
    write_json_atomic(
        rdir / "driver.json",
        {"pid": pid, "pid_create_time": create_time, "host": socket.gethostname(),
         "experiment_name": "exp", "experiment_path": str(tmp_path / "exp"),
         "metric": "loss", "mode": "min"},
    )  # fmt: skip
    write_json_atomic(rdir / "trials.json", {"trials": rows})
    return rdir


def test_live_driver_means_running(tmp_path):
    # The driver is proven by its start time and a command line naming the module and
    # this experiment's raytop dir (see tests/unit/test_process_identity.py).
    rdir = tmp_path / "exp" / ".raytop"
    fake_driver = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "raytop.launch.driver", str(rdir)]
    )
    cmdline = Path(f"/proc/{fake_driver.pid}/cmdline")
    for _ in range(100):  # right after fork the child still shows pytest's command line
        if b"raytop.launch.driver" in cmdline.read_bytes():
            break
        time.sleep(0.05)
    try:
        started = psutil.Process(fake_driver.pid).create_time()
        launched(tmp_path, fake_driver.pid, [trial_row("t1", "RUNNING", 0.5)], started)
        exp = ExperimentReader(str(tmp_path / "exp")).read()
        assert (exp.driver_pid, exp.driver_alive) == (fake_driver.pid, True)
        assert exp.status == ExperimentStatus.RUNNING
        assert exp.metric == "loss" and exp.trials[0].metrics == {"loss": 0.5}
    finally:
        fake_driver.kill()
        fake_driver.wait()


def test_gone_driver_with_unfinished_trials_is_interrupted(tmp_path):
    launched(tmp_path, 2**22 + 1, [trial_row("t1", "RUNNING", 0.5)])  # no such pid
    exp = ExperimentReader(str(tmp_path / "exp")).read()
    assert exp.driver_alive is False
    assert exp.status == ExperimentStatus.INTERRUPTED


def test_finished_and_errored(tmp_path):
    rdir = launched(tmp_path, 1, [trial_row("t1", "TERMINATED", 0.5)])
    write_json_atomic(rdir / "exit.json", {"code": 0})
    assert ExperimentReader(str(tmp_path / "exp")).read().status == ExperimentStatus.FINISHED
    write_json_atomic(rdir / "trials.json", {"trials": [trial_row("t1", "ERROR")]})
    assert ExperimentReader(str(tmp_path / "exp")).read().status == ExperimentStatus.ERRORED


def test_half_written_file_keeps_the_last_good_copy(tmp_path):
    rdir = launched(tmp_path, 1, [trial_row("t1", "RUNNING", 0.5)])
    reader = ExperimentReader(str(tmp_path / "exp"))
    assert reader.read().trials[0].metrics["loss"] == 0.5
    (rdir / "trials.json").write_text('{"trials": [{"trial_id": "t1", "sta')
    exp = reader.read()
    assert exp.trials[0].metrics["loss"] == 0.5
    assert any("last good copy" in w for w in exp.warnings)


def test_foreign_experiment_read_from_tune_state(tmp_path):
    folder = tmp_path / "foreign"
    folder.mkdir()
    trial = json.dumps({"trial_id": "a_00000", "status": "TERMINATED", "config": {"x": 3}})
    last = {"score": 0, "training_iteration": 2, "time_total_s": 4.0, "config": {}}
    meta = json.dumps({"num_failures": 1, "last_result": last})
    older = {"trial_data": [[trial.replace("TERMINATED", "RUNNING"), meta]]}
    (folder / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(older))
    (folder / "experiment_state-2026-01-02_00-00-00.json").write_text(
        json.dumps({"trial_data": [[trial, meta]]})
    )
    exp = ExperimentReader(str(folder)).read()
    (t,) = exp.trials
    assert (t.status, t.config, t.iterations, t.num_failures) == ("TERMINATED", {"x": 3}, 2, 1)
    assert t.metrics["score"] == 0 and "config" not in t.metrics
    assert exp.status == ExperimentStatus.FINISHED
    assert exp.driver_alive is None


def test_a_foreign_trials_count_comes_from_its_config_and_it_has_no_history(tmp_path):
    folder = tmp_path / "foreign"
    folder.mkdir()
    trials = [
        json.dumps({"trial_id": f"a_0000{i}", "status": "RUNNING", "config": config})
        for i, config in enumerate(({"num_epochs": 8, "lr": 0.1}, {"lr": 0.2}, {"epochs": "8"}))
    ]
    meta = json.dumps({"last_result": {"loss": 0.5, "training_iteration": 2}})
    state = {"trial_data": [[trial, meta] for trial in trials]}
    (folder / "experiment_state-x.json").write_text(json.dumps(state))
    exp = ExperimentReader(str(folder)).read()
    assert [t.max_iterations for t in exp.trials] == [8, None, None]
    assert all(t.metric_history == () for t in exp.trials)


def test_unfinished_foreign_experiment_is_unknown_not_interrupted(tmp_path):
    folder = tmp_path / "foreign"
    folder.mkdir()
    trial = json.dumps({"trial_id": "a", "status": "RUNNING", "config": {}})
    (folder / "experiment_state-x.json").write_text(
        json.dumps({"trial_data": [[trial, json.dumps({"last_result": {}})]]})
    )
    assert ExperimentReader(str(folder)).read().status == ExperimentStatus.UNKNOWN


def test_empty_folder_is_unknown(tmp_path):
    exp = ExperimentReader(str(tmp_path)).read()
    assert exp.status == ExperimentStatus.UNKNOWN and exp.trials == ()
    assert os.listdir(tmp_path) == []  # reading never writes


def _nested(meta: str, trial: dict | None = None) -> bytes:
    return json.dumps({"trial_data": [[json.dumps(trial or {"trial_id": "a"}), meta]]}).encode()


WRONG_SHAPES = {
    "empty list": (b"[]", "is a list, not an object"),
    "string": (b'"x"', "is a string, not an object"),
    "no trial_data": (b"{}", "has no trial_data"),
    "trial_data a number": (b'{"trial_data": 5}', "trial_data is a number, not a list"),
    "pairs of numbers": (b'{"trial_data": [[1, 2]]}', "is a number, not a JSON string"),
    "not pairs": (b'{"trial_data": ["ab"]}', "not a [trial, meta] pair"),
    "no trial_id": (_nested("{}", {"status": "X"}), "has no trial_id"),
    "last_result a list": (_nested('{"last_result": [1]}'), "last_result is a list"),
}


def _state_folder(tmp_path, content: bytes):
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / "experiment_state-x.json").write_bytes(content)
    return folder


@pytest.mark.parametrize("content,why", WRONG_SHAPES.values(), ids=WRONG_SHAPES.keys())
def test_wrong_shape_state_is_a_warning_naming_the_file(tmp_path, content, why):
    exp = ExperimentReader(str(_state_folder(tmp_path, content))).read()
    assert exp.state_read == "invalid"
    assert "experiment_state-x.json" in exp.state_reason and why in exp.state_reason
    assert any("experiment_state-x.json" in w and why in w for w in exp.warnings)


@pytest.mark.parametrize("content", [b'{"trial_data": [["{', b"\xff\xfe"], ids=["torn", "bytes"])
def test_torn_state_with_no_good_copy_is_torn_not_missing(tmp_path, content):
    exp = ExperimentReader(str(_state_folder(tmp_path, content))).read()
    assert (exp.state_read, exp.trials) == ("torn", ())
    assert "experiment_state-x.json" in exp.state_reason


def test_state_outcomes_ok_missing_and_incomplete(tmp_path):
    assert ExperimentReader(str(tmp_path)).read().state_read == "missing"
    trial = json.dumps({"trial_id": "t1", "status": "TERMINATED", "config": {}})
    folder = _state_folder(tmp_path, json.dumps({"trial_data": [[trial, "{}"]]}).encode())
    exp = ExperimentReader(str(folder)).read()
    assert (exp.state_read, exp.state_reason) == ("ok", None)
    # A raytop run whose probe saw a trial the synced state does not list yet.
    rows = [trial_row("t1", "TERMINATED"), trial_row("t2", "TERMINATED")]
    write_json_atomic(folder / ".raytop" / "trials.json", {"trials": rows})
    exp = ExperimentReader(str(folder)).read(require_state=True)
    assert exp.state_read == "incomplete" and "t2" in exp.state_reason
    assert ExperimentReader(str(folder)).read().state_read == "unknown"  # not asked for


def test_the_drivers_last_table_is_read_when_it_ends_before_the_watch_says_so(tmp_path):
    # The driver writes its final trials.json, then exit.json, and ends. The folder's watch
    # reports changes after a debounce; a read in between must not pair "driver ended" with
    # the table from before its last write (that read as INTERRUPTED a run that finished).
    rdir = tmp_path / "exp" / ".raytop"
    fake_driver = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "raytop.launch.driver", str(rdir)]
    )
    cmdline = Path(f"/proc/{fake_driver.pid}/cmdline")
    for _ in range(100):
        if b"raytop.launch.driver" in cmdline.read_bytes():
            break
        time.sleep(0.05)
    try:
        started = psutil.Process(fake_driver.pid).create_time()
        launched(tmp_path, fake_driver.pid, [trial_row("t1", "RUNNING", 0.5)], started)
        reader = ExperimentReader(str(tmp_path / "exp"), storages=Storages(watch=True))
        deadline = time.monotonic() + 10
        while not reader._storage.watching and time.monotonic() < deadline:
            time.sleep(0.05)  # the watch yields once before its copies are trusted
        assert reader._storage.watching, "the folder's watch did not start"
        assert reader.read().status == ExperimentStatus.RUNNING
        write_json_atomic(rdir / "trials.json", {"trials": [trial_row("t1", "TERMINATED", 0.4)]})
        write_json_atomic(rdir / "exit.json", {"code": 0})
        fake_driver.kill()  # and ends: exit.json alone never outweighs a driver proven live
        fake_driver.wait()
        exp = reader.read()
        assert (exp.driver_alive, exp.status) == (False, ExperimentStatus.FINISHED)
        assert exp.trials[0].metrics == {"loss": 0.4}
    finally:
        fake_driver.kill()
        fake_driver.wait()


def test_after_a_user_stop_tunes_trials_keep_the_probes_histories(tmp_path):
    """A stopped run is read from Tune's state (which trials are unfinished), which has
    no history and knows no stop limit: those come from the probe's last table."""
    rows = [
        {**trial_row("a_00000", "RUNNING", 0.5), "metric_history": [0.9, 0.5],
         "max_iterations": 10},
        {**trial_row("a_00001", "RUNNING", 0.7), "metric_history": [0.7]},
    ]  # fmt: skip
    rdir = launched(tmp_path, 2**22 + 1, rows)  # no such pid: the driver is gone
    (rdir / STOP_MARKER).write_text("")
    state_trials = [
        json.dumps({"trial_id": f"a_0000{i}", "status": "PAUSED", "config": {"epochs": 4}})
        for i in range(3)  # a_00002: not in the probe's table
    ]
    meta = json.dumps({"last_result": {"loss": 0.5, "training_iteration": 2}})
    state = {"trial_data": [[trial, meta] for trial in state_trials]}
    (tmp_path / "exp" / "experiment_state-x.json").write_text(json.dumps(state))
    exp = ExperimentReader(str(tmp_path / "exp")).read()
    assert [t.status for t in exp.trials] == ["PAUSED"] * 3  # Tune's word on each
    assert [t.metric_history for t in exp.trials] == [(0.9, 0.5), (0.7,), ()]
    assert [t.max_iterations for t in exp.trials] == [10, 4, 4]  # the probe's, else config
