"""What the overview says at a glance, as pure logic: the best trial by the metric and
its mode, "N of M trials", the params every trial shares, and the sweep's total read
from driver.json as untrusted input (a bad one is a warning naming the field; the last
good total stays). And the plain-text face and the JSON saying them."""

from __future__ import annotations

import math
import socket

import pytest

from raytop.faces.text import progress_line, status_text
from raytop.jsonfile import write_json_atomic
from raytop.model import Cluster, Experiment, ExperimentStatus, Snapshot, Trial
from raytop.model.format import fmt_constants, fmt_params, fmt_trials, varying_keys
from raytop.model.snapshot import BestTrial, best_trial
from raytop.pipeline.kept_trials import KeptTrials
from raytop.sources.tune_dir import ExperimentReader


def trial(trial_id: str, loss: object = None, **config: object) -> Trial:
    metrics = {} if loss is None else {"loss": loss}
    return Trial(trial_id, "RUNNING", config=dict(config), metrics=metrics)


TRIALS = (trial("a", 0.5), trial("b", 0.2), trial("c", 0.9), trial("d"))


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("min", BestTrial("b", "loss", 0.2)), ("max", BestTrial("c", "loss", 0.9))],
)
def test_the_best_trial_by_the_mode(mode, expected) -> None:
    assert best_trial(TRIALS, "loss", mode) == expected


def test_no_best_trial_without_a_metric_a_mode_or_a_report() -> None:
    assert best_trial(TRIALS, None, "min") is None
    assert best_trial(TRIALS, "loss", None) is None
    assert best_trial(TRIALS, "loss", "lowest") is None  # not Tune's: not guessed
    assert best_trial((trial("d"),), "loss", "min") is None
    assert best_trial((), "loss", "min") is None


def test_nan_infinities_booleans_and_text_are_not_scores() -> None:
    odd = (trial("nan", math.nan), trial("inf", -math.inf), trial("yes", True),
           trial("text", "0.1"), trial("ok", 3))  # fmt: skip
    assert best_trial(odd, "loss", "min") == BestTrial("ok", "loss", 3)
    assert best_trial(odd[:4], "loss", "max") is None


def test_a_tie_goes_to_the_first_trial() -> None:
    tied = (trial("x", 0.2), trial("y", 0.2))
    assert best_trial(tied, "loss", "min").trial_id == "x"
    assert best_trial(tied, "loss", "max").trial_id == "x"


def test_the_pipeline_derives_it_once_and_keeps_an_unchanged_experiment() -> None:
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", "min", TRIALS)
    derived = KeptTrials().with_best_trial(exp)
    assert derived.best_trial == BestTrial("b", "loss", 0.2)
    assert KeptTrials().with_best_trial(derived) is derived


def test_n_of_m_trials() -> None:
    assert fmt_trials(2, 4) == "2 of 4 trials"
    assert fmt_trials(1, 1) == "1 of 1 trial"
    assert fmt_trials(2, None) == "2 trials"
    assert fmt_trials(5, 4) == "5 trials"  # more than the total: the total is not shown


def test_constants_are_the_params_every_trial_shares() -> None:
    configs = [{"lr": 0.1, "seed": 7, "bs": 32}, {"lr": 0.2, "seed": 7, "bs": 32}]
    swept = varying_keys(configs)
    assert fmt_constants(configs, swept) == "bs=32 · seed=7"
    assert fmt_params(configs[0], swept) == "lr=0.1"
    # A key some trials lack varies: it stays in the table.
    assert (
        fmt_constants([{"a": 1}, {"a": 1, "b": 2}], varying_keys([{"a": 1}, {"a": 1, "b": 2}]))
        == "a=1"
    )
    assert fmt_constants([], frozenset()) == ""


def launched(tmp_path, **more: object):
    rdir = tmp_path / "exp" / ".raytop"
    record = {"pid": 2**22 + 1, "host": socket.gethostname(), "experiment_name": "exp",
              "experiment_path": str(tmp_path / "exp"), "metric": "loss", "mode": "min",
              **more}  # fmt: skip
    write_json_atomic(rdir / "driver.json", record)
    write_json_atomic(rdir / "trials.json", {"trials": []})
    return rdir


def test_the_total_from_driver_json(tmp_path) -> None:
    launched(tmp_path, trials_total=8)
    assert ExperimentReader(str(tmp_path / "exp")).read().trials_total == 8
    launched(tmp_path)  # a launch by an older raytop: not known
    assert ExperimentReader(str(tmp_path / "exp")).read().trials_total is None


@pytest.mark.parametrize("hostile", ["8", 0, -3, 10**12, 2.5, True, [8], {"n": 8}], ids=repr)
def test_a_hostile_total_is_a_warning_naming_it_and_the_last_good_stays(tmp_path, hostile):
    launched(tmp_path, trials_total=6)
    reader = ExperimentReader(str(tmp_path / "exp"))
    assert reader.read().trials_total == 6
    launched(tmp_path, trials_total=hostile, padding="x" * 7)  # another size: re-read
    exp = reader.read()
    assert exp.trials_total == 6
    assert exp.driver_problem is None  # the rest of the record still counts
    assert [w for w in exp.warnings if "driver.json.trials_total" in w], exp.warnings
    fresh = ExperimentReader(str(tmp_path / "exp")).read()  # no good total seen yet
    assert fresh.trials_total is None


def snapshot_with(exp: Experiment) -> Snapshot:
    return Snapshot(taken_at=0.0, cluster=Cluster(address="x", connected=True),
                    experiments=(exp,))  # fmt: skip


def test_status_text_says_n_of_m_the_constants_and_the_best() -> None:
    trials = (trial("t1", 0.5, lr=0.1, seed=7), trial("t2", 0.2, lr=0.2, seed=7))
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", "min", trials, trials_total=4)
    exp = KeptTrials().with_best_trial(exp)
    text = status_text(snapshot_with(exp)).splitlines()
    assert "  2 of 4 trials" in text
    assert "  constants: seed=7" in text
    assert "  best: t2 loss=0.2" in text
    assert [line for line in text if line.lstrip().startswith("t1")][0].endswith("lr=0.1")
    assert "best loss=0.2 (t2)" in progress_line(snapshot_with(exp))


def test_status_json_has_the_total_and_the_best_trial() -> None:
    trials = (trial("t1", 0.5), trial("t2", math.nan))
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", "max", trials, trials_total=3)
    exp = KeptTrials().with_best_trial(exp)
    data = snapshot_with(exp).to_json()
    (shown,) = data["experiments"]
    assert shown["trials_total"] == 3
    assert shown["best_trial"] == {"trial_id": "t1", "metric": "loss", "value": 0.5}
    back = Snapshot.from_json(data).experiments[0]
    assert back.best_trial == exp.best_trial and back.trials_total == 3
    none = snapshot_with(Experiment("e", "/e", ExperimentStatus.RUNNING)).to_json()
    assert none["experiments"][0]["best_trial"] is None
    assert none["experiments"][0]["trials_total"] is None
