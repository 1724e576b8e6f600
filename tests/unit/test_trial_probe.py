"""TrialProbe's rows: the metric's history and the expected iterations (no Ray cluster)."""

from __future__ import annotations

import json
import math
import pickle
from types import SimpleNamespace

from raytop.model import Trial, untrusted
from raytop.model.progress import MAX_METRIC_HISTORY
from raytop.probe.trial_probe import TrialProbe, trial_row
from tests.trial_table_files import written_rows


def fake_trial(trial_id: str = "t1", status: str = "RUNNING", **config) -> SimpleNamespace:
    return SimpleNamespace(
        trial_id=trial_id, status=status, config=config, last_result={}, num_failures=0,
        error_file=None,
    )  # fmt: skip


def test_trial_row_carries_the_history_and_the_expected_iterations() -> None:
    trial = fake_trial(epochs=5, lr=0.1)
    row = trial_row(trial, {"loss": 0.5, "training_iteration": 2}, [0.9, 0.5])
    assert row["metric_history"] == [0.9, 0.5]
    assert row["max_iterations"] == 5  # the config's epochs
    assert trial_row(trial, {}, (), stop_limit=3)["max_iterations"] == 3  # the stopper's
    assert trial_row(fake_trial(lr=0.1), {})["max_iterations"] is None
    assert trial_row(fake_trial(), {})["metric_history"] == []
    # what the probe writes is what the reader accepts
    assert (
        Trial(**untrusted.probe_trial(json.loads(json.dumps(row)), "trials[0]")).max_iterations == 5
    )


def test_the_probe_keeps_the_metrics_finite_values_bounded(tmp_path) -> None:
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0, metric="loss", stop_limit=80)
    trial = fake_trial()
    results = [{"loss": 1.0 / (i + 1), "training_iteration": i + 1} for i in range(70)]
    results[3]["loss"] = math.nan  # not finite: skipped
    results[4]["loss"] = "high"  # not a number: skipped
    results[5]["loss"] = True  # a bool is not a value of the metric
    del results[6]["loss"]  # a result without the metric
    for result in results:
        probe.on_trial_result(0, [trial], trial, result)
    probe.on_experiment_end([trial])
    (row,) = written_rows(tmp_path)
    kept = [1.0 / (i + 1) for i in range(70) if i not in (3, 4, 5, 6)]
    assert row["metric_history"] == kept[-MAX_METRIC_HISTORY:]
    assert len(row["metric_history"]) == MAX_METRIC_HISTORY
    assert row["max_iterations"] == 80 and row["iterations"] == 70


def test_without_a_metric_the_history_stays_empty(tmp_path) -> None:
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0)
    trial = fake_trial(num_epochs=4)
    probe.on_trial_result(0, [trial], trial, {"loss": 1.0, "training_iteration": 1})
    (row,) = written_rows(tmp_path)
    assert row["metric_history"] == [] and row["max_iterations"] == 4


def test_the_histories_survive_pickling_and_tunes_callback_state(tmp_path) -> None:
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0, metric="loss")
    trial = fake_trial()
    for loss in (3.0, 2.0):
        probe.on_trial_result(0, [trial], trial, {"loss": loss})
    copy = pickle.loads(pickle.dumps(probe))  # tuner.pkl
    assert copy.get_state() == {"metric_history": {"t1": [3.0, 2.0]}}
    fresh = TrialProbe(str(tmp_path), metric="loss")
    assert fresh.get_state() is None  # nothing to save yet
    fresh.set_state(probe.get_state())  # Tuner.restore
    fresh.on_trial_result(0, [trial], trial, {"loss": 1.0})
    assert fresh.get_state() == {"metric_history": {"t1": [3.0, 2.0, 1.0]}}
    fresh.set_state({"metric_history": "not a table"})  # never raises into Tune
    assert fresh.get_state() is None


def test_a_probe_pickled_by_an_older_raytop_still_works(tmp_path) -> None:
    """A tuner.pkl from before the histories: no _metric, _stop_limit, _histories."""
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0, metric="loss")
    for name in ("_metric", "_stop_limit", "_histories"):
        del probe.__dict__[name]
    trial = fake_trial(epochs=3)
    probe.on_trial_result(0, [trial], trial, {"loss": 1.0, "training_iteration": 1})
    (row,) = written_rows(tmp_path)
    assert row["metric_history"] == [] and row["max_iterations"] == 3
