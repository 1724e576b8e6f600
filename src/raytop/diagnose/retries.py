"""Findings about a Train run's attempts and retry budgets (from its RunProbe).

- ``retry_loop`` (error): the same error (class and message with numbers, addresses and
  ids taken out) ended at least ``LOOP_AFTER`` consecutive attempts while Train still
  has retries of that class left, or unlimited ones: it will go on failing.
- ``progress_backwards`` (warning): an attempt's first report has a lower epoch / step /
  iteration than the checkpoint it restored from: the train loop ignored its checkpoint
  (ray-project/ray#46814) and redoes (or overwrites) finished work.
- ``report_undeliverable`` (error): an attempt failed because the controller could not
  load what the ranks sent (a metric it cannot deserialize): they had all reported.
- ``budget_exhausted`` (warning): a run still running has used every retry of a class:
  the next failure of that class ends it.

Pure: over ``model`` objects only.
"""

from __future__ import annotations

import re

from raytop.diagnose.refs import of_run
from raytop.model import Attempt, Finding, Severity, TrainRun

LOOP_AFTER = 3
# Report keys that count progress; a restart should never start below its checkpoint's.
PROGRESS_KEYS = ("epoch", "step", "global_step", "iteration", "training_iteration")

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX_ID = re.compile(r"\b(?:0x)?[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b|\b0x[0-9a-f]+\b", re.I)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def error_signature(attempt: Attempt) -> str | None:
    """The class and message of an attempt's error with what changes between attempts of
    the same failure (ids, addresses, numbers, pids, times) taken out."""
    if attempt.error_class is None and attempt.error is None:
        return None
    message = attempt.error or ""
    message = _UUID.sub("<id>", message)
    message = _HEX_ID.sub(lambda m: "<id>" if len(m.group()) >= 6 else m.group(), message)
    message = _NUMBER.sub("<n>", message)
    return f"{attempt.error_class or '?'}: {' '.join(message.split())}"


def _loop(run: TrainRun) -> list[Attempt]:
    """The trailing streak of errored attempts with one signature (a running attempt
    after it is the next retry, already under way)."""
    attempts = list(run.attempts)
    if attempts and attempts[-1].status == "running":
        attempts.pop()
    streak: list[Attempt] = []
    for attempt in reversed(attempts):
        if attempt.status != "errored":
            break
        signature = error_signature(attempt)
        if signature is None or (streak and error_signature(streak[0]) != signature):
            break
        streak.append(attempt)
    return streak[::-1]


def retry_loop_findings(run: TrainRun) -> list[Finding]:
    streak = _loop(run)
    if len(streak) < LOOP_AFTER:
        return []
    budget = run.retry_budget.get(streak[-1].failure_class or "")
    if budget is None or not (budget.unlimited or budget.left > 0):
        return []
    last = streak[-1]
    if budget.unlimited:
        outlook = f"{budget.setting}=-1 will retry forever"
    else:
        outlook = f"{budget.setting}={budget.limit} allows {budget.left} more retr" + (
            "y" if budget.left == 1 else "ies"
        )
    error = f"{last.error_class or '?'}: {last.error or ''}".rstrip(": ")
    return [
        Finding(
            kind="retry_loop",
            severity=Severity.ERROR,
            subject=f"run {run.run_name}",
            message=(
                f"run {run.run_name} has failed {len(streak)} times in a row with the same "
                f"error: {error}; {outlook}"
            ),
            evidence={
                "run_id": run.run_id,
                "attempts": [a.index for a in streak],
                "signature": error_signature(last),
                "failure_class": last.failure_class,
                "limit": budget.limit,
                "left": budget.left,
            },
            **of_run(run),
        )
    ]


def _backwards(attempt: Attempt) -> tuple[str, float, float] | None:
    if not attempt.first_report or not attempt.restored:
        return None
    for key in PROGRESS_KEYS:
        first, restored = attempt.first_report.get(key), attempt.restored.get(key)
        if first is not None and restored is not None and first < restored:
            return key, first, restored
    return None


def progress_backwards_findings(run: TrainRun) -> list[Finding]:
    """The newest attempt that went backwards (one finding per run)."""
    for attempt in reversed(run.attempts):
        found = _backwards(attempt)
        if found is None:
            continue
        key, first, restored = found
        return [
            Finding(
                kind="progress_backwards",
                severity=Severity.WARNING,
                subject=f"run {run.run_name}",
                message=(
                    f"attempt {attempt.index} of run {run.run_name} restored a checkpoint at "
                    f"{key} {restored:g} but first reported {key} {first:g}: the train loop "
                    "ignores ray.train.get_checkpoint() and redoes finished work"
                ),
                evidence={
                    "run_id": run.run_id,
                    "attempt": attempt.index,
                    "metric": key,
                    "restored": restored,
                    "first_report": first,
                    "checkpoint": attempt.restored_from,
                },
                **of_run(run),
            )
        ]
    return []


def undeliverable_findings(run: TrainRun) -> list[Finding]:
    """The newest attempt that failed because the controller could not load what a rank
    sent it (Train's health check got Ray's deserialization error): every rank had
    reported, the report never arrived."""
    for attempt in reversed(run.attempts):
        if not attempt.undeliverable:
            continue
        taken = attempt.reports_taken
        after = f" after taking {taken} report(s)" if taken is not None else ""
        return [Finding(
            kind="report_undeliverable",
            severity=Severity.ERROR,
            subject=f"run {run.run_name}",
            message=(
                f"attempt {attempt.index} of run {run.run_name} failed: the Train controller "
                f"could not load what the ranks sent it{after} ({attempt.error_class}: "
                f"{attempt.error}): a reported metric (or the train function's return "
                "value) that does not deserialize on the controller; report plain numbers"
            ),
            evidence={"run_id": run.run_id, "attempt": attempt.index,
                      "reports_taken": taken, "error": attempt.error},
            **of_run(run),
        )]  # fmt: skip
    return []


def budget_exhausted_findings(run: TrainRun) -> list[Finding]:
    if not run.attempts or run.attempts[-1].status != "running":
        return []
    findings = []
    for failure_class, budget in run.retry_budget.items():
        if budget.unlimited or budget.left > 0 or budget.used == 0:
            continue
        findings.append(
            Finding(
                kind="budget_exhausted",
                severity=Severity.WARNING,
                subject=f"run {run.run_name}",
                message=(
                    f"run {run.run_name} has used all {budget.limit} {failure_class} "
                    f"retr{'y' if budget.limit == 1 else 'ies'} ({budget.setting}="
                    f"{budget.limit}); the next {failure_class} failure ends it"
                ),
                evidence={
                    "run_id": run.run_id,
                    "failure_class": failure_class,
                    "limit": budget.limit,
                    "used": budget.used,
                },
                **of_run(run),
            )
        )
    return findings


def attempt_findings(run: TrainRun, ended: bool) -> list[Finding]:
    """Every finding about a run's attempts; ``ended``: its trial is over (a budget can
    no longer run out then)."""
    findings = progress_backwards_findings(run) + undeliverable_findings(run)
    if not ended:
        findings += retry_loop_findings(run) + budget_exhausted_findings(run)
    return findings
