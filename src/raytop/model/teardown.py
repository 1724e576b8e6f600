"""What is on durable storage for an experiment: the facts ``raytop check --teardown``
judges (``diagnose.teardown``), read by ``sources.checkpoints``."""

from __future__ import annotations

from dataclasses import dataclass, field

# What an experiment's trials are (``ExperimentFacts.trainable``): each torch trial keeps
# its checkpoints in its own Train run folder; a function trial has none.
TORCH, FUNCTION = "torch", "function"


@dataclass(frozen=True)
class RunFacts:
    trial_id: str
    latest: str | None  # latest committed checkpoint dir (from the run's snapshot)
    latest_present: bool  # that folder exists on storage
    uncommitted: tuple[str, ...] = ()  # checkpoint folders the snapshot does not list yet
    snapshot_problem: str | None = None  # why the run's snapshot could not be used (else None)
    # The trial's run folder is not on storage at all: then its Tune status, whether it
    # started (False only for a PENDING trial that never reported nor failed) and whether
    # it reported a result (an errored trial that did may be resumed from a checkpoint).
    absent: bool = False
    status: str | None = None
    started: bool = True
    reported: bool = True


@dataclass(frozen=True)
class ExperimentFacts:
    name: str
    driver_alive: bool | None  # None: cannot tell (another host, an unproven pid)
    state_on_storage: bool  # an experiment_state-*.json in the storage folder
    runs: tuple[RunFacts, ...] = field(default_factory=tuple)
    stale_runs: tuple[str, ...] = ()  # trial ids whose run snapshot is unreadable
    # How Tune's experiment state read (``model.Experiment.state_read``) and why not "ok".
    state_read: str = "ok"
    state_reason: str | None = None
    trials: int = 1  # trials known (from the probe or the state)
    driver_pid: int | None = None  # the pid driver.json records (None: not launched by raytop)
    driver_problem: str | None = None  # driver.json is there but is no valid record
    # driver.json names another experiment folder: why it is no record of this one's driver.
    record_elsewhere: str | None = None
    # TORCH or FUNCTION on positive evidence (said by ``trainable_evidence``), else None.
    trainable: str | None = None
    trainable_evidence: str = ""
    odd_trial_ids: tuple[str, ...] = ()  # not plain names: no path is made of them
