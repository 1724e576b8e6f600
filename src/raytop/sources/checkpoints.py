"""The latest committed checkpoint of each torch trial's Train run, from its snapshot.

Train V2 rewrites ``checkpoint_manager_snapshot.json`` non-atomically (RAY_NOTES b): a read
that fails to parse is retried, then the last good copy is used with a one-line warning.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from raytop.diagnose.resume import Checkpoint
from raytop.diagnose.teardown import ExperimentFacts, RunFacts
from raytop.model import Experiment
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"
PARSE_RETRIES = 3


class CheckpointSnapshots:
    """Reads Train run snapshots, remembering the last good copy of each."""

    def __init__(self) -> None:
        self._last_good: dict[Path, dict[str, Any]] = {}
        self.warnings: list[str] = []

    def read(self, run_dir: Path) -> dict[str, Any] | None:
        path = run_dir / SNAPSHOT_FILE
        for attempt in range(PARSE_RETRIES):
            try:
                data = json.loads(path.read_text())
            except FileNotFoundError:
                return self._last_good.get(run_dir)
            except (OSError, ValueError):
                if attempt + 1 < PARSE_RETRIES:
                    time.sleep(0.05)
                continue
            self._last_good[run_dir] = data
            return data
        self.warnings.append(
            f"{run_dir.name}/{SNAPSHOT_FILE} is unreadable (partly written?); "
            + ("using the last good copy" if run_dir in self._last_good else "no good copy yet")
        )
        return self._last_good.get(run_dir)

    def latest(self, experiment: Experiment) -> dict[str, Checkpoint]:
        """Trial id → its Train run's latest committed checkpoint."""
        found = {}
        runs = Path(experiment.path) / TRAIN_RUNS_DIR
        for trial in experiment.trials:
            snapshot = self.read(runs / train_run_name(experiment.name, trial.trial_id))
            latest = (snapshot or {}).get("latest_checkpoint_result")
            if latest and latest.get("checkpoint_dir_name"):
                epoch = (latest.get("metrics") or {}).get("epoch")
                epoch = epoch if isinstance(epoch, int) else None
                found[trial.trial_id] = Checkpoint(latest["checkpoint_dir_name"], epoch)
        return found


def teardown_facts(experiment: Experiment) -> ExperimentFacts:
    """What is on storage for ``experiment`` (a local folder), for the teardown check."""
    folder = Path(experiment.path)
    snapshots = CheckpointSnapshots()
    runs = []
    for trial in experiment.trials:
        run_dir = folder / TRAIN_RUNS_DIR / train_run_name(experiment.name, trial.trial_id)
        if not run_dir.is_dir():
            continue  # a function trial, or a torch trial that never started its run
        snapshot = snapshots.read(run_dir) or {}
        listed = {r.get("checkpoint_dir_name") for r in snapshot.get("checkpoint_results", [])}
        latest = (snapshot.get("latest_checkpoint_result") or {}).get("checkpoint_dir_name")
        present = bool(latest) and (run_dir / latest).is_dir()
        # Uncommitted folders older than the latest committed one were cut off by an earlier
        # crash and stay harmless; newer ones may still be uploading.
        since = (run_dir / latest).stat().st_mtime if present else 0.0
        uncommitted = sorted(
            d.name for d in run_dir.iterdir()
            if d.is_dir() and d.name not in listed and d.stat().st_mtime >= since
        )  # fmt: skip
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
        state_on_storage=any(folder.glob("experiment_state-*.json")),
        runs=tuple(runs),
        stale_runs=tuple(w.split("/")[0] for w in snapshots.warnings),
    )
