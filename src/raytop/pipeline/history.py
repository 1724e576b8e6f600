"""History from storage (``--storage PATH``): an experiment as storage alone tells it, for
when the cluster (and so the report ledger) is gone.

Per trial: its metric's last values from Tune's ``result.json`` (when the probe's table
has none) and its last failure from ``error.txt``; per torch trial: its Train run from
``train_runs/<run>/checkpoint_manager_snapshot.json`` and the checkpoint folders there,
a ``TrainRun`` marked ``from_storage`` (no ledger: no workers) whose checkpoints are
committed, missing or uploaded (``diagnose.checkpoints.pipeline`` with no uploads).
Read only: nothing under the storage path is written.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from raytop.diagnose.checkpoints import pipeline
from raytop.model import Experiment, TrainRun, Trial
from raytop.model.paths import join_path
from raytop.model.train_run import RUN_FROM_STORAGE
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.history import ExperimentFiles, TrialFiles
from raytop.sources.storage import Storages


class History:
    """Completes experiments read from storage paths with what their folders hold. Each
    folder is listed once per read and each trial's files are found in that one listing:
    the cost grows with the trials, not with their square."""

    def __init__(self, storages: Storages, snapshots: CheckpointSnapshots) -> None:
        self._files = TrialFiles(storages)
        self._snapshots = snapshots

    def complete(self, exp: Experiment, folder: str) -> Experiment:
        """``exp`` (found at ``folder``) with its trials' histories and errors, and a Train
        run from storage for each trial the ledger gave none."""
        files = self._files.of(folder)
        metric = exp.metric or files.state_metric()
        warnings: list[str] = []
        folders = files.trial_folders(t.trial_id for t in exp.trials)
        trials = []
        for trial in exp.trials:
            trial, said = self._trial(files, folders.get(trial.trial_id), trial, metric)
            trials.append(trial)
            warnings += said
        known = {r.trial_id for r in exp.runs}
        runs = list(exp.runs)
        run_names = _run_names(exp.name, files.train_runs())
        for trial in trials:
            if trial.trial_id not in known:
                run = self._run(folder, trial.trial_id, run_names(trial.trial_id))
                if run is not None:
                    runs.append(run)
        return dataclasses.replace(
            exp, path=folder, metric=metric, trials=tuple(trials), runs=tuple(runs),
            warnings=exp.warnings + tuple(warnings),
        )  # fmt: skip

    def _trial(
        self, files: ExperimentFiles, trial_folder: str | None, trial: Trial, metric: str | None
    ) -> tuple[Trial, list[str]]:
        want_history = bool(metric) and not trial.metric_history
        want_error = trial.error is None and (trial.status == "ERROR" or trial.num_failures > 0)
        if not (want_history or want_error) or trial_folder is None:
            return trial, []
        found = files.read(trial_folder, metric if want_history else None, want_error)
        changes: dict = {}
        if found.metric_history:
            changes["metric_history"] = found.metric_history
        if found.error:
            changes["error"] = found.error
        return (dataclasses.replace(trial, **changes) if changes else trial), list(found.warnings)

    def _run(self, folder: str, trial_id: str, name: str | None) -> TrainRun | None:
        """The trial's Train run (folder ``name``) as its snapshot and folders on storage
        say."""
        if name is None:
            return None
        path = join_path(folder, TRAIN_RUNS_DIR, name)
        folders = self._snapshots.folders(path)
        snapshot = self._snapshots.read(path)
        if snapshot is None and not folders:
            return None
        on_storage = None if folders is None else {f.name for f in folders}
        checkpoints = pipeline({}, snapshot, on_storage, time.time())
        return TrainRun(
            run_id=f"storage:{name}", run_name=name, attempt_id="", world_size=0,
            attempt_index=0, trial_id=trial_id, run_path=path, checkpoints=checkpoints,
            from_storage=True, source=RUN_FROM_STORAGE,
        )  # fmt: skip


def _run_names(experiment: str, run_folders: list[str]) -> Callable[[str], str | None]:
    """Each trial's Train run folder among ``run_folders`` (sorted): named
    ``<experiment>-<trial id>`` by the raytop trainable, else the first ``…-<trial id>``
    (the experiment renamed since). The names are indexed once by every ``-<suffix>``."""
    present = set(run_folders)
    by_suffix: dict[str, str] = {}
    for name in run_folders:
        for i, char in enumerate(name):
            if char == "-":
                by_suffix.setdefault(name[i + 1 :], name)

    def find(trial_id: str) -> str | None:
        name = train_run_name(experiment, trial_id)
        return name if name in present else by_suffix.get(trial_id)

    return find
