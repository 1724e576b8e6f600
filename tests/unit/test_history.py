"""History from storage (``--storage PATH``, issue 11), with no cluster: the readers of a
trial's result.json tail and error.txt, the experiment folders under a storage path, the
collector's snapshot from a real finished sweep's files (tests/data/history, copied
from a run of examples/torch_sweep.toml: checkpoint payloads emptied, pickles dropped),
bad input, and that nothing under the storage path changes."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raytop.cli import main
from raytop.model.progress import MAX_METRIC_HISTORY
from raytop.model.untrusted_ray_files import MAX_ERROR_CHARS, error_line, result_tail
from raytop.pipeline.collect import HISTORY_ONLY, SnapshotCollector
from raytop.sources.history import ExperimentFolders
from raytop.sources.local_storage import LocalStorage

DATA = Path(__file__).resolve().parents[1] / "data" / "history" / "torch_sweep"
TRIALS = ("38fb7_00000", "38fb7_00001")
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))


def lines(*rows) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


# -- result.json's tail -----------------------------------------------------------------


def test_result_tail_keeps_the_metric_oldest_first() -> None:
    raw = lines({"loss": 3.0}, {"loss": 2.0, "epoch": 1}, {"epoch": 2}, {"loss": 1.5})
    assert result_tail(raw, False, "loss") == ((3.0, 2.0, 1.5), 0)


def test_result_tail_from_mid_file_drops_the_partial_first_line() -> None:
    raw = lines({"loss": 9.0}, {"loss": 1.0})[5:]  # cut inside the first line
    assert result_tail(raw, True, "loss") == ((1.0,), 0)


def test_result_tail_skips_and_counts_malformed_lines() -> None:
    raw = lines({"loss": 1.0}, b"{not json", b"[1, 2]", {"loss": "nan?"}, {"loss": 2.0})
    assert result_tail(raw, False, "loss") == ((1.0, 2.0), 2)


def test_result_tail_an_unfinished_last_line_is_no_fault() -> None:
    raw = lines({"loss": 1.0}) + b'{"loss": 2.'
    assert result_tail(raw, False, "loss") == ((1.0,), 0)


def test_result_tail_keeps_only_the_last_values() -> None:
    raw = lines(*({"loss": float(i)} for i in range(200)))
    values, bad = result_tail(raw, False, "loss")
    assert len(values) == MAX_METRIC_HISTORY and values[-1] == 199.0 and bad == 0


@FUZZ
@given(raw=st.binary(max_size=512), mid=st.booleans(), metric=st.text(max_size=6))
def test_result_tail_survives_any_bytes(raw, mid, metric) -> None:
    values, bad = result_tail(raw, mid, metric)
    assert len(values) <= MAX_METRIC_HISTORY and bad >= 0
    assert all(isinstance(v, float) and math.isfinite(v) for v in values)


json_rows = st.lists(
    st.dictionaries(
        st.sampled_from(["loss", "epoch", "x"]),
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
        max_size=3,
    ),
    max_size=20,
)


@FUZZ
@given(rows=json_rows, cut=st.integers(min_value=0, max_value=400))
def test_result_tail_of_any_rows_cut_anywhere(rows, cut) -> None:
    raw = lines(*rows)
    values, bad = result_tail(raw[cut:], cut > 0, "loss")
    assert bad == 0  # cutting makes a partial first line, dropped unread
    assert all(math.isfinite(v) for v in values)


# -- error.txt ---------------------------------------------------------------------------

TUNE_ERROR = (
    "Failure # 1 (occurred at 2026-12-04_06-23-50)\n"
    "ray::ImplicitFunc.train() (pid=1, ip=127.0.0.1)\n"
    '  File "loop.py", line 3, in train\n    raise RuntimeError("first")\n'
    "RuntimeError: first\n"
    "Failure # 2 (occurred at 2026-12-04_06-24-50)\n"
    "ray::ImplicitFunc.train() (pid=2, ip=127.0.0.1)\n"
    "Traceback (most recent call last):\n"
    '  File "loop.py", line 3, in train\n    raise ValueError("boom at epoch 3")\n'
    "ValueError: boom at epoch 3\n"
)


def test_error_line_is_the_last_failures_exception() -> None:
    assert error_line(TUNE_ERROR.encode()) == "ValueError: boom at epoch 3"


def test_error_line_of_nothing_and_of_a_long_line() -> None:
    assert error_line(b"") is None and error_line(b"\n  \n") is None
    long = error_line(b"E: " + b"x" * 5000 + b"\x1b[31m")
    assert long is not None and len(long) == MAX_ERROR_CHARS and long.endswith("…")
    assert "\x1b" not in (error_line(b"Boom: \x1b[31mred\n") or "")


@FUZZ
@given(raw=st.binary(max_size=512))
def test_error_line_survives_any_bytes(raw) -> None:
    line = error_line(raw)
    assert line is None or (0 < len(line) <= MAX_ERROR_CHARS and "\n" not in line)


# -- reading a file's end ---------------------------------------------------------------


def test_read_tail_reads_only_the_end(tmp_path) -> None:
    (tmp_path / "big").write_bytes(b"a" * 10_000 + b"END")
    storage = LocalStorage(tmp_path, watch=False)
    tail = storage.read_tail("big", 100)
    assert tail.data is not None and len(tail.data) == 100 and tail.data.endswith(b"END")
    assert tail.mid_file and tail.warning is None
    assert storage.read_tail("absent", 100).data is None


def test_read_tail_refuses_a_fifo_without_blocking(tmp_path) -> None:
    os.mkfifo(tmp_path / "result.json")
    tail = LocalStorage(tmp_path, watch=False).read_tail("result.json", 100)
    assert tail.data is None and "not a regular file" in (tail.warning or "")


# -- the experiments under a storage path -----------------------------------------------


@pytest.fixture
def results(tmp_path) -> Path:
    """A storage path holding the real sweep's experiment folder."""
    shutil.copytree(DATA, tmp_path / "results" / "torch_sweep", symlinks=True)
    return tmp_path / "results"


def test_folders_under_a_storage_path_or_the_path_itself(results) -> None:
    (results / "not_an_experiment").mkdir()
    (results / ".hidden").mkdir()
    experiment = str(results / "torch_sweep")
    assert ExperimentFolders([str(results)]).find() == ([experiment], [])
    assert ExperimentFolders([experiment]).find() == ([experiment], [])
    paths, warnings = ExperimentFolders([str(results / "gone")]).find()
    assert paths == [] and warnings and "gone" in warnings[0]


def tree(folder: Path) -> dict[str, tuple]:
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            found[str(path.relative_to(folder))] = (digest, info.st_size, info.st_mtime_ns)
    return found


def history(results: Path, watch: bool = False):
    collector = SnapshotCollector(None, experiments=[], storage_roots=[str(results)], watch=watch)
    try:
        return collector.collect()
    finally:
        collector.close()


def test_the_sweep_from_storage_alone(results) -> None:
    snapshot = history(results)
    assert not snapshot.cluster.connected and snapshot.cluster.history_only
    assert snapshot.cluster.error == HISTORY_ONLY and snapshot.findings == ()
    (exp,) = snapshot.experiments
    assert exp.path == str(results / "torch_sweep") and exp.status == "FINISHED"
    assert [t.trial_id for t in exp.trials] == list(TRIALS)
    assert {t.status for t in exp.trials} == {"TERMINATED"}
    assert exp.trials[0].metric_history == (5.813892364501953, 0.8690862655639648)
    assert [r.trial_id for r in exp.runs] == list(TRIALS)
    run = exp.runs[0]
    assert run.from_storage and run.workers == () and run.finished
    assert [(c.dir_name, c.state) for c in run.checkpoints] == [
        ("checkpoint_2026-12-04_06-23-50.294602", "committed"),
        ("checkpoint_2026-12-04_06-23-50.355314", "committed"),
    ]


def as_plain_tune(results: Path, *, error: str | None = None) -> Path:
    """The sweep as any Tune experiment: no raytop dir, trial 1 ERROR with ``error``."""
    experiment = results / "torch_sweep"
    shutil.rmtree(experiment / ".raytop")
    if error is not None:
        (state_file,) = experiment.glob("experiment_state-*.json")
        state = json.loads(state_file.read_text())
        for row in state["trial_data"]:
            trial = json.loads(row[0])
            if trial["trial_id"] == TRIALS[1]:
                trial["status"] = "ERROR"
                row[0] = json.dumps(trial)
        state_file.write_text(json.dumps(state))
        (folder,) = experiment.glob(f"*_{TRIALS[1]}_*")
        (folder / "error.txt").write_text(error)
    return experiment


def test_a_plain_tune_experiment_history_from_result_json_and_error_txt(results) -> None:
    as_plain_tune(results, error=TUNE_ERROR)
    (exp,) = history(results).experiments
    assert exp.metric == "loss"  # Tune's runner_data names it
    by_id = {t.trial_id: t for t in exp.trials}
    assert by_id[TRIALS[0]].metric_history == (5.813892364501953, 0.8690862655639648)
    assert by_id[TRIALS[1]].status == "ERROR"
    assert by_id[TRIALS[1]].error == "ValueError: boom at epoch 3"
    assert exp.status == "ERRORED" and exp.warnings == ()


def test_malformed_result_lines_are_a_warning_naming_the_file(results) -> None:
    experiment = as_plain_tune(results)
    (folder,) = experiment.glob(f"*_{TRIALS[0]}_*")
    with open(folder / "result.json", "ab") as f:
        f.write(b"{torn\n" + json.dumps({"loss": 0.5}).encode() + b"\n")
    (exp,) = history(results).experiments
    by_id = {t.trial_id: t for t in exp.trials}
    assert by_id[TRIALS[0]].metric_history[-1] == 0.5
    (warning,) = exp.warnings
    assert f"{folder.name}/result.json: 1 malformed line(s) skipped" == warning


def test_an_unreadable_experiment_state_is_a_warning_not_a_crash(results) -> None:
    experiment = as_plain_tune(results)
    (state_file,) = experiment.glob("experiment_state-*.json")
    state_file.write_text('{"trial_data": [["torn')
    (exp,) = history(results).experiments
    assert exp.trials == () and exp.state_read == "torn"
    assert any(state_file.name in w for w in exp.warnings)


@pytest.mark.parametrize("watch", [False, True])
def test_reading_history_changes_nothing_under_the_storage_path(results, watch) -> None:
    before = tree(results)
    history(results, watch)
    as_text = CliRunner().invoke(main, ["status", "--json", "--storage", str(results)])
    assert as_text.exit_code == 0, as_text.output
    assert tree(results) == before


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def no_cluster(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def test_status_storage_is_exit_0_json_with_no_cluster_and_no_gcs_tried(
    results, no_cluster, monkeypatch
) -> None:
    import raytop.launch.cluster as cluster

    def never(*_a, **_k):
        raise AssertionError("no cluster was named or recorded: none may be tried")

    monkeypatch.setattr(cluster.ray_adapter, "probe_tcp", never)
    monkeypatch.setattr(cluster.ray_adapter, "local_cluster_address", never)
    for args in (["status", "--json", "--storage", str(results)],
                 ["--storage", str(results), "status", "--json"]):  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        shown = json.loads(result.stdout)
        assert shown["cluster"]["error"] == HISTORY_ONLY
        assert [t["trial_id"] for t in shown["experiments"][0]["trials"]] == list(TRIALS)


def test_status_storage_with_a_named_cluster_gone_is_history_not_an_error(
    results, no_cluster
) -> None:
    result = CliRunner().invoke(
        main, ["status", "--json", "--storage", str(results), "--address", "127.0.0.1:1"]
    )
    assert result.exit_code == 0, result.output
    error = json.loads(result.stdout)["cluster"]["error"]
    assert error.startswith(HISTORY_ONLY + " (") and "127.0.0.1:1" in error


@pytest.mark.parametrize("what", ["missing", "file"])
def test_storage_that_is_not_a_folder_is_one_line_exit_2(tmp_path, no_cluster, what) -> None:
    path = tmp_path / "nope"
    if what == "file":
        path.write_text("x")
    for args in (["status", "--storage", str(path)], ["--storage", str(path)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("raytop: error: --storage ") and str(path) in line
