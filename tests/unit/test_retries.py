"""Attempts and retry budgets: the run record's validator, the reader that joins it to the
ledger's pages, the RunProbe's recorder (no Ray: fed states by hand), the findings
(retry_loop, progress_backwards, budget_exhausted) and their exit code."""

from __future__ import annotations

import json

import pytest

from raytop.diagnose import diagnose
from raytop.diagnose.check import RETRY_LOOP, exit_code
from raytop.diagnose.retries import (
    attempt_findings,
    budget_exhausted_findings,
    error_signature,
    progress_backwards_findings,
    retry_loop_findings,
)
from raytop.model import Attempt, Cluster, RetryBudget, Snapshot, TrainRun, untrusted_kv
from raytop.model.untrusted import Invalid
from raytop.probe.run_probe import RunRecorder, error_snippet, scalar_metrics
from raytop.sources.ledger_records import attempts_from_record
from raytop.sources.ledger_source import LedgerReader
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, RUN_PREFIX
from tests.fakes import FakeKv

CONFIG = {"max_failures": 1, "controller_failure_limit": -1, "max_preemption_failures": -1}


def attempt(index: int, status: str = "errored", **extra) -> dict:
    record = {"index": index, "attempt_id": f"a{index}", "status": status,
              "started_at": 10.0 * index, "ended_at": None if status == "running" else
              10.0 * index + 5, "error_class": None, "error": None, "failure_class": None,
              "first_report": None, "restored": None, "reports_taken": None,
              "undeliverable": False}  # fmt: skip
    if status == "errored":
        record.update(error_class="RuntimeError", error="boom", failure_class="worker")
    return {**record, **extra}


def record(*attempts: dict, config=CONFIG) -> dict:
    return {"run_id": "r", "run_name": "exp-t1", "failure_config": config,
            "attempts": list(attempts), "sent_at": 1.0}  # fmt: skip


# -- the validator -------------------------------------------------------------------------


def test_a_good_record_reads_back_and_absent_settings_are_trains_defaults():
    good = record(attempt(1), attempt(2, "finished"))
    assert untrusted_kv.run_attempts(json.loads(json.dumps(good))) == good
    bare = untrusted_kv.run_attempts({**good, "failure_config": {}})
    assert bare["failure_config"] == {
        "max_failures": 0, "controller_failure_limit": -1, "max_preemption_failures": -1
    }  # fmt: skip


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"attempts": {"1": {}}}, "attempts: expected a list"),
        ({"attempts": [attempt(1, status="exploded")]}, "attempts[0].status"),
        ({"attempts": [attempt(1, failure_class="cosmic")]}, "attempts[0].failure_class"),
        ({"attempts": [attempt(1, error="x" * 301)]}, "attempts[0].error: 301 characters"),
        ({"attempts": [{**attempt(1), "index": 0}]}, "attempts[0].index: 0 is below 1"),
        ({"attempts": [attempt(1, started_at="soon")]}, "attempts[0].started_at"),
        ({"attempts": [attempt(1, first_report={"epoch": "one"})]}, "first_report.epoch"),
        ({"attempts": [attempt(1, restored={str(i): 1 for i in range(17)})]}, "over the cap"),
        ({"attempts": [attempt(i + 1) for i in range(65)]}, "over the cap of 64"),
        ({"failure_config": {"max_failures": -2}}, "max_failures: -2 is below -1"),
        ({"failure_config": {"max_failures": True}}, "expected an integer"),
        ({"run_id": None}, "run_id: expected a string"),
    ],
)
def test_bad_shapes_are_refused_naming_where(bad, where):
    with pytest.raises(Invalid) as exc:
        untrusted_kv.run_attempts({**record(attempt(1)), **bad})
    assert where in str(exc.value)


def test_a_bad_run_record_is_a_warning_naming_its_key_and_the_last_good_copy_stays():
    page = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a2", "world_size": 1,
            "first_seen_at": 20.0, "version": 1, "ranks": {}}  # fmt: skip
    kv = FakeKv({
        INDEX_KEY: json.dumps({"started_at": 1.0, "published_at": 100.0,
                               "pages": {"r.a2": 1}, "runs": {"r": 1}}).encode(),
        PAGE_PREFIX + "r.a2": json.dumps(page).encode(),
        RUN_PREFIX + "r": json.dumps(record(attempt(1), attempt(2, "running"))).encode(),
    })  # fmt: skip
    reader = LedgerReader(kv)
    (run,), status = reader.read(now=100.0)
    assert [a.index for a in run.attempts] == [1, 2] and not status.warnings
    assert run.attempt_index == 2  # the RunProbe's number for the page's worker group
    assert run.attempts[1].duration_s is None  # running: its duration is said, not kept
    assert run.attempts[1].lasted(status.known_at(100.0)) == 80.0  # to the ledger's publish
    assert run.retry_budget["worker"] == RetryBudget("max_failures", 1, 1, 0)
    kv.data[RUN_PREFIX + "r"] = b'{"run_id": 3}'
    kv.data[INDEX_KEY] = kv.data[INDEX_KEY].replace(b'"runs": {"r": 1}', b'"runs": {"r": 2}')
    (run,), status = reader.read(now=101.0)
    assert [a.index for a in run.attempts] == [1, 2]
    assert status.warnings and status.warnings[0].startswith(RUN_PREFIX + "r")


def test_a_run_with_a_record_and_no_page_still_shows():
    kv = FakeKv({
        INDEX_KEY: json.dumps({"started_at": 1.0, "published_at": 100.0, "pages": {},
                               "runs": {"r": 1}}).encode(),
        RUN_PREFIX + "r": json.dumps(record(attempt(1))).encode(),
    })  # fmt: skip
    (run,), _ = LedgerReader(kv).read(now=100.0)
    assert (run.run_name, run.attempt_index, len(run.attempts)) == ("exp-t1", 1, 1)


def test_budgets_count_only_retried_failures_of_their_class():
    rec = untrusted_kv.run_attempts(record(
        attempt(1), attempt(2), attempt(3, failure_class="preemption"),
        attempt(4, "errored", failure_class=None),  # not retryable
    ))  # fmt: skip
    _, budget = attempts_from_record(rec)
    assert budget["worker"] == RetryBudget("max_failures", 1, 1, 0)  # the 2nd one raised
    assert budget["preemption"] == RetryBudget("max_preemption_failures", -1, 1, -1)
    assert budget["controller"] == RetryBudget("controller_failure_limit", -1, 0, -1)


# -- the recorder (the RunProbe's state machine) -------------------------------------------


def test_the_recorder_opens_and_closes_attempts_on_controller_states(monkeypatch):
    from raytop.probe import run_probe
    from raytop.wire.train_hooks import FailureDetails

    monkeypatch.setattr(
        run_probe, "failure_details",
        lambda error: FailureDetails("worker", "RuntimeError", f"Traceback…\n{error}\n"),
    )  # fmt: skip
    rec = RunRecorder("r", "exp-t1", CONFIG)
    assert not rec.state("INITIALIZING", None, 1.0)
    assert rec.state("SCHEDULING", None, 2.0) and rec.started("g1")
    assert not rec.state("RUNNING", None, 3.0)
    assert rec.report([{"epoch": 0, "name": "x", "ok": True}], checkpoint=True)
    assert rec.report([{"epoch": 1}], checkpoint=True)  # counted; only the first is kept
    assert rec.state("RESTARTING", RuntimeError("boom 1"), 4.0)
    assert rec.state("SCHEDULING", None, 5.0) and rec.started("g2")
    rec.report([{"epoch": 0}], checkpoint=False)
    assert rec.state("FINISHED", None, 9.0)
    first, second = rec.message()["attempts"]
    assert first == {"index": 1, "attempt_id": "g1", "status": "errored", "started_at": 2.0,
                     "ended_at": 4.0, "error_class": "RuntimeError", "error": "boom 1",
                     "failure_class": "worker", "first_report": {"epoch": 0.0},
                     "restored": None, "reports_taken": 2, "undeliverable": False}  # fmt: skip
    assert (second["status"], second["restored"], second["first_report"]) == (
        "finished",
        {"epoch": 1.0},
        {"epoch": 0.0},
    )
    assert untrusted_kv.run_attempts(json.loads(json.dumps(rec.message())))


def test_snippets_and_metrics_are_bounded():
    assert error_snippet("Traceback:\n  File x\nValueError: " + "y" * 500 + "\n\n") == (
        "ValueError: " + "y" * 288
    )
    assert error_snippet("") == ""
    metrics = scalar_metrics({f"k{i}": i for i in range(40)} | {"nan": float("nan")})
    assert len(metrics) == 16
    assert scalar_metrics({"x" * 100: 1})["x" * 64] == 1.0
    assert scalar_metrics(None) == {}


# -- the findings --------------------------------------------------------------------------


def run_of(*attempts: dict, config=CONFIG) -> TrainRun:
    history, budget = attempts_from_record(
        untrusted_kv.run_attempts(record(*attempts, config=config))
    )
    return TrainRun("r", "exp-t1", "a", 2, attempts=history, retry_budget=budget)


UNLIMITED = {**CONFIG, "max_failures": -1}


def test_the_same_error_three_times_with_retries_left_is_a_loop():
    run = run_of(
        attempt(1, error="boom at 0x7f3a9c2e10 in pid 1234"),
        attempt(2, error="boom at 0x7f3b00aa20 in pid 2345"),
        attempt(3, error="boom at 0x7f3b11bb30 in pid 3456"),
        attempt(4, "running"),
        config=UNLIMITED,
    )
    (loop,) = retry_loop_findings(run)
    assert loop.kind == "retry_loop" and loop.severity == "error"
    assert loop.message == (
        "run exp-t1 has failed 3 times in a row with the same error: RuntimeError: boom at "
        "0x7f3b11bb30 in pid 3456; max_failures=-1 will retry forever"
    )
    assert loop.evidence["attempts"] == [1, 2, 3]
    assert exit_code([loop]) == RETRY_LOOP == 15


def test_no_loop_when_the_errors_differ_are_too_few_or_the_budget_is_spent():
    assert not retry_loop_findings(run_of(attempt(1), attempt(2), config=UNLIMITED))
    assert not retry_loop_findings(run_of(
        attempt(1, error="boom"), attempt(2, error="bang"), attempt(3, error="boom"),
        config=UNLIMITED,
    ))  # fmt: skip
    assert not retry_loop_findings(run_of(
        attempt(1), attempt(2, "finished"), attempt(3), attempt(4), config=UNLIMITED
    ))  # fmt: skip
    # max_failures=2: three failures used both retries and the third ended the run
    assert not retry_loop_findings(run_of(attempt(1), attempt(2), attempt(3),
                                          config={**CONFIG, "max_failures": 2}))  # fmt: skip
    (limited,) = retry_loop_findings(run_of(attempt(1), attempt(2), attempt(3),
                                            config={**CONFIG, "max_failures": 5}))  # fmt: skip
    assert limited.message.endswith("max_failures=5 allows 2 more retries")


def test_signatures_drop_ids_addresses_and_numbers_only():
    one = Attempt(1, "errored", 0.0, error_class="OSError",
                  error="worker 3f2a9b1c8d7e6f50 at 10.0.0.7:6379 failed after 12.5s")  # fmt: skip
    two = Attempt(2, "errored", 0.0, error_class="OSError",
                  error="worker 9a8b7c6d5e4f3a21 at 10.0.0.9:6380 failed after 3s")  # fmt: skip
    assert error_signature(one) == error_signature(two)
    other = Attempt(3, "errored", 0.0, error_class="ValueError", error=two.error)
    assert error_signature(other) != error_signature(two)
    assert error_signature(Attempt(4, "finished", 0.0)) is None


def test_a_first_report_below_the_restored_checkpoint_goes_backwards():
    run = run_of(
        attempt(1, first_report={"epoch": 0.0}),
        attempt(2, "running", restored={"epoch": 3.0, "loss": 0.1},
                first_report={"epoch": 0.0, "loss": 0.9}),
    )  # fmt: skip
    (back,) = progress_backwards_findings(run)
    assert back.severity == "warning" and back.evidence["attempt"] == 2
    assert "restored a checkpoint at epoch 3 but first reported epoch 0" in back.message
    resumed = run_of(attempt(1), attempt(2, "running", restored={"epoch": 3.0},
                                         first_report={"epoch": 4.0}))  # fmt: skip
    assert not progress_backwards_findings(resumed)
    redone = run_of(attempt(1), attempt(2, "running", restored={"epoch": 3.0},
                                        first_report={"epoch": 3.0}))  # fmt: skip
    assert not progress_backwards_findings(redone)


def test_a_running_run_with_no_retries_left_warns_once_per_class():
    (spent,) = budget_exhausted_findings(run_of(attempt(1), attempt(2, "running")))
    assert spent.kind == "budget_exhausted" and spent.severity == "warning"
    assert "used all 1 worker retry (max_failures=1)" in spent.message
    assert exit_code([spent]) == 0
    assert not budget_exhausted_findings(run_of(attempt(1), attempt(2, "finished")))
    # max_failures=0 (Train's default) is no exhausted budget until something failed
    assert not budget_exhausted_findings(run_of(attempt(1, "running"),
                                                config={**CONFIG, "max_failures": 0}))  # fmt: skip


def test_a_run_whose_trial_ended_has_no_loop_or_budget_warning_but_keeps_backwards():
    run = run_of(attempt(1), attempt(2, "running", restored={"epoch": 1.0},
                                     first_report={"epoch": 0.0}))  # fmt: skip
    assert {f.kind for f in attempt_findings(run, ended=False)} == {
        "budget_exhausted", "progress_backwards"
    }  # fmt: skip
    assert {f.kind for f in attempt_findings(run, ended=True)} == {"progress_backwards"}
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("x", True), runs=(run,))
    assert {f.kind for f in diagnose(snapshot)} >= {"budget_exhausted", "progress_backwards"}


def test_attempts_and_budgets_round_trip_through_json():
    run = run_of(attempt(1), attempt(2, "running", first_report={"epoch": 1.0}))
    snapshot = Snapshot(taken_at=1.0, cluster=Cluster("x", True), runs=(run,))
    data = json.loads(json.dumps(snapshot.to_json()))
    assert data["runs"][0]["retry_budget"]["worker"] == {
        "setting": "max_failures", "limit": 1, "used": 1, "left": 0
    }  # fmt: skip
    assert data["runs"][0]["attempts"][0]["error"] == "boom"
    assert Snapshot.from_json(data).runs[0] == run
