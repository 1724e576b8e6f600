"""Reads an experiment folder into ``model.Experiment``, defensively (DESIGN decision 8).

For a run raytop launched, the live trial table comes from the TrialProbe's
``.raytop/trials.json`` and the driver's liveness from ``driver.json`` / ``exit.json``.
For any other Tune experiment folder it falls back to Tune's own
``experiment_state-*.json`` (newest by name, as Tune picks it), locally or on remote
storage. Both are re-read on a parse error, and the last good copy is kept with a warning
when a file is half-written (``sources.storage``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raytop.model import Experiment, ExperimentStatus, Trial
from raytop.rundir import (
    RAYTOP_DIR_NAME,
    STOP_MARKER,
    driver_alive,
    is_uri,
    local_path,
    split_path,
)
from raytop.sources.storage import Storages


def _trial_from_state(trial_json: str, meta_json: str) -> Trial:
    trial = json.loads(trial_json)
    meta = json.loads(meta_json)
    last = meta.get("last_result") or {}
    if isinstance(last, str):
        last = json.loads(last)
    metrics = {
        k: v
        for k, v in last.items()
        if k != "config" and isinstance(v, (int, float, str, bool)) and not k.startswith("time_")
    }
    return Trial(
        trial_id=trial["trial_id"],
        status=trial.get("status", "PENDING"),
        config={k: v for k, v in (trial.get("config") or {}).items() if not isinstance(v, dict)},
        metrics=metrics,
        num_failures=int(meta.get("num_failures") or 0),
        iterations=int(last.get("training_iteration") or 0),
        elapsed_s=last.get("time_total_s"),
        error=None,
    )


class ExperimentReader:
    """One per watched experiment; its files are read through ``sources.storage`` (watched
    when local, polled when remote), which keeps the last good parse of each."""

    def __init__(
        self, path: str, raytop_dir: Path | None = None, storages: Storages | None = None
    ) -> None:
        self.path = local_path(path)
        self.raytop_dir = raytop_dir
        if self.raytop_dir is None and not is_uri(path):
            candidate = Path(self.path) / RAYTOP_DIR_NAME
            self.raytop_dir = candidate if candidate.is_dir() else None
        self._storages = storages or Storages()
        self._storage = self._storages.root(self.path)
        # The trials of the last state read: a watched, unchanged file is not parsed again.
        self._parsed: tuple[Any, list[Trial], list[str]] | None = None
        if self.raytop_dir is not None:
            # Inside a local experiment folder it shares that watch; else it gets its own.
            self._storages.locate(str(self.raytop_dir))

    def _read_raytop(self, name: str) -> tuple[Any | None, str | None]:
        assert self.raytop_dir is not None
        storage, rel = self._storages.locate(str(self.raytop_dir / name))
        return storage.read_json(rel)

    def _trials_from_probe(self) -> tuple[list[Trial] | None, list[str]]:
        if self.raytop_dir is None:
            return None, []
        data, warning = self._read_raytop("trials.json")
        warnings = [warning] if warning else []
        if data is None:
            return None, warnings
        return [Trial(**row) for row in data.get("trials", [])], warnings

    def _trials_from_tune_state(self) -> tuple[list[Trial] | None, list[str]]:
        states = self._storage.glob("", "experiment_state-*.json")
        if not states:
            unreachable = self._storage.unreachable()
            return None, [unreachable] if unreachable else []
        data, warning = self._storage.read_json(states[-1])
        warnings = [warning] if warning else []
        if data is None:
            return None, warnings
        if self._parsed is not None and self._parsed[0] is data:  # unchanged since last time
            return list(self._parsed[1]), warnings + self._parsed[2]
        trials, problems = [], []
        for trial_json, meta_json in data.get("trial_data", []):
            try:
                trials.append(_trial_from_state(trial_json, meta_json))
            except (ValueError, KeyError, TypeError):
                problems.append("a trial in the experiment state could not be parsed")
        self._parsed = (data, trials, problems)
        return list(trials), warnings + problems

    def _job_id(self) -> str | None:
        if self.raytop_dir is None:
            return None
        data, _ = self._read_raytop("job.json")
        return data.get("job_id") if data else None

    def read(self) -> Experiment:
        name = split_path(self.path)[1]
        info: dict[str, Any] = {}
        pid: int | None = None
        alive: bool | None = None
        if self.raytop_dir is not None:
            info, _ = self._read_raytop("driver.json")
            info = info or {}
            pid, alive = driver_alive(self.raytop_dir)
        stopped = alive is False and (self.raytop_dir / STOP_MARKER).exists()
        if stopped:  # a user stop: Tune's saved state says which trials are unfinished
            trials, warnings = self._trials_from_tune_state()
        else:
            trials, warnings = self._trials_from_probe()
        if trials is None:
            trials, more = (self._trials_from_tune_state() if not stopped
                            else self._trials_from_probe())  # fmt: skip
            warnings += more
        trials = trials or []
        return Experiment(
            name=info.get("experiment_name", name),
            path=info.get("experiment_path", self.path),
            status=_status(trials, alive, found=bool(info) or bool(trials)),
            metric=info.get("metric"),
            mode=info.get("mode"),
            trials=tuple(trials),
            driver_pid=pid,
            driver_alive=alive,
            warnings=tuple(warnings),
            job_id=self._job_id(),
        )


def _status(trials: list[Trial], driver_alive: bool | None, found: bool) -> ExperimentStatus:
    if driver_alive:
        return ExperimentStatus.RUNNING if trials else ExperimentStatus.STARTING
    if not found:
        return ExperimentStatus.UNKNOWN
    if trials and all(t.status == "TERMINATED" for t in trials):
        return ExperimentStatus.FINISHED
    if trials and all(t.ended for t in trials):
        return ExperimentStatus.ERRORED
    if driver_alive is None:  # not launched by raytop (or another host): cannot tell
        return ExperimentStatus.UNKNOWN
    return ExperimentStatus.INTERRUPTED
