"""The latest committed checkpoint of each torch trial's Train run, from its snapshot.

Train V2 writes ``checkpoint_manager_snapshot.json`` non-atomically (RAY_NOTES b): a read
that fails to parse is retried, then treated as unknown.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from raytop.diagnose.resume import Checkpoint
from raytop.model import Experiment
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"


def read_snapshot(run_dir: Path, retries: int = 3) -> dict | None:
    for _ in range(retries):
        try:
            return json.loads((run_dir / SNAPSHOT_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def latest_checkpoints(experiment: Experiment) -> dict[str, Checkpoint]:
    found = {}
    runs = Path(experiment.path) / TRAIN_RUNS_DIR
    for trial in experiment.trials:
        snapshot = read_snapshot(runs / train_run_name(experiment.name, trial.trial_id))
        latest = (snapshot or {}).get("latest_checkpoint_result")
        if latest and latest.get("checkpoint_dir_name"):
            epoch = (latest.get("metrics") or {}).get("epoch")
            epoch = epoch if isinstance(epoch, int) else None
            found[trial.trial_id] = Checkpoint(latest["checkpoint_dir_name"], epoch)
    return found
