"""The TrialProbe's table in segments: a result rewrites its trial's segment and the index,
never the table; the reader reads only the segments whose version moved, keeps the rest
as the very same Trials, and a bad or stale segment keeps its last good rows with a
warning naming it. A driver of an older raytop's whole trials.json still reads."""

from __future__ import annotations

import json
import os
import pickle
import time
from types import SimpleNamespace

from raytop.jsonfile import write_json_atomic
from raytop.model.untrusted_trial_table import SEGMENT_ROWS
from raytop.probe.trial_probe import TrialProbe
from raytop.rundir import TRIALS_INDEX, trials_segment
from raytop.sources.probe_table import ProbeTable
from raytop.sources.storage import Storages
from tests.trial_table_files import written_rows

N = 3 * SEGMENT_ROWS + 5  # four segments, the last one part-full


def trial(i: int, status: str = "RUNNING") -> SimpleNamespace:
    return SimpleNamespace(
        trial_id=f"t{i:05d}", status=status, config={"lr": i}, last_result={}, num_failures=0,
        error_file=None,
    )  # fmt: skip


def versions(folder) -> list[int]:
    return json.loads((folder / TRIALS_INDEX).read_text())["segments"]


def probe_with(folder, trials) -> TrialProbe:
    probe = TrialProbe(str(folder), min_interval_s=0.0, metric="loss")
    probe.on_step_end(0, trials)
    return probe


def test_a_result_rewrites_its_segment_and_the_index_only(tmp_path) -> None:
    trials = [trial(i) for i in range(N)]
    probe = probe_with(tmp_path, trials)
    assert versions(tmp_path) == [1, 1, 1, 1]
    assert [r["trial_id"] for r in written_rows(tmp_path)] == [t.trial_id for t in trials]
    before = {k: os.stat(tmp_path / trials_segment(k)).st_ino for k in range(4)}
    probe.on_trial_result(0, trials, trials[SEGMENT_ROWS + 3], {"loss": 0.5})
    assert versions(tmp_path) == [1, 2, 1, 1]  # the trial's segment, nothing else
    after = {k: os.stat(tmp_path / trials_segment(k)).st_ino for k in range(4)}
    assert [k for k in range(4) if before[k] != after[k]] == [1]
    row = written_rows(tmp_path)[SEGMENT_ROWS + 3]
    assert row["metrics"] == {"loss": 0.5} and row["metric_history"] == [0.5]


def test_trials_tune_adds_are_appended_and_a_status_changed_without_a_callback_is_found(
    tmp_path, monkeypatch
) -> None:
    trials = [trial(i) for i in range(3)]
    probe = probe_with(tmp_path, trials)
    trials.append(trial(3, "PENDING"))  # Tune added a trial: no callback names it
    probe.on_step_end(1, trials)
    assert [r["status"] for r in written_rows(tmp_path)] == ["RUNNING"] * 3 + ["PENDING"]
    trials[1].status = "PAUSED"  # a scheduler paused it: Tune has no callback for that
    probe.on_step_end(2, trials)
    assert written_rows(tmp_path)[1]["status"] == "RUNNING"  # not looked at yet
    monkeypatch.setattr("raytop.probe.trial_probe.SCAN_INTERVAL_S", 0.0)
    probe.on_step_end(3, trials)
    assert written_rows(tmp_path)[1]["status"] == "PAUSED"
    trials[3].status = "TERMINATED"  # a pending trial ended with no callback: rare
    probe.on_step_end(4, trials)
    assert written_rows(tmp_path)[3]["status"] == "PENDING"  # only running ones each second
    monkeypatch.setattr("raytop.probe.trial_probe.FULL_SCAN_INTERVAL_S", 0.0)
    probe.on_step_end(5, trials)
    assert written_rows(tmp_path)[3]["status"] == "TERMINATED"  # every trial, every 10 s
    trials[2].status = "TERMINATED"
    probe.on_experiment_end(trials)  # the last write looks at every status
    assert written_rows(tmp_path)[2]["status"] == "TERMINATED"


def test_a_failed_write_is_retried_with_the_same_rows(tmp_path, monkeypatch) -> None:
    trials = [trial(i) for i in range(2)]
    probe = probe_with(tmp_path, trials)

    def full(*_args) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("raytop.probe.trial_table.write_atomic", full)
    probe.on_trial_result(0, trials, trials[0], {"loss": 0.25})
    assert probe.write_failures == 1
    monkeypatch.undo()
    probe.on_step_end(1, trials)
    assert written_rows(tmp_path)[0]["metrics"] == {"loss": 0.25}


def test_a_resumed_driver_starts_a_new_generation_and_pickles_no_table(tmp_path) -> None:
    trials = [trial(i) for i in range(2)]
    probe = probe_with(tmp_path, trials)
    first = json.loads((tmp_path / TRIALS_INDEX).read_text())["generation"]
    copy = pickle.loads(pickle.dumps(probe))  # tuner.pkl, unpickled by the resumed driver
    assert "_now" not in copy.__dict__
    copy.on_step_end(0, trials)
    index = json.loads((tmp_path / TRIALS_INDEX).read_text())
    assert index["generation"] != first and index["segments"] == [1]
    assert len(written_rows(tmp_path)) == 2


def test_a_probe_of_an_older_raytop_writes_into_its_folder(tmp_path) -> None:
    """Its tuner.pkl named the table's file (``_path``), and had no ``_raytop_dir``."""
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0)
    del probe.__dict__["_raytop_dir"]
    probe.__dict__.update(_path=tmp_path / "trials.json", _trials=[], _results={}, _dirty=False)
    probe = pickle.loads(pickle.dumps(probe))
    probe.on_step_end(0, [trial(0)])
    assert [r["trial_id"] for r in written_rows(tmp_path)] == ["t00000"]


def reader(folder) -> ProbeTable:
    return ProbeTable(Storages(watch=False), folder)


def test_the_reader_reads_the_segments_whose_version_moved_only(tmp_path) -> None:
    trials = [trial(i) for i in range(N)]
    probe = probe_with(tmp_path, trials)
    table = reader(tmp_path)
    first, warnings = table.read()
    assert warnings == [] and [t.trial_id for t in first] == [t.trial_id for t in trials]
    storage, _ = table._locate(TRIALS_INDEX)
    reads = storage.reads
    probe.on_trial_result(0, trials, trials[2 * SEGMENT_ROWS], {"loss": 0.1})
    second, _ = table.read()
    assert storage.reads - reads == 2  # the index and the one segment
    changed = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a is not b]
    assert changed == list(range(2 * SEGMENT_ROWS, 3 * SEGMENT_ROWS))  # its segment's
    assert second[2 * SEGMENT_ROWS].metrics == {"loss": 0.1}
    reads = storage.reads
    third, _ = table.read()
    assert storage.reads - reads == 1 and third is second  # the very tuple: nothing moved


def test_a_bad_segment_keeps_its_last_good_rows_and_names_the_file(tmp_path) -> None:
    trials = [trial(i) for i in range(N)]
    probe = probe_with(tmp_path, trials)
    table = reader(tmp_path)
    good, _ = table.read()
    probe.on_trial_result(0, trials, trials[0], {"loss": 0.1})
    (tmp_path / trials_segment(0)).write_text('{"generation": "00", "version": 2, "trials": 7}')
    kept, warnings = table.read()
    assert [t.trial_id for t in kept] == [t.trial_id for t in good]
    assert kept[:SEGMENT_ROWS] == good[:SEGMENT_ROWS]  # its last good rows
    assert len(warnings) == 1 and warnings[0].startswith("trials/0.json: ")
    probe.on_trial_result(0, trials, trials[N - 1], {"loss": 0.2})
    (tmp_path / trials_segment(3)).unlink()  # named by the index, gone
    kept, warnings = table.read()
    assert len(kept) == N
    assert any(w.startswith("trials/3.json: missing") for w in warnings), warnings


def test_a_segment_older_than_its_index_is_not_taken_for_the_named_one(tmp_path) -> None:
    trials = [trial(i) for i in range(3)]
    probe = probe_with(tmp_path, trials)
    table = reader(tmp_path)
    table.read()
    old = (tmp_path / trials_segment(0)).read_text()
    probe.on_trial_result(0, trials, trials[1], {"loss": 0.3})
    (tmp_path / trials_segment(0)).write_text(old)  # a stale copy under the name
    rows, warnings = table.read()
    assert rows[1].metrics == {} and "older than trials/index.json names it" in warnings[0]


def test_an_older_raytops_whole_table_is_read_and_the_newer_form_wins(tmp_path) -> None:
    write_json_atomic(tmp_path / "trials.json", {"trials": [dict(
        trial_id="old", status="TERMINATED", config={}, metrics={}, num_failures=0,
        iterations=1, elapsed_s=1.0, error=None,
    )]})  # fmt: skip
    table = reader(tmp_path)
    assert [t.trial_id for t in table.read()[0]] == ["old"]
    past = time.time() - 60
    os.utime(tmp_path / "trials.json", (past, past))
    probe_with(tmp_path, [trial(0)])  # a newer driver resumed it
    assert [t.trial_id for t in reader(tmp_path).read()[0]] == ["t00000"]


def test_a_segment_never_read_good_leaves_the_table_to_tunes_state(tmp_path) -> None:
    probe_with(tmp_path, [trial(i) for i in range(3)])
    (tmp_path / trials_segment(0)).write_text('{"generation": "ab", "version": 1, "trials": [{}]}')
    rows, warnings = reader(tmp_path).read()
    assert rows is None and warnings[0].startswith("trials/0.json: trials[0]: missing key")


def test_a_segment_over_its_size_cap_is_refused_unread(tmp_path) -> None:
    from raytop.model.untrusted_trial_table import MAX_SEGMENT_BYTES

    probe = probe_with(tmp_path, [trial(i) for i in range(3)])
    table = reader(tmp_path)
    good, _ = table.read()
    probe.on_trial_result(0, [trial(i) for i in range(3)], trial(1), {"loss": 0.5})
    with open(tmp_path / trials_segment(0), "ab") as f:
        f.write(b" " * MAX_SEGMENT_BYTES)  # still JSON, but over the cap
    kept, warnings = table.read()
    assert [t.trial_id for t in kept] == [t.trial_id for t in good]
    assert "trials/0.json" in warnings[0] and "cap" in warnings[0], warnings
