"""Reads an experiment folder into ``model.Experiment``, defensively: its files are another
program's, rewritten in place while raytop reads them, so all of them are untrusted input.

For a run raytop launched, the live trial table comes from the TrialProbe's
(``sources.probe_table``) and the driver's liveness from ``driver.json`` / ``exit.json``.
For any other Tune experiment folder it falls back to Tune's own
``experiment_state-*.json`` (newest by name, as Tune picks it), locally or on remote
storage. Both are re-read on a parse error, and the last good copy is kept with a warning
when a file is half-written (``sources.storage``).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from raytop.model import Experiment, ExperimentStatus, Trial, untrusted, untrusted_ray_files
from raytop.model.paths import (
    is_plain_name,
    is_uri,
    local_path,
    quoted,
    split_path,
)
from raytop.model.stdlib import tomllib
from raytop.model.tune_folders import NAME_CHARS, another_run_warning, unnamed_recent
from raytop.process_identity import check_driver
from raytop.rundir import RAYTOP_DIR_NAME, STOP_MARKER
from raytop.sources.history import STATE_FILES, same_place
from raytop.sources.probe_table import ProbeTable, odd_ids, odd_trial_ids
from raytop.sources.storage import Storages
from raytop.sources.storage_base import Entry

STATE_OK, STATE_MISSING, STATE_TORN = "ok", "missing", "torn"
STATE_INVALID, STATE_INCOMPLETE = "invalid", "incomplete"
STATE_UNREACHABLE, STATE_UNKNOWN = "unreachable", "unknown"
SPEC_COPY = "spec.toml"  # in the raytop dir: the spec as launched (launch.launcher copies it)
MAX_SPEC_COPY_BYTES = 1024 * 1024
TRAINABLE_KINDS = ("torch", "function")


def _same_folder(recorded: str, path: str) -> bool:
    """Whether ``recorded`` (from driver.json) names the folder ``path``, however spelt;
    a path that cannot even be resolved (a NUL, a lone surrogate) names none."""
    if is_uri(recorded) != is_uri(path):
        return False
    try:
        return same_place(recorded) == same_place(path)
    except (OSError, ValueError):
        return False


def launched_kind(raytop_dir: Path | None) -> tuple[str | None, str | None]:
    """(kind, problem): the ``[trainable] kind`` ("torch" or "function") of the spec as
    launched, raytop's copy in ``raytop_dir``; (None, None) when there is no copy, (None,
    why) when it cannot be used. Evidence of what an experiment's trials are, so it is read
    as data only: opened O_NONBLOCK before its type is known (a FIFO must not block), a
    regular file only, capped, parsed by ``tomllib``; never through ``launch.spec`` (which
    this floor may not import), and nothing it names is imported."""
    if raytop_dir is None:
        return None, None
    path = raytop_dir / SPEC_COPY
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({getattr(exc, 'strerror', None) or exc})"
    try:
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None, f"{path}: not a regular file: not read"
            untrusted.check_size(info.st_size, MAX_SPEC_COPY_BYTES)
            raw = f.read(MAX_SPEC_COPY_BYTES + 1)
        untrusted.check_size(len(raw), MAX_SPEC_COPY_BYTES)
        table = tomllib.loads(raw.decode("utf-8")).get("trainable")
    except untrusted.Invalid as exc:
        return None, f"{path}: {exc}"
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc})"
    except (ValueError, RecursionError) as exc:  # not UTF-8, not TOML (or nested too deep)
        return None, f"{path}: not a TOML spec ({type(exc).__name__})"
    kind = table.get("kind") if isinstance(table, dict) else None
    if kind not in TRAINABLE_KINDS:
        shown = quoted(kind) if isinstance(kind, str) else type(kind).__name__
        return None, f"{path}: [trainable] kind is {shown}, not 'torch' or 'function'"
    return kind, None


Dirs = frozenset[str] | None  # the trials' folder names in a state; None: not all known


def _has_params(listing: list[Entry] | None) -> bool:
    """A trial's folder: Tune writes ``params.json`` in each as the trial starts."""
    return any(e.name == "params.json" and not e.is_dir for e in listing or ())


def _parse_state(name: str, data: Any) -> tuple[list[Trial], list[str], Dirs]:
    """The trials of Tune's state file ``name``, one warning per problem (naming it), and
    the trials' folder names (None unless every trial's is known): a row that does not
    validate (``model.untrusted``) is left out, the others stay."""
    try:
        rows = untrusted_ray_files.tune_state_rows(name, data)
    except untrusted.Invalid as exc:
        return [], [str(exc)], None
    trials: list[Trial] = []
    problems: list[str] = []
    dirs: set[str] = set()
    every_dir = True
    for row in rows:
        try:
            fields = untrusted_ray_files.tune_state_trial(row)
            logdir = fields.pop("logdir")
            trials.append(Trial(**fields))
        except (untrusted.Invalid, OverflowError) as exc:
            problems.append(f"{name}: {exc}")
            logdir = None
        if logdir is None:
            every_dir = False
        else:
            dirs.add(logdir)
    # Tune lists them in no set order (a dict of its live trials' checkpoints): by id, as
    # Tune numbers them (``<experiment hash>_<5 digits>``).
    trials.sort(key=lambda t: t.trial_id)
    return trials, problems, frozenset(dirs) if every_dir else None


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
        # The trials of the last state read, its problems, its odd-trial-id warning and its
        # trials' folder names: a watched, unchanged file is not parsed again.
        self._parsed: tuple[Any, list[Trial], list[str], list[str], Dirs] | None = None
        # How Tune's state read the last time: (one of the STATE_* values, reason or None).
        self.state: tuple[str, str | None] = (STATE_UNKNOWN, None)
        # The driver's liveness at the last read: when it turns to ended, the probe's
        # table is read afresh (its last write came just before exit.json).
        self._alive_before: bool | None = None
        # From Tune's newest state, at its last read: when its driver started (unix s;
        # ``untrusted_ray_files.tune_start_time``) and the file's time; and the newest
        # file's time. For an experiment raytop did not launch, the evidence of which job
        # is its driver.
        self.tune_started_at: float | None = None
        self.state_mtime: float | None = None
        self.files_time: float | None = None  # its newest top-level file's time
        # Why driver.json, at the last read, is no record of this folder (``_elsewhere``).
        self.record_elsewhere: str | None = None
        self._trials_total: int | None = None  # driver.json's, as last read good
        # The TrialProbe's table, for a run raytop launched.
        self._probe = ProbeTable(self._storages, self.raytop_dir) if self.raytop_dir else None

    def _read_raytop(self, name: str) -> tuple[Any | None, str | None]:
        assert self.raytop_dir is not None
        storage, rel = self._storages.locate(str(self.raytop_dir / name))
        return storage.read_json(rel)

    def _trials_from_probe(self) -> tuple[Sequence[Trial] | None, list[str]]:
        if self._probe is None:
            return None, []
        return self._probe.read()

    def _with_probe_histories(self, trials: Sequence[Trial] | None) -> Sequence[Trial] | None:
        """Tune's trials with what only the probe's table has (each trial's metric
        history, its count under the run's stop limit, and why its scheduler stopped or
        paused it), where the table lists them."""
        if not trials:
            return trials
        probed, _ = self._trials_from_probe()  # its warnings come with its own read
        by_id = {t.trial_id: t for t in probed or ()}
        return [
            replace(
                t,
                metric_history=by_id[t.trial_id].metric_history,
                max_iterations=by_id[t.trial_id].max_iterations or t.max_iterations,
                scheduler_decision=by_id[t.trial_id].scheduler_decision,
                max_failures=by_id[t.trial_id].max_failures,
            )
            if t.trial_id in by_id
            else t
            for t in trials
        ]

    def _trials_from_tune_state(self) -> tuple[list[Trial] | None, list[str]]:
        """Trials from Tune's newest experiment_state, and (in ``self.state``) how it read."""
        listed = self._storage.listing("") or []
        times = {e.name: e.mtime for e in listed
                 if not e.is_dir and fnmatch.fnmatch(e.name, STATE_FILES)}  # fmt: skip
        states = sorted(times)
        # Top-level files are the driver's own (tuner.pkl, the searcher's and Tune's
        # state): the newest was written while it ran, even before Tune's first state.
        self.files_time = max((e.mtime for e in listed if not e.is_dir and e.mtime),
                              default=None)  # fmt: skip
        if not states:
            unreachable = self._storage.unreachable()
            if unreachable:
                self.state = (STATE_UNREACHABLE, unreachable)
                return None, [unreachable]
            self.state = (STATE_MISSING, "no experiment_state-*.json on storage")
            return None, []
        name = states[-1]
        data, warning = self._storage.read_json(name)
        warnings = [warning] if warning else []
        if warning is not None:  # not read as it is now: storage unreachable, or torn
            kind = STATE_UNREACHABLE if self._storage.error else STATE_TORN
            self.state = (kind, f"{name}: {warning}" if kind == STATE_UNREACHABLE else warning)
        if data is None:
            return None, warnings
        if self._parsed is not None and self._parsed[0] is data:  # unchanged since last time
            trials, problems, odd, dirs = self._parsed[1:]
        else:
            trials, problems, dirs = _parse_state(name, data)
            odd = odd_trial_ids(name, odd_ids(trials))
            self._parsed = (data, trials, problems, odd, dirs)
            self.tune_started_at = untrusted_ray_files.tune_start_time(data)
        self.state_mtime = times[name]
        if warning is None:
            self.state = (STATE_INVALID, problems[0]) if problems else (STATE_OK, None)
        mixed = self._another_run(name, listed, dirs)
        return list(trials), warnings + problems + odd + mixed

    def _another_run(self, name: str, listed: list[Entry], dirs: Dirs) -> list[str]:
        """The warning that another Tune run's trial folders are here (``model.tune_folders``):
        folders no trial of the state names, written since its run started, each a trial's
        (its ``params.json``, which Tune writes in every trial folder)."""
        folders = ((e.name, e.mtime) for e in listed if e.is_dir)
        recent = unnamed_recent(dirs, folders, self.tune_started_at)
        strangers = [d for d in recent if _has_params(self._storage.listing(d))]
        if not strangers:
            return []
        first = strangers[0]
        plain = is_plain_name(first) and len(first) <= NAME_CHARS
        return [another_run_warning(name, strangers, first if plain else quoted(first, NAME_CHARS))]

    def _job_id(self) -> str | None:
        if self.raytop_dir is None:
            return None
        data, _ = self._read_raytop("job.json")
        job_id = data.get("job_id") if isinstance(data, dict) else None
        return job_id if isinstance(job_id, str) else None

    def _elsewhere(self, info: dict[str, Any]) -> str | None:
        """Why ``driver.json`` is no record of this folder: it names another experiment
        folder (or experiment) than the one being read. The folder read is the one given,
        always: the record never says where the experiment is, else a record naming another,
        finished folder would have that folder shown and judged in this one's place."""
        assert self.raytop_dir is not None
        record = self.raytop_dir / "driver.json"
        recorded, named = info.get("experiment_path"), info.get("experiment_name")
        here = split_path(self.path)[1]
        if isinstance(recorded, str) and not _same_folder(recorded, self.path):
            other = f"another experiment folder, {quoted(recorded, 240)}"
        elif isinstance(named, str) and named != here:
            other = f"another experiment, {quoted(named)}"
        else:
            return None
        return f"{record} names {other}, not this folder ({self.path}): no record of its driver"

    def _total(self, fields: dict[str, Any]) -> str | None:
        """Read driver.json's ``trials_total`` (``untrusted.trials_total``); a bad one is a
        warning naming the field, and the last good figure stays."""
        try:
            self._trials_total = untrusted.trials_total(fields)
        except untrusted.Invalid as e:
            return f"{e}; showing the last good trial total"
        return None

    def read(self, require_state: bool = False) -> Experiment:
        """The experiment now. ``require_state``: read Tune's experiment state even when the
        probe's table is there, so ``state_read`` says whether a resume could use it."""
        name = split_path(self.path)[1]
        self.state = (STATE_UNKNOWN, "the experiment state was not read")
        info: Any = {}
        pid: int | None = None
        alive: bool | None = None
        driver_problem: str | None = None
        if self.raytop_dir is not None:
            info, _ = self._read_raytop("driver.json")
            check = check_driver(self.raytop_dir)
            pid, alive, driver_problem = check.pid, check.alive, check.record_problem
        info = info if isinstance(info, dict) else {}
        self.record_elsewhere = None
        if self.raytop_dir is not None and driver_problem is None:
            self.record_elsewhere = self._elsewhere(info)
        fields = info
        if self.record_elsewhere is not None:
            # Its driver having ended says nothing about this folder; only a driver proven
            # running with this very raytop dir (its command line names it) still counts.
            alive, fields = (True if alive else None), {}
        if alive is False and self._alive_before is not False and self._probe is not None:
            self._probe.forget()
        self._alive_before = alive
        stopped = alive is False and (self.raytop_dir / STOP_MARKER).exists()
        if stopped:  # a user stop: Tune's saved state says which trials are unfinished
            trials, warnings = self._trials_from_tune_state()
            trials = self._with_probe_histories(trials)
        else:
            trials, warnings = self._trials_from_probe()
        state_trials = trials if stopped else None
        if trials is None:
            if stopped:
                trials, more = self._trials_from_probe()
            else:
                trials, more = self._trials_from_tune_state()
                state_trials = trials
            warnings += more
        elif require_state and not stopped:
            state_trials, more = self._trials_from_tune_state()
            warnings += more
        trials = trials or []
        if driver_problem is not None:
            warnings.insert(0, driver_problem)
        if self.record_elsewhere is not None:
            warnings.insert(0, self.record_elsewhere)
        total_problem = self._total(fields)
        if total_problem is not None:
            warnings.append(total_problem)
        state_read, state_reason = self.state
        if state_read == STATE_OK and state_trials is not None:
            listed = {t.trial_id for t in state_trials}
            lacking = sorted(t.trial_id for t in trials if t.trial_id not in listed)
            if lacking:
                state_read = STATE_INCOMPLETE
                shown = (t if is_plain_name(t) else quoted(t) for t in lacking[:3])
                state_reason = (f"the experiment state lists {len(listed)} trial(s) but not "
                                f"{', '.join(shown)}: not yet synced")  # fmt: skip

        def text(key: str) -> str | None:
            value = fields.get(key)
            return value if isinstance(value, str) else None

        return Experiment(
            name=name,
            path=self.path,
            status=_status(trials, alive, found=bool(info) or bool(trials)),
            metric=text("metric"),
            mode=text("mode"),
            trials=tuple(trials),
            driver_pid=pid,
            driver_alive=alive,
            driver_problem=driver_problem,
            warnings=(*warnings, *self._storage.notices()),  # e.g. folders past the watch cap
            job_id=self._job_id(),
            state_read=state_read,
            state_reason=state_reason,
            trials_total=self._trials_total,
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
