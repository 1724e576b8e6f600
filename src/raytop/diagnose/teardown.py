"""Is everything a resume needs on durable storage? (``raytop check --teardown``)

What a user asks before deleting a RayJob or a cluster: the Tune driver has stopped (it
syncs its experiment state to storage only every 10 s or more, RAY_NOTES f), every Train
run's latest checkpoint is committed and present, and no checkpoint is still uploading.

Each problem is a ``teardown_unsafe`` finding whose ``evidence["reason"]`` says which check
failed, so a face reads the verdict from data and never from the wording of the line.
"""

from __future__ import annotations

from typing import Any

from raytop.model import Finding, Severity
from raytop.model.teardown import ExperimentFacts

KIND = "teardown_unsafe"

# evidence["reason"] of a teardown finding: which check failed.
DRIVER_RUNNING = "driver_running"
DRIVER_UNPROVEN = "driver_unproven"  # a pid raytop cannot prove has stopped
DRIVER_RECORD_INVALID = "driver_record_invalid"
STATE_MISSING = "state_missing"
STATE_UNREADABLE = "state_unreadable"
NO_TRIALS = "no_trials"
SNAPSHOT_UNUSABLE = "snapshot_unusable"
CHECKPOINT_MISSING = "checkpoint_missing"
UNCOMMITTED = "checkpoint_uncommitted"
SNAPSHOT_UNREADABLE = "snapshot_unreadable"
UNLISTED = "registry_unreadable"  # experiments left out of an unreadable list


def _unsafe(subject: str, message: str, reason: str, **evidence: Any) -> Finding:
    return Finding(KIND, Severity.ERROR, subject, message, {"reason": reason, **evidence})


def teardown_findings(facts: ExperimentFacts) -> list[Finding]:
    """One finding per thing that is not yet durable; empty when teardown is safe.

    Safe only on positive evidence: Tune's experiment state read as valid and listing the
    trials, every torch trial's snapshot parsed and its latest checkpoint present, nothing
    uncommitted, the driver stopped."""
    name = facts.name
    found = []
    if facts.driver_alive:
        found.append(_unsafe(name, (
            f"{name}: the Tune driver is running; its state reaches storage only every "
            "10 s or more: stop it first (`raytop stop`), it saves and syncs on the way out"
        ), DRIVER_RUNNING))  # fmt: skip
    elif facts.driver_alive is None and facts.driver_pid is not None:
        found.append(_unsafe(name, (
            f"{name}: cannot tell whether its Tune driver (pid {facts.driver_pid}) has "
            "stopped (another host, or a process raytop cannot prove is its driver): "
            "make sure it has exited first"
        ), DRIVER_UNPROVEN, pid=facts.driver_pid))  # fmt: skip
    elif facts.driver_alive is None and facts.driver_problem is not None:
        found.append(_unsafe(
            name, f"{name}: {facts.driver_problem}: make sure it has exited first",
            DRIVER_RECORD_INVALID, problem=facts.driver_problem,
        ))  # fmt: skip
    if facts.state_read == "missing" or (facts.state_read == "ok" and not facts.state_on_storage):
        found.append(_unsafe(
            name, f"{name}: no experiment_state file on storage: not resumable", STATE_MISSING
        ))  # fmt: skip
    elif facts.state_read != "ok":
        why = facts.state_reason or "the experiment state could not be read"
        found.append(_unsafe(
            name, f"{name}: experiment state {facts.state_read}: {why}: not resumable",
            STATE_UNREADABLE, state_read=facts.state_read,
        ))  # fmt: skip
    elif facts.trials == 0:
        found.append(_unsafe(
            name, f"{name}: the experiment state lists no trials: nothing to resume", NO_TRIALS
        ))  # fmt: skip
    for run in facts.runs:
        where, trial = f"{name} trial {run.trial_id}", {"trial_id": run.trial_id}
        if run.snapshot_problem is not None:
            found.append(_unsafe(
                name, f"{where}: checkpoint snapshot unusable: {run.snapshot_problem}",
                SNAPSHOT_UNUSABLE, **trial,
            ))  # fmt: skip
            continue
        if run.latest is not None and not run.latest_present:
            found.append(_unsafe(
                name, f"{where}: its latest checkpoint {run.latest} is missing on storage",
                CHECKPOINT_MISSING, checkpoint=run.latest, **trial,
            ))  # fmt: skip
        if run.uncommitted:
            found.append(_unsafe(name, (
                f"{where}: {len(run.uncommitted)} checkpoint(s) not committed yet "
                f"({', '.join(run.uncommitted[:3])}): an upload is in flight or was cut off"
            ), UNCOMMITTED, checkpoints=list(run.uncommitted), **trial))  # fmt: skip
    flagged = {r.trial_id for r in facts.runs if r.snapshot_problem is not None}
    found += [
        _unsafe(
            name,
            f"{name}: {run}: checkpoint snapshot unreadable",
            SNAPSHOT_UNREADABLE,
            trial_id=run,
        )  # fmt: skip
        for run in facts.stale_runs
        if run not in flagged
    ]
    return found


def teardown_problems(facts: ExperimentFacts) -> list[str]:
    """The findings' lines (what ``check --teardown`` prints after ``teardown_unsafe``)."""
    return [f.message for f in teardown_findings(facts)]


def unlisted_findings(registry_warnings: list[str]) -> list[Finding]:
    """An experiment left out of an unreadable list of launched experiments is one nobody
    checked: never "safe". One finding per problem of that list (naming its file)."""
    return [
        _unsafe("experiments.json", f"{w}: name the experiments with --experiment PATH", UNLISTED)
        for w in registry_warnings
    ]
