"""Is everything a resume needs on durable storage? (``raytop check --teardown``)

What a user asks before deleting a RayJob or a cluster: the Tune driver has stopped (it
syncs its experiment state to storage only every 10 s or more, RAY_NOTES f), every Train
run's latest checkpoint is committed and present, and no checkpoint is still uploading.
"""

from __future__ import annotations

from raytop.model.teardown import ExperimentFacts


def teardown_problems(facts: ExperimentFacts) -> list[str]:
    """One line per thing that is not yet durable; empty when teardown is safe.

    Safe only on positive evidence: Tune's experiment state read as valid and listing the
    trials, every torch trial's snapshot parsed and its latest checkpoint present, nothing
    uncommitted, the driver stopped."""
    problems = []
    if facts.driver_alive:
        problems.append(
            f"{facts.name}: the Tune driver is running; its state reaches storage only every "
            "10 s or more: stop it first (`raytop stop`), it saves and syncs on the way out"
        )
    elif facts.driver_alive is None and facts.driver_pid is not None:
        problems.append(
            f"{facts.name}: cannot tell whether its Tune driver (pid {facts.driver_pid}) has "
            "stopped (another host, or a process raytop cannot prove is its driver): "
            "make sure it has exited first"
        )
    elif facts.driver_alive is None and facts.driver_problem is not None:
        problems.append(f"{facts.name}: {facts.driver_problem}: make sure it has exited first")
    if facts.state_read == "missing" or (facts.state_read == "ok" and not facts.state_on_storage):
        problems.append(f"{facts.name}: no experiment_state file on storage: not resumable")
    elif facts.state_read != "ok":
        reason = facts.state_reason or "the experiment state could not be read"
        problems.append(
            f"{facts.name}: experiment state {facts.state_read}: {reason}: not resumable"
        )
    elif facts.trials == 0:
        problems.append(f"{facts.name}: the experiment state lists no trials: nothing to resume")
    for run in facts.runs:
        where = f"{facts.name} trial {run.trial_id}"
        if run.snapshot_problem is not None:
            problems.append(f"{where}: checkpoint snapshot unusable: {run.snapshot_problem}")
            continue
        if run.latest is not None and not run.latest_present:
            problems.append(f"{where}: its latest checkpoint {run.latest} is missing on storage")
        if run.uncommitted:
            problems.append(
                f"{where}: {len(run.uncommitted)} checkpoint(s) not committed yet "
                f"({', '.join(run.uncommitted[:3])}): an upload is in flight or was cut off"
            )
    flagged = {r.trial_id for r in facts.runs if r.snapshot_problem is not None}
    problems += [
        f"{facts.name}: {run}: checkpoint snapshot unreadable"
        for run in facts.stale_runs
        if run not in flagged
    ]
    return problems
