"""History from storage at scale, without timing: a read lists each folder once, whatever
the number of trials, and reads each trial's files once (the experiment is made by
benchmarks/history_bench.py's generator, as Tune writes one); trial ids are matched to
Tune's folder names in one pass, by the rule of one folder at a time."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raytop.sources.history import ExperimentFolders, match_trial_folders
from raytop.sources.storage_base import Entry

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "history_bench.py"


def bench():
    if "history_bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location("history_bench", BENCH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["history_bench"] = module
        spec.loader.exec_module(module)
    return sys.modules["history_bench"]


def counted_read(tmp_path: Path, trials: int) -> dict[str, tuple[int, int]]:
    """(folders listed, files read) per storage of one ``status --storage`` read."""
    made = bench().make_experiment(tmp_path / f"results-{trials}" / "sweep", trials)
    _seconds, snapshot, collector = bench().read_history(made.parent)
    (exp,) = snapshot.experiments
    assert len(exp.trials) == trials and exp.warnings == ()
    assert all(t.metric_history for t in exp.trials)  # every trial's result.json was read
    assert sum(1 for t in exp.trials if t.error) == trials // 10  # and each error.txt
    return {
        os.path.basename(root): (s.lists, s.reads)
        for root, s in collector._storages._by_root.items()
    }


def test_a_history_read_lists_each_folder_once_whatever_the_trials(tmp_path):
    small, large = counted_read(tmp_path, 10), counted_read(tmp_path, 100)
    (small_lists, small_reads), (large_lists, large_reads) = small["sweep"], large["sweep"]
    # The experiment folder and train_runs: a fixed number of listings (one per reader
    # that needs it), not one per trial as before (10 → 15 listings, 100 → 105).
    assert small_lists == large_lists <= 3
    # Files: the state file (twice: Tune's trials, its metric), then per trial its
    # result.json and per failed trial its error.txt.
    assert small_reads == 2 + 10 + 1 and large_reads == 2 + 100 + 10


def test_the_newest_folder_naming_a_trial_is_its_own(tmp_path):
    entries = [
        Entry("train_fn_a1b2c_00001_1_lr=0.1_2026-12-05", True, 10.0),
        Entry("train_fn_a1b2c_00001_1_lr=0.1_2026-12-06", True, 20.0),  # restored: newer
        Entry("train_fn_a1b2c_00002_2_lr=0.2_2026-12-05", True, None),
        Entry("train_fn_a1b2c_00002_2_lr=0.2_2026-12-04", True, None),  # same time: by name
        Entry("train_fn_a1b2c_00003_3_lr=0.3_2026-12-05", False, 30.0),  # a file: not a trial's
        Entry("other_a1b2c_00004", True, 1.0),  # ends with the id
        Entry("x_a1b2c_000045_5", True, 1.0),  # not a1b2c_00004's: a longer id
    ]
    ids = ["a1b2c_00001", "a1b2c_00002", "a1b2c_00003", "a1b2c_00004", "gone"]
    assert match_trial_folders(entries, ids) == {
        "a1b2c_00001": "train_fn_a1b2c_00001_1_lr=0.1_2026-12-06",
        "a1b2c_00002": "train_fn_a1b2c_00002_2_lr=0.2_2026-12-05",
        "a1b2c_00004": "other_a1b2c_00004",
    }


def one_at_a_time(entries: list[Entry], trial_id: str) -> str | None:
    """The rule as it was applied per trial: the reference the one pass must equal."""
    named = [
        e for e in entries
        if e.is_dir and (f"_{trial_id}_" in e.name or e.name.endswith(f"_{trial_id}"))
    ]  # fmt: skip
    return max(named, key=lambda e: (e.mtime or 0.0, e.name)).name if named else None


pieces = st.sampled_from(["a", "b", "ab", "", "1", "a_b", "_"])
names = st.lists(pieces, min_size=1, max_size=6).map("_".join)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    folders=st.lists(
        st.tuples(names, st.booleans(), st.none() | st.sampled_from([1.0, 2.0])), max_size=8
    ),
    ids=st.lists(names, min_size=1, max_size=5, unique=True),
)
def test_one_pass_matches_as_the_rule_one_trial_at_a_time(folders, ids):
    entries = [Entry(name, is_dir, mtime) for name, is_dir, mtime in folders]
    expected = {i: f for i in ids if (f := one_at_a_time(entries, i)) is not None}
    assert match_trial_folders(entries, ids) == expected


def test_an_unreachable_storage_path_says_so_not_that_it_is_empty():
    (paths, (warning,)) = ExperimentFolders(["nosuchfs://bucket/exp"]).find()
    assert paths == []
    assert warning.startswith("--storage nosuchfs://bucket/exp: storage unreachable (")
