"""TrialProbe: a Tune callback in the driver that publishes the live trial table.

Tune only syncs its experiment state to storage every 10 s or more
(docs/RAY_FACTS.md#tune-experiment-sync); the driver itself knows every result the moment it
arrives. The probe writes the table to ``<raytop_dir>/trials/`` (in segments, only the rows
that changed: ``probe.trial_table``; at most every ``min_interval_s``), which the raytop
faces read. It never raises into Tune: a failed write is counted and retried.

Each row also carries the experiment metric's last ``MAX_METRIC_HISTORY`` finite values
(a bounded deque per trial, kept across a ``Tuner.restore`` through Tune's callback state)
and the iterations the trial will run when known (``model.progress.expected_iterations``:
the run's ``training_iteration`` stop limit, else the config's epochs).

When the run has a trial scheduler from ``probe.scheduler_probe``, each row also says why
the scheduler stopped or paused the trial (``scheduler_decision``): the scheduler files
the line just before Tune calls this callback with the same result, in this process; the
lines are kept across a resume with the histories.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ray.tune import Callback, Stopper

from raytop.model.progress import MAX_METRIC_HISTORY, expected_iterations
from raytop.model.snapshot import MAX_SCHEDULER_DECISION
from raytop.probe.scheduler_decisions import decisions
from raytop.probe.trial_table import TrialSegments
from raytop.rundir import STOP_REQUESTS

# How often the statuses Tune may change with no callback (a running or paused trial's:
# a scheduler's pause) are compared with the ones written, and how often every trial's.
SCAN_INTERVAL_S = 1.0
FULL_SCAN_INTERVAL_S = 10.0
UNSETTLED = frozenset({"RUNNING", "PAUSED"})
# Attributes of one driver process, left out of the pickle (tuner.pkl); ``_trials``,
# ``_results`` and ``_dirty`` are an older raytop's.
_PER_PROCESS = frozenset({"_now", "_trials", "_results", "_dirty"})

# Tune's bookkeeping keys: not metrics the user reported.
_TUNE_KEYS = {
    "config", "date", "done", "experiment_tag", "hostname", "iterations_since_restore",
    "node_ip", "pid", "time_since_restore", "time_this_iter_s", "timestamp", "trial_id",
    "checkpoint_dir_name", "should_checkpoint",
}  # fmt: skip


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (int, str, bool)) or value is None


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def trial_row(
    trial: Any,
    result: dict[str, Any] | None,
    history: Iterable[float] = (),
    stop_limit: int | None = None,
    decision: str | None = None,
    max_failures: int | None = None,
) -> dict[str, Any]:
    """The model.Trial fields of a Tune trial, JSON-ready: ``history`` is its metric's
    last values, ``stop_limit`` the run's ``training_iteration`` limit (if any),
    ``decision`` why its scheduler stopped or paused it (if it did), ``max_failures``
    Tune's retries of a trial (-1: unlimited; None: unknown)."""
    result = result if result is not None else (trial.last_result or {})
    metrics = {k: v for k, v in result.items() if k not in _TUNE_KEYS and _scalar(v)}
    error = None
    if trial.status == "ERROR" and trial.error_file:
        try:
            lines = [ln for ln in Path(trial.error_file).read_text().splitlines() if ln.strip()]
            error = lines[-1][:300] if lines else None
        except OSError:
            error = "error file unreadable"
    return {
        "trial_id": trial.trial_id,
        "status": trial.status,
        "config": {k: v for k, v in (trial.config or {}).items() if _scalar(v)},
        "metrics": metrics,
        "num_failures": int(trial.num_failures or 0),
        "iterations": int(result.get("training_iteration") or 0),
        "elapsed_s": result.get("time_total_s"),
        "error": error,
        "metric_history": [float(v) for v in history][-MAX_METRIC_HISTORY:],
        "max_iterations": expected_iterations(trial.config, stop_limit),
        "scheduler_decision": decision[:MAX_SCHEDULER_DECISION] if decision else None,
        "max_failures": max_failures,
    }


class _Live:
    """What one driver process holds between writes (never pickled into tuner.pkl): its
    table on disk, the trials to write again, and each trial's status as last written."""

    def __init__(self, raytop_dir: Path) -> None:
        self.table = TrialSegments(raytop_dir)
        self.dirty: dict[str, Any] = {}  # trial id → Tune's trial, to be written again
        self.results: dict[str, dict[str, Any]] = {}  # trial id → its last result
        self.status: dict[str, str] = {}  # trial id → its status as last written
        self.trials: list[Any] = []  # Tune's list of trials, as last given
        self.seen = 0  # how many of them were looked at for new trials
        self.unsettled: dict[str, Any] = {}  # trial id → trial, written RUNNING or PAUSED
        self.scanned_at = 0.0
        self.fully_scanned_at = 0.0


class TrialProbe(Callback):
    """``metric``: the experiment's (``[tune] metric``), whose values each row keeps;
    ``stop_limit``: the run's ``training_iteration`` stop limit (``[tune] stop_iterations``);
    ``max_failures``: Tune's retries of a trial (``[failure] trial_max_failures``).

    A write puts only the trials that changed (``probe.trial_table``): the one a callback
    was about, trials Tune added, and any whose status Tune changed with no callback (a
    scheduler's pause): the running and paused ones are looked at once a second, every
    trial once every ten (a pass over 10,000 statuses is ~1 ms)."""

    # Defaults for a probe unpickled from the tuner.pkl of an older raytop (no __init__).
    _metric: str | None = None
    _stop_limit: int | None = None
    _decisions: dict[str, str | None] | None = None
    _max_failures: int | None = None

    def __init__(
        self,
        raytop_dir: str,
        min_interval_s: float = 0.2,
        metric: str | None = None,
        stop_limit: int | None = None,
        max_failures: int | None = None,
    ) -> None:
        self._raytop_dir = Path(raytop_dir)
        self._max_failures = max_failures
        self._min_interval_s = min_interval_s
        self._metric = metric
        self._stop_limit = stop_limit
        self._histories: dict[str, deque[float]] = {}
        self._last_write = 0.0
        self.write_failures = 0

    def __getstate__(self) -> dict[str, Any]:
        """The settings and histories: a resumed driver starts its table afresh."""
        return {k: v for k, v in self.__dict__.items() if k not in _PER_PROCESS}

    def _live(self) -> _Live:
        live = self.__dict__.get("_now")
        if live is None:
            # An older raytop's probe (unpickled, no __init__) named its table's file.
            folder = self.__dict__.get("_raytop_dir") or Path(self.__dict__["_path"]).parent
            live = self.__dict__["_now"] = _Live(Path(folder))
        return live

    def _mark(self, trial: Any) -> None:
        self._live().dirty[trial.trial_id] = trial

    def _look(self, trials: list[Any]) -> None:
        """The trials Tune added since the last look are rows to write. Tune hands every
        callback its own list (the same object, appended to); another list is looked at
        whole."""
        live = self._live()
        if trials is not live.trials or len(trials) < live.seen:
            live.trials, live.seen = trials, 0
        for trial in trials[live.seen :]:
            if trial.trial_id not in live.status:
                live.dirty[trial.trial_id] = trial
        live.seen = len(trials)

    def _scan(self, live: _Live, full: bool) -> None:
        """Trials whose status differs from the one written: Tune changed it with no
        callback to this probe (or after the callback's write). Each second the running
        and paused ones (a handful: a sweep's concurrency), every ten seconds all of
        them (10,000 trials: ~1 ms)."""
        trials = live.trials if full else list(live.unsettled.values())
        for trial in trials:
            if live.status.get(trial.trial_id) != trial.status:
                live.dirty[trial.trial_id] = trial

    def _flush(self, force: bool = False) -> None:
        live = self._live()
        now = time.monotonic()
        if not force and now - self._last_write < self._min_interval_s:
            return
        full = force or now - live.fully_scanned_at >= FULL_SCAN_INTERVAL_S
        if full or now - live.scanned_at >= SCAN_INTERVAL_S:
            live.scanned_at = now
            live.fully_scanned_at = now if full else live.fully_scanned_at
            self._scan(live, full)
        if not live.dirty:
            return
        try:
            histories = self._history_table()
            rows = [
                trial_row(
                    t, live.results.get(t.trial_id), histories.get(t.trial_id, ()),
                    self._stop_limit, self._decision(t.trial_id), self._max_failures,
                )
                for t in live.dirty.values()
            ]  # fmt: skip
            live.table.put(rows)
        except Exception:
            self.write_failures += 1
            return
        for row, trial in zip(rows, live.dirty.values(), strict=True):
            live.status[trial.trial_id] = row["status"]
            if row["status"] in UNSETTLED:
                live.unsettled[trial.trial_id] = trial
            else:
                live.unsettled.pop(trial.trial_id, None)
        live.dirty.clear()
        self._last_write = now

    def _history_table(self) -> dict[str, deque[float]]:
        histories = self.__dict__.get("_histories")
        if histories is None:  # unpickled from an older raytop's tuner.pkl
            histories = self.__dict__["_histories"] = {}
        return histories

    def _decision(self, trial_id: str) -> str | None:
        """The scheduler's line for the trial: this process's, else the one saved before
        a resume."""
        if self._decisions is None:
            self._decisions = {}
        known, line = decisions.lookup(trial_id)
        if known:
            self._decisions[trial_id] = line
        return self._decisions.get(trial_id)

    def _remember(self, trial_id: str, result: dict[str, Any]) -> None:
        """Append the metric's value of ``result`` to the trial's history, if finite."""
        value = result.get(self._metric) if self._metric else None
        if not _finite_number(value):
            return
        histories = self._history_table()
        history = histories.get(trial_id)
        if history is None:
            history = histories[trial_id] = deque(maxlen=MAX_METRIC_HISTORY)
        history.append(float(value))

    def get_state(self) -> dict[str, Any] | None:
        """The histories, saved by Tune with the experiment so a resume keeps them."""
        histories = self._history_table()
        lines = {k: v for k, v in (self._decisions or {}).items() if v is not None}
        if not histories and not lines:
            return None
        state: dict[str, Any] = {"metric_history": {k: list(v) for k, v in histories.items()}}
        if lines:
            state["scheduler_decisions"] = lines
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        try:
            saved = state.get("metric_history") or {}
            self.__dict__["_histories"] = {
                str(k): deque((float(x) for x in v if _finite_number(x)), MAX_METRIC_HISTORY)
                for k, v in saved.items()
            }
        except Exception:  # a state of another shape: start the histories afresh
            self.__dict__["_histories"] = {}
        try:
            saved_lines = state.get("scheduler_decisions") or {}
            self._decisions = {
                str(k): str(v)[:MAX_SCHEDULER_DECISION]
                for k, v in saved_lines.items()
                if isinstance(v, str)
            }
        except Exception:
            self._decisions = {}

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._live().results[trial.trial_id] = dict(result)
        with contextlib.suppress(Exception):  # never into Tune
            self._remember(trial.trial_id, result)
        self._look(trials)
        self._mark(trial)
        self._flush()

    def on_trial_start(self, iteration, trials, trial, **info):
        self._look(trials)
        self._mark(trial)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._look(trials)
        self._mark(trial)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._look(trials)
        self._mark(trial)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._look(trials)
        self._mark(trial)

    def on_step_end(self, iteration, trials, **info):
        self._look(trials)
        self._flush()

    def on_experiment_end(self, trials, **info):
        self._look(trials)
        self._flush(force=True)


class TrialStopper(Stopper):
    """Stops the trials listed in ``<raytop_dir>/stop_trials.json`` (``raytop stop --trial``)
    at their next result; Tune then ends them as TERMINATED, their checkpoints kept."""

    def __init__(self, raytop_dir: str) -> None:
        self._path = Path(raytop_dir) / STOP_REQUESTS

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        try:
            return trial_id in json.loads(self._path.read_text())
        except (OSError, ValueError):
            return False

    def stop_all(self) -> bool:
        return False
