"""The latest committed checkpoint of each torch trial's Train run, from its snapshot.

Train V2 rewrites ``checkpoint_manager_snapshot.json`` non-atomically (RAY_NOTES b): a read
that fails to parse is retried, then the last good copy is used with a one-line warning
(``sources.storage``, which also watches local folders and polls remote ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raytop.model import Experiment, untrusted_ray_files
from raytop.model.paths import join_path, split_path
from raytop.model.resume import Checkpoint
from raytop.model.teardown import ExperimentFacts, RunFacts
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name
from raytop.sources.storage import Entry, Storages

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"


class CheckpointSnapshots:
    """Reads Train run snapshots (local or remote, through ``sources.storage``), keeping
    the last good copy of each; ``warnings`` collects the one-line notices."""

    def __init__(self, storages: Storages | None = None) -> None:
        self.storages = storages or Storages()
        # The one-line notices, and the same keyed by the Train run (folder) they are about,
        # so that a reader attaches them to their run without parsing the text.
        self.warnings: list[str] = []
        self.warnings_by_run: dict[str, list[str]] = {}

    def read(self, run_path: str | Path) -> dict[str, Any] | None:
        data, _problem = self.read_checked(run_path)
        return data

    def read_checked(self, run_path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
        """(snapshot, problem): the snapshot (None if absent; its last good copy when it is
        torn or of the wrong shape now, ``untrusted_ray_files.checkpoint_snapshot``), and why it
        cannot be trusted as it is now (torn, unreachable, wrong shape)."""
        storage, rel = self.storages.locate(str(run_path))
        name = split_path(str(run_path))[1]
        label = f"{name}/{SNAPSHOT_FILE}"
        path = _join(rel, SNAPSHOT_FILE)
        data, warning = storage.read_json(path, label, untrusted_ray_files.checkpoint_snapshot)
        if warning:
            self.warnings.append(warning)
            self.warnings_by_run.setdefault(name, []).append(warning)
        return data, warning

    def folders(self, run_path: str | Path) -> list[Entry] | None:
        """The run folder's sub-folders (checkpoints, and uploads not yet committed)."""
        storage, rel = self.storages.locate(str(run_path))
        entries = storage.listing(rel)
        return None if entries is None else [e for e in entries if e.is_dir]

    def unlistable(self, run_path: str, within: str) -> str | None:
        """Why the folder ``run_path``, which is there, cannot be listed (a symlink loop, no
        permission, storage unreachable); None when it is simply not there. Walks up while
        the parent cannot be listed either (an unlistable ``train_runs`` hides every run),
        never above the folder ``within`` (the experiment's)."""
        path = run_path
        while True:
            parent, name = split_path(path)
            if not name or len(parent.rstrip("/")) < len(within.rstrip("/")):
                return None
            storage, rel = self.storages.locate(parent)
            entries = storage.listing(rel)
            if entries is None:
                unreachable = storage.unreachable()
                if unreachable is not None:
                    return f"its run folder cannot be listed: {unreachable}"
                path = parent
                continue
            if any(e.name == name for e in entries):
                which = "its run folder" if path == run_path else f"{path}"
                return f"{which} is there but cannot be listed (a symlink loop, or no permission)"
            return None

    def latest(self, experiment: Experiment) -> dict[str, Checkpoint]:
        """Trial id → its Train run's latest committed checkpoint."""
        found = {}
        for trial in experiment.trials:
            snapshot = self.read(run_path(experiment, trial.trial_id))
            latest = (snapshot or {}).get("latest_checkpoint_result")
            if latest and latest.get("checkpoint_dir_name"):
                epoch = (latest.get("metrics") or {}).get("epoch")
                epoch = epoch if isinstance(epoch, int) else None
                checkpoint = Checkpoint(latest["checkpoint_dir_name"], epoch)
                found[trial.trial_id] = self._with_coverage(
                    checkpoint, run_path(experiment, trial.trial_id), snapshot or {}
                )
        return found

    def _with_coverage(self, checkpoint: Checkpoint, path: str, snapshot: dict) -> Checkpoint:
        """``checkpoint`` with the files its predecessor (the snapshot's previous committed
        checkpoint) had and it lacks: positive evidence of shards missing, by name only
        (nothing is opened). Unchanged when there is no predecessor or a folder cannot be
        listed."""
        names = [r.get("checkpoint_dir_name") for r in snapshot.get("checkpoint_results", [])]
        if checkpoint.dir_name not in names or names.index(checkpoint.dir_name) == 0:
            return checkpoint
        previous = names[names.index(checkpoint.dir_name) - 1]
        storage, rel = self.storages.locate(path)
        before = storage.listing(_join(rel, previous)) if previous else None
        now = storage.listing(_join(rel, checkpoint.dir_name))
        if before is None or now is None:
            return checkpoint
        missing = sorted({e.name for e in before} - {e.name for e in now})
        if not missing:
            return checkpoint
        return Checkpoint(checkpoint.dir_name, checkpoint.epoch, previous, tuple(missing[:8]))


def _join(rel: str, name: str) -> str:
    return join_path(rel, name) if rel else name


def run_path(experiment: Experiment, trial_id: str) -> str:
    """Where a torch trial's Train run keeps its checkpoints (see ``rundir``)."""
    return join_path(experiment.path, TRAIN_RUNS_DIR, train_run_name(experiment.name, trial_id))


def teardown_facts(experiment: Experiment, storages: Storages | None = None) -> ExperimentFacts:
    """What is on storage for ``experiment`` (local or remote), for the teardown check."""
    snapshots = CheckpointSnapshots(storages)
    storage = snapshots.storages.root(experiment.path)
    runs = []
    for trial in experiment.trials:
        path = run_path(experiment, trial.trial_id)
        folders = snapshots.folders(path)
        if folders is None:
            unlistable = snapshots.unlistable(path, experiment.path)
            if unlistable is None:
                continue  # a function trial, or a torch trial that never started its run
            runs.append(RunFacts(trial.trial_id, None, False, snapshot_problem=unlistable))
            continue
        snapshot, problem = snapshots.read_checked(path)
        if snapshot is None and problem is None:
            problem = f"no {SNAPSHOT_FILE} in its run folder"
        if problem is not None:
            runs.append(RunFacts(trial.trial_id, None, False, snapshot_problem=problem))
            continue
        assert snapshot is not None
        listed = {r.get("checkpoint_dir_name") for r in snapshot.get("checkpoint_results", [])}
        latest = (snapshot.get("latest_checkpoint_result") or {}).get("checkpoint_dir_name")
        mtimes = {f.name: f.mtime or 0.0 for f in folders}
        present = bool(latest) and latest in mtimes
        # Uncommitted folders older than the latest committed one were cut off by an earlier
        # crash and stay harmless; newer ones may still be uploading.
        since = mtimes[latest] if present else 0.0
        uncommitted = sorted(n for n, t in mtimes.items() if n not in listed and t >= since)
        runs.append(
            RunFacts(
                trial_id=trial.trial_id,
                latest=latest,
                latest_present=present,
                uncommitted=tuple(uncommitted),
            )
        )
    return ExperimentFacts(
        name=experiment.name,
        driver_alive=experiment.driver_alive,
        driver_pid=experiment.driver_pid,
        driver_problem=experiment.driver_problem,
        state_on_storage=bool(storage.glob("", "experiment_state-*.json")),
        runs=tuple(runs),
        stale_runs=tuple(r.trial_id for r in runs if r.snapshot_problem is not None),
        state_read=experiment.state_read,
        state_reason=experiment.state_reason,
        trials=len(experiment.trials),
    )
