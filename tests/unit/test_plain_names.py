"""A name read from storage (a trial id) is joined into a path only when it is plain
(``model.paths.is_plain_name``): no reader (status, the resume preview, teardown) follows
``../`` out of the experiment folder, and a NUL or a lone surrogate is a warning, never a
crash."""

from __future__ import annotations

import json
import socket

import pytest

from raytop.model.paths import is_plain_name
from raytop.pipeline.teardown import storage_findings
from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE, CheckpointSnapshots, teardown_facts
from raytop.sources.tune_dir import ExperimentReader

STATE = "experiment_state-2026-12-02_00-00-00.json"

PLAIN = ["t1", "a1b2c3d4_00001", "a.b-c_D9", "x" * 255, "..a", "a.."]
NOT_PLAIN = ["", ".", "..", "../x", "a/b", "/abs", "a\\b", "a\x00b", "a\nb", "a\tb", "a\x7fb",
             "aa_\ud800", "\udcff", "é", "a b", "a\u202eb", "x" * 256, None, 5, b"t1"]  # fmt: skip


def test_the_plain_name_rule():
    assert [n for n in PLAIN if not is_plain_name(n)] == []
    assert [n for n in NOT_PLAIN if is_plain_name(n)] == []


def complete(tmp_path, name: str, trial_id: str, status: str):
    """An experiment folder whose trial has a committed checkpoint on storage."""
    path = tmp_path / name
    run = path / "train_runs" / train_run_name(name, "t1")
    (run / "checkpoint_000001").mkdir(parents=True)
    result = {"checkpoint_dir_name": "checkpoint_000001", "metrics": {"epoch": 1}}
    (run / SNAPSHOT_FILE).write_text(
        json.dumps({"checkpoint_results": [result], "latest_checkpoint_result": result})
    )
    trial = json.dumps({"trial_id": trial_id, "status": status, "config": {}})
    meta = json.dumps({"last_result": {"training_iteration": 1}})
    (path / STATE).write_text(json.dumps({"trial_data": [[trial, meta]]}))
    return path


# Joined as before, this id led from exp/train_runs/ to other's complete run.
ESCAPING = "x/../../../other/train_runs/other-t1"


@pytest.mark.parametrize("trial_id", [ESCAPING, "..", "a\x00b", "aa_\ud800", "a\nb"])
def test_no_reader_joins_a_trial_id_that_is_not_plain(tmp_path, trial_id):
    complete(tmp_path, "other", "t1", "TERMINATED")
    exp = tmp_path / "exp"
    exp.mkdir()
    trial = json.dumps({"trial_id": trial_id, "status": "RUNNING", "config": {}})
    meta = json.dumps({"last_result": {"training_iteration": 1}})
    (exp / STATE).write_text(json.dumps({"trial_data": [[trial, meta]]}))
    (exp / "train_runs").mkdir()  # its trials are Train runs
    experiment = ExperimentReader(str(exp)).read(require_state=True)
    assert [t.trial_id for t in experiment.trials] == [trial_id]
    (warning,) = experiment.warnings
    assert warning.startswith(f"{STATE}: trial id {trial_id!r} is not a plain name")
    assert CheckpointSnapshots().latest(experiment) == {}  # what the resume preview shows
    facts = teardown_facts(experiment)
    assert (facts.odd_trial_ids, facts.runs) == ((trial_id,), ())
    findings, _ = storage_findings([(str(exp), None)])
    (finding,) = findings
    assert finding.evidence == {"reason": "trial_id_not_plain", "trial_id": trial_id}
    assert repr(trial_id) in finding.message
    finding.message.encode("utf-8")  # printable as it is: escapes, not the raw characters


@pytest.mark.parametrize("recorded", ["/x\x00y", "/x/\ud800", "relative/other", "s3://b/exp"])
def test_a_driver_record_naming_a_path_that_cannot_be_resolved_is_elsewhere(tmp_path, recorded):
    exp = complete(tmp_path, "exp", "t1", "TERMINATED")
    (exp / ".raytop").mkdir()
    record = {"pid": 2**22 + 1, "pid_create_time": 1.0, "host": socket.gethostname(),
              "experiment_name": "exp", "experiment_path": recorded}  # fmt: skip
    (exp / ".raytop" / "driver.json").write_text(json.dumps(record))
    reader = ExperimentReader(str(exp))
    experiment = reader.read(require_state=True)
    assert (experiment.path, experiment.name) == (str(exp), "exp")
    assert reader.record_elsewhere and repr(recorded) in reader.record_elsewhere
    assert experiment.warnings[0] == reader.record_elsewhere
    findings, _ = storage_findings([(str(exp), None)])
    assert [f.evidence["reason"] for f in findings] == ["driver_record_elsewhere"]


def test_a_driver_record_naming_this_folder_however_spelt_is_no_warning(tmp_path):
    exp = complete(tmp_path, "exp", "t1", "TERMINATED")
    (tmp_path / "link").symlink_to(tmp_path)
    (exp / ".raytop").mkdir()
    for recorded in (str(exp), f"{exp}/", str(tmp_path / "link" / "exp"), f"file://{exp}"):
        record = {"pid": 2**22 + 1, "pid_create_time": 1.0, "host": socket.gethostname(),
                  "experiment_name": "exp", "experiment_path": recorded}  # fmt: skip
        (exp / ".raytop" / "driver.json").write_text(json.dumps(record))
        reader = ExperimentReader(str(exp))
        assert reader.read(require_state=True).warnings == (), recorded
        assert storage_findings([(str(exp), None)]) == ([], 1), recorded
    # The same folder under another experiment name: the run folders are named after it.
    record["experiment_name"] = "renamed"
    (exp / ".raytop" / "driver.json").write_text(json.dumps(record))
    reader = ExperimentReader(str(exp))
    reader.read(require_state=True)
    assert reader.record_elsewhere and "another experiment, 'renamed'" in reader.record_elsewhere


def test_a_probe_table_with_an_odd_trial_id_is_named_and_never_joined(tmp_path):
    """The probe's trials.json lists a trial the synced state does not: both lines quote
    its id (a NUL here), and teardown names it instead of joining it into a path."""
    exp = complete(tmp_path, "exp", "t1", "TERMINATED")
    row = {"status": "RUNNING", "config": {}, "metrics": {}, "num_failures": 0,
           "iterations": 1, "elapsed_s": 1.0, "error": None}  # fmt: skip
    rows = [{"trial_id": t, **row} for t in ("t1", "a\x00b")]
    (exp / ".raytop").mkdir()
    (exp / ".raytop" / "trials.json").write_text(json.dumps({"trials": rows}))
    experiment = ExperimentReader(str(exp)).read(require_state=True)
    assert experiment.state_read == "incomplete"
    assert "but not 'a\\x00b': not yet synced" in experiment.state_reason
    assert experiment.warnings == (
        "trials.json: trial id 'a\\x00b' is not a plain name (letters, digits, '_', '-', "
        "'.'): its Train run's checkpoints are not looked for",
    )
    findings, _ = storage_findings([(str(exp), None)])
    assert [f.evidence["reason"] for f in findings] == ["state_unreadable", "trial_id_not_plain"]


def test_a_flight_recorder_dump_folder_is_never_made_of_an_odd_trial_id(tmp_path):
    """The trial id comes from the cluster's KV store (the ledger): ``../x`` would read
    dumps outside the raytop dir."""
    from raytop.sources.flight_recorder import dump_folder

    assert dump_folder(tmp_path, "a1b2_00001") == tmp_path / "flight_recorder" / "a1b2_00001"
    for odd in ("../x", "a/b", "..", "aa_\ud800", "a\x00b"):
        assert dump_folder(tmp_path, odd) is None
