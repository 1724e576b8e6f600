"""The latest committed checkpoint of each torch trial's Train run, from its snapshot.

Train V2 rewrites ``checkpoint_manager_snapshot.json`` non-atomically
(docs/RAY_FACTS.md#checkpoint-snapshot): a read that fails to parse is retried, then the
last good copy is used with a one-line warning (``sources.storage``, which also watches
local folders and polls remote ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raytop.model import Experiment, Trial, untrusted_ray_files
from raytop.model.paths import is_plain_name, join_path, split_path
from raytop.model.resume import Checkpoint
from raytop.model.teardown import FUNCTION, TORCH, ExperimentFacts, RunFacts
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name
from raytop.sources.storage import Storages
from raytop.sources.storage_base import Entry
from raytop.sources.tune_dir import SPEC_COPY, launched_kind

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"
NO_SPEC_COPY = "no spec copy of raytop's"


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
            path = run_path(experiment, trial.trial_id)
            if path is None:  # not a plain name: the reader warned about it
                continue
            snapshot = self.read(path)
            latest = (snapshot or {}).get("latest_checkpoint_result")
            if latest and latest.get("checkpoint_dir_name"):
                epoch = (latest.get("metrics") or {}).get("epoch")
                epoch = epoch if isinstance(epoch, int) else None
                checkpoint = Checkpoint(latest["checkpoint_dir_name"], epoch)
                found[trial.trial_id] = self._with_coverage(checkpoint, path, snapshot or {})
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


def run_path(experiment: Experiment, trial_id: str) -> str | None:
    """Where a torch trial's Train run keeps its checkpoints (see ``rundir``); None for a
    trial id that is not a plain name (``model.paths.is_plain_name``), which no reader
    joins into a path: ``../x`` would lead out of the experiment folder."""
    if not is_plain_name(trial_id):
        return None
    return join_path(experiment.path, TRAIN_RUNS_DIR, train_run_name(experiment.name, trial_id))


def _trainable(
    experiment: Experiment, snapshots: CheckpointSnapshots, raytop_dir: Path | None
) -> tuple[str | None, str]:
    """(TORCH, FUNCTION or None, the evidence in words): what the experiment's trials are,
    on positive evidence only. A ``train_runs`` folder (where raytop's torch trials keep
    their runs) outweighs a spec copy saying "function"; with neither, nobody can tell."""
    kind, problem = launched_kind(raytop_dir)
    copy = raytop_dir / SPEC_COPY if raytop_dir is not None else None
    if kind == TORCH:
        return TORCH, f'{copy} says [trainable] kind = "torch"'
    storage, rel = snapshots.storages.locate(join_path(experiment.path, TRAIN_RUNS_DIR))
    if storage.listing(rel) is not None:
        return TORCH, f"{TRAIN_RUNS_DIR}/ holds its Train runs"
    if kind == FUNCTION:
        return FUNCTION, f'{copy} says [trainable] kind = "function"'
    return None, f"{problem or NO_SPEC_COPY}; no {TRAIN_RUNS_DIR}/ folder"


def _started(trial: Trial) -> bool:
    """Whether the trial ever ran: a result reported, or a failure. A PENDING trial with
    neither never started a Train run, so it has no checkpoints to lose."""
    return trial.iterations > 0 or trial.num_failures > 0 or trial.status != "PENDING"


def teardown_facts(
    experiment: Experiment,
    storages: Storages | None = None,
    *,
    raytop_dir: Path | None = None,
    record_elsewhere: str | None = None,
) -> ExperimentFacts:
    """What is on storage for ``experiment`` (local or remote), for the teardown check.
    ``raytop_dir``: where raytop's copy of the launched spec says what the trials are;
    ``record_elsewhere``: why its driver.json is no record of this folder
    (``ExperimentReader.record_elsewhere``)."""
    snapshots = CheckpointSnapshots(storages)
    storage = snapshots.storages.root(experiment.path)
    runs, odd = [], []
    for trial in experiment.trials:
        path = run_path(experiment, trial.trial_id)
        if path is None:
            odd.append(trial.trial_id)
            continue
        folders = snapshots.folders(path)
        if folders is None:
            unlistable = snapshots.unlistable(path, experiment.path)
            if unlistable is None:  # not there: a function trial, or a torch trial's is lost
                runs.append(RunFacts(
                    trial.trial_id, None, False, absent=True, status=trial.status,
                    started=_started(trial), reported=trial.iterations > 0,
                ))  # fmt: skip
                continue
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
    trainable, evidence = _trainable(experiment, snapshots, raytop_dir)
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
        record_elsewhere=record_elsewhere,
        trainable=trainable,
        trainable_evidence=evidence,
        odd_trial_ids=tuple(odd),
    )
