"""The faces of attempts and retry budgets: the trials' ``fail`` column and the Run
screen's title and attempts list (rendered whole in the retries snapshots)."""

from __future__ import annotations

from raytop.model import Attempt, RetryBudget, TrainRun
from raytop.tui.screens.run import describe_attempts, describe_budget, describe_run
from raytop.tui.widgets.trial_table import fmt_failures


def test_the_fail_column_reads_used_over_max():
    assert fmt_failures(1, 2) == "1/2"
    assert fmt_failures(3, -1) == "3/∞" and fmt_failures(3, -1, "inf") == "3/inf"
    assert fmt_failures(1, None) == "1"  # an experiment raytop did not launch


def run_with(*attempts: Attempt, budget: dict[str, RetryBudget] | None = None) -> TrainRun:
    return TrainRun("r", "exp-t1", "a", 2, attempt_index=len(attempts), attempts=attempts,
                    retry_budget=budget or {})  # fmt: skip


def test_the_title_names_the_worker_budget_and_any_other_that_was_used():
    budget = {
        "worker": RetryBudget("max_failures", -1, 4, -1),
        "controller": RetryBudget("controller_failure_limit", -1, 0, -1),
        "preemption": RetryBudget("max_preemption_failures", -1, 1, -1),
    }
    run = run_with(Attempt(1, "running", 0.0), budget=budget)
    assert describe_budget(run) == "worker retries 4/∞ used · preemption retries 1/∞ used"
    assert "attempt 1 · world size 2 · worker retries 4/∞ used" in describe_run(run).plain
    assert describe_budget(run_with()) == ""  # no RunProbe: nothing claimed


def test_the_attempts_list_shows_the_newest_three_and_only_when_there_is_a_story():
    assert describe_attempts(run_with(Attempt(1, "running", 0.0)), 5.0) is None
    attempts = [
        Attempt(i, "errored", 0.0, duration_s=12.0, error_class="RuntimeError", error="boom")
        for i in range(1, 5)
    ]
    text = describe_attempts(run_with(*attempts, Attempt(5, "running", 0.0)), 3.0)
    lines = text.plain.splitlines()
    assert lines[0] == "(2 earlier attempts)"
    assert lines[1].startswith("#3 errored") and lines[1].endswith("RuntimeError: boom")
    assert lines[-1].startswith("#5 running")
