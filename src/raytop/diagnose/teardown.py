"""Is everything a resume needs on durable storage? (``raytop check --teardown``)

What a user asks before deleting a RayJob or a cluster: the Tune driver has stopped (it
syncs its experiment state to storage only every 10 s or more, RAY_NOTES f), every Train
run's latest checkpoint is committed and present, and no checkpoint is still uploading.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RunFacts:
    trial_id: str
    latest: str | None  # latest committed checkpoint dir (from the run's snapshot)
    latest_present: bool  # that folder exists on storage
    uncommitted: tuple[str, ...] = ()  # checkpoint folders the snapshot does not list yet


@dataclass(frozen=True)
class ExperimentFacts:
    name: str
    driver_alive: bool | None
    state_on_storage: bool  # an experiment_state-*.json in the storage folder
    runs: tuple[RunFacts, ...] = field(default_factory=tuple)
    stale_runs: tuple[str, ...] = ()  # runs whose snapshot is unreadable


def teardown_problems(facts: ExperimentFacts) -> list[str]:
    """One line per thing that is not yet durable; empty when teardown is safe."""
    problems = []
    if facts.driver_alive:
        problems.append(
            f"{facts.name}: the Tune driver is running; its state reaches storage only every "
            "10 s or more: stop it first (`raytop stop`), it saves and syncs on the way out"
        )
    if not facts.state_on_storage:
        problems.append(f"{facts.name}: no experiment_state file on storage: not resumable")
    for run in facts.runs:
        where = f"{facts.name} trial {run.trial_id}"
        if run.latest is not None and not run.latest_present:
            problems.append(f"{where}: its latest checkpoint {run.latest} is missing on storage")
        if run.uncommitted:
            problems.append(
                f"{where}: {len(run.uncommitted)} checkpoint(s) not committed yet "
                f"({', '.join(run.uncommitted[:3])}): an upload is in flight or was cut off"
            )
    problems += [f"{facts.name}: {run}: checkpoint snapshot unreadable" for run in facts.stale_runs]
    return problems
