"""The recording schedulers (probe.scheduler_probe): Ray's own ASHA, median stopping rule
and PBT decide unchanged; each STOP or PAUSE is filed with its rule, the TrialProbe writes
it as ``scheduler_decision``, the reader validates it, and it survives pickling and a
resume. Driven with Ray's real scheduler classes and stand-in trials (no cluster)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest
from ray.tune.experiment import Trial as TuneTrial
from ray.tune.schedulers import TrialScheduler

from raytop.model import Trial, untrusted
from raytop.model.snapshot import MAX_SCHEDULER_DECISION
from raytop.probe.scheduler_decisions import Decisions, decisions
from raytop.probe.scheduler_probe import RecordingASHA, RecordingMedianStopping
from raytop.probe.trial_probe import TrialProbe
from raytop.wire.tune_schedulers import median_comparison
from tests.trial_table_files import written_rows


def fake_trial(trial_id: str, status: str = "RUNNING") -> SimpleNamespace:
    return SimpleNamespace(
        trial_id=trial_id, status=status, config={"x": 1}, last_result={}, num_failures=0,
        error_file=None,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_decisions():
    decisions.clear()
    yield
    decisions.clear()


def asha(mode: str = "max") -> RecordingASHA:
    scheduler = RecordingASHA(
        explain_metric="score", mode=mode, max_t=8, grace_period=1, reduction_factor=2
    )
    assert scheduler.set_search_properties("score", mode)  # as TuneConfig does
    return scheduler


def result(iteration: int, score: float) -> dict:
    return {"training_iteration": iteration, "score": score}


def test_asha_files_why_it_stopped_a_trial_below_the_rungs_cutoff() -> None:
    scheduler = asha()
    good, bad = fake_trial("good"), fake_trial("bad")
    for trial in (good, bad):
        scheduler.on_trial_add(None, trial)
    assert scheduler.on_trial_result(None, good, result(1, 0.0)) == TrialScheduler.CONTINUE
    assert scheduler.on_trial_result(None, bad, result(1, -9.0)) == TrialScheduler.STOP
    assert decisions.lookup("good") == (False, None)  # continued: nothing to say
    known, line = decisions.lookup("bad")
    assert known
    assert line == (
        "stopped at iteration 1: score -9 below the cutoff 0 of the rung at 1 "
        "(ASHA keeps the top 1/2 at each rung)"
    )


def test_asha_in_min_mode_says_above_with_the_metrics_own_sign() -> None:
    scheduler = asha("min")
    good, bad = fake_trial("good"), fake_trial("bad")
    for trial in (good, bad):
        scheduler.on_trial_add(None, trial)
    scheduler.on_trial_result(None, good, result(1, 0.5))
    assert scheduler.on_trial_result(None, bad, result(1, 2.0)) == TrialScheduler.STOP
    assert decisions.lookup("bad")[1].startswith(
        "stopped at iteration 1: score 2 above the cutoff 0.5 of the rung at 1"
    )


def test_reaching_max_t_is_the_trials_budget_not_an_early_stop() -> None:
    scheduler = asha()
    trial = fake_trial("t")
    scheduler.on_trial_add(None, trial)
    assert scheduler.on_trial_result(None, trial, result(8, 1.0)) == TrialScheduler.STOP
    assert decisions.lookup("t") == (False, None)


def test_the_recording_scheduler_pickles_and_decides_as_ray_does() -> None:
    scheduler = pickle.loads(pickle.dumps(asha()))  # tuner.pkl holds it
    plain = pickle.loads(pickle.dumps(asha()))
    trials = [fake_trial(f"t{i}") for i in range(6)]
    for trial in trials:
        scheduler.on_trial_add(None, trial)
        plain.on_trial_add(None, trial)
    scores = [0.0, -1.0, -9.0, 3.0, -4.0, -0.5]
    ours = [
        scheduler.on_trial_result(None, t, result(1, s))
        for t, s in zip(trials, scores, strict=True)
    ]
    ray = [super(RecordingASHA, plain).on_trial_result(None, t, result(1, s))
           for t, s in zip(trials, scores, strict=True)]  # fmt: skip
    assert ours == ray


def median_trial(trial_id: str) -> TuneTrial:
    """A real Tune Trial: the median rule keys its results by trial object."""
    return TuneTrial("__fake", trial_id=trial_id, stub=True)


def test_median_stopping_files_the_median_it_compared_against() -> None:
    scheduler = RecordingMedianStopping(
        explain_metric="score", grace_period=1, min_samples_required=2
    )
    assert scheduler.set_search_properties("score", "max")
    controller = SimpleNamespace(get_live_trials=lambda: [])
    a, b, c = (median_trial(n) for n in ("a", "b", "c"))
    for trial in (a, b, c):
        scheduler.on_trial_add(controller, trial)
    for step in (1, 2):
        scheduler.on_trial_result(controller, a, result(step, 1.0))
        scheduler.on_trial_result(controller, b, result(step, 3.0))
    assert scheduler.on_trial_result(controller, c, result(1, 0.0)) == TrialScheduler.STOP
    assert median_comparison(scheduler, c, 1) is not None  # on every supported Ray line
    assert decisions.lookup("c")[1] == (
        "stopped at iteration 1: best score 0 worse than the median 2 of 2 other trials' "
        "running means"
    )


def test_the_trial_probe_writes_the_decision_and_the_reader_checks_it(tmp_path) -> None:
    probe = TrialProbe(str(tmp_path), min_interval_s=0.0, metric="score")
    trial = fake_trial("bad")
    decisions.record("bad", "stopped at iteration 1: score -9 below the cutoff 0")
    probe.on_trial_result(0, [trial], trial, result(1, -9.0))
    trial.status = "TERMINATED"
    probe.on_experiment_end([trial])
    (row,) = [untrusted.probe_trial(r, "trials[0]") for r in written_rows(tmp_path)]
    model = Trial(**row)
    assert model.scheduler_decision == "stopped at iteration 1: score -9 below the cutoff 0"
    assert model.stopped_early
    # kept through Tune's callback state: a resumed driver has no scheduler record of it
    state = probe.get_state()
    assert state["scheduler_decisions"] == {"bad": model.scheduler_decision}
    decisions.clear()
    resumed = TrialProbe(str(tmp_path), min_interval_s=0.0, metric="score")
    resumed.set_state(pickle.loads(pickle.dumps(state)))
    resumed.on_experiment_end([trial])
    (row,) = written_rows(tmp_path)
    assert row["scheduler_decision"] == model.scheduler_decision


def test_a_pause_that_no_longer_holds_is_cleared() -> None:
    book = Decisions()
    book.record("t", "paused at iteration 3 to let waiting trials run")
    book.record("t", None)
    assert book.lookup("t") == (True, None)


def test_lines_are_one_line_and_capped() -> None:
    book = Decisions()
    book.record("t", "a\nb " + "x" * 1000)
    line = book.lookup("t")[1]
    assert "\n" not in line and len(line) == MAX_SCHEDULER_DECISION


@pytest.mark.parametrize(
    "value",
    ["x" * (MAX_SCHEDULER_DECISION + 1), "two\nlines", 42, ["a"]],
)
def test_the_reader_refuses_a_bad_decision(value) -> None:
    row = {"trial_id": "t", "status": "TERMINATED", "scheduler_decision": value}
    with pytest.raises(untrusted.Invalid):
        untrusted.probe_trial(row, "trials[0]")


def test_the_reader_accepts_rows_without_a_decision() -> None:
    row = {"trial_id": "t", "status": "TERMINATED"}
    assert untrusted.probe_trial(row, "trials[0]")["scheduler_decision"] is None
    assert not Trial(**untrusted.probe_trial(row, "trials[0]")).stopped_early
