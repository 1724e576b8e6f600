"""Is everything a resume needs on durable storage? (``raytop check --teardown``)

What a user asks before deleting a RayJob or a cluster: the Tune driver has stopped (it
syncs its experiment state to storage only every 10 s or more,
docs/RAY_FACTS.md#tune-experiment-sync), every Train run's latest checkpoint is committed
and present, and no checkpoint is still uploading.

Each problem is a ``teardown_unsafe`` finding whose ``evidence["reason"]`` says which check
failed, so a face reads the verdict from data and never from the wording of the line.
"""

from __future__ import annotations

from typing import Any

from raytop.model import Finding, Severity
from raytop.model.paths import PLAIN_NAME_RULE, quoted
from raytop.model.teardown import FUNCTION, TORCH, ExperimentFacts, RunFacts

KIND = "teardown_unsafe"

# evidence["reason"] of a teardown finding: which check failed.
DRIVER_RUNNING = "driver_running"
DRIVER_UNPROVEN = "driver_unproven"  # a pid raytop cannot prove has stopped
DRIVER_RECORD_INVALID = "driver_record_invalid"
DRIVER_RECORD_ELSEWHERE = "driver_record_elsewhere"  # driver.json names another folder
STATE_MISSING = "state_missing"
STATE_UNREADABLE = "state_unreadable"
NO_TRIALS = "no_trials"
SNAPSHOT_UNUSABLE = "snapshot_unusable"
CHECKPOINT_MISSING = "checkpoint_missing"
UNCOMMITTED = "checkpoint_uncommitted"
SNAPSHOT_UNREADABLE = "snapshot_unreadable"
RUN_MISSING = "run_missing"  # an unfinished torch trial's Train run folder is not there
TRAINABLE_UNKNOWN = "trainable_unknown"  # ... and nothing says whether it is a torch trial
TRIAL_ID_NOT_PLAIN = "trial_id_not_plain"
UNLISTED = "registry_unreadable"  # experiments left out of an unreadable list


def _unsafe(subject: str, message: str, reason: str, **evidence: Any) -> Finding:
    """The finding; its ``trial_id`` typed too when the evidence names one."""
    return Finding(KIND, Severity.ERROR, subject, message, {"reason": reason, **evidence},
                   trial_id=evidence.get("trial_id"))  # fmt: skip


def teardown_findings(facts: ExperimentFacts) -> list[Finding]:
    """One finding per thing that is not yet durable; empty when teardown is safe.

    Safe only on positive evidence: Tune's experiment state read as valid and listing the
    trials, every torch trial's snapshot parsed and its latest checkpoint present, nothing
    uncommitted, every unfinished trial's run folder there unless it is known to be a
    function trial, every trial id a plain name, and the driver stopped as recorded in a
    driver.json of this very folder (one naming another folder is no evidence here)."""
    name = facts.name
    found = []
    if facts.driver_alive:
        found.append(_unsafe(name, (
            f"{name}: the Tune driver is running; its state reaches storage only every "
            "10 s or more: stop it first (`raytop stop`), it saves and syncs on the way out"
        ), DRIVER_RUNNING))  # fmt: skip
    elif facts.record_elsewhere is not None:
        # Not a record of this folder: its driver's pid, alive or gone, says nothing here.
        found.append(_unsafe(
            name, f"{name}: {facts.record_elsewhere}: cannot tell whether that driver has "
            "stopped; make sure it has, then fix or remove that record",
            DRIVER_RECORD_ELSEWHERE, problem=facts.record_elsewhere,
        ))  # fmt: skip
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
    for odd in facts.odd_trial_ids:
        found.append(_unsafe(name, (
            f"{name}: trial id {quoted(odd)} is not a plain name ({PLAIN_NAME_RULE}): its "
            "checkpoints are not looked for, so cannot tell whether they are on storage"
        ), TRIAL_ID_NOT_PLAIN, trial_id=odd))  # fmt: skip
    for run in facts.runs:
        where, trial = f"{name} trial {run.trial_id}", {"trial_id": run.trial_id}
        if run.absent:
            found += _absent_run(facts, run, where)
            continue
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


def _absent_run(facts: ExperimentFacts, run: RunFacts, where: str) -> list[Finding]:
    """A trial whose Train run folder is not on storage. Nothing is lost when it
    finished (a resume does not run it again), errored before its first result (no
    checkpoint: ``--errored resume`` would start it afresh anyway), never started
    (PENDING, nothing reported, no failure), or is a function trial (no run folder: its
    checkpoints are Tune's). An unfinished torch trial's checkpoints, or an errored one's
    that ``raytop resume --errored resume`` would continue from, are gone (or were never
    on this storage), and with no evidence either way nobody can tell: both unsafe."""
    status = run.status or "PENDING"
    nothing_to_resume = status == "TERMINATED" or (status == "ERROR" and not run.reported)
    if nothing_to_resume or not run.started or facts.trainable == FUNCTION:
        return []
    trial = {"trial_id": run.trial_id, "status": status}
    if facts.trainable == TORCH:
        return [_unsafe(facts.name, (
            f"{where}: {status}, but its Train run folder is not on storage "
            f"({facts.trainable_evidence}): its checkpoints are not there"
        ), RUN_MISSING, **trial)]  # fmt: skip
    return [_unsafe(facts.name, (
        f"{where}: {status} with no Train run folder, and nothing says whether it is a "
        f"Train trial ({facts.trainable_evidence}): cannot tell whether its checkpoints "
        "are on storage"
    ), TRAINABLE_UNKNOWN, **trial)]  # fmt: skip


def unlisted_findings(registry_warnings: list[str]) -> list[Finding]:
    """An experiment left out of an unreadable list of launched experiments is one nobody
    checked: never "safe". One finding per problem of that list (naming its file)."""
    return [
        _unsafe("experiments.json", f"{w}: name the experiments with --experiment PATH", UNLISTED)
        for w in registry_warnings
    ]
