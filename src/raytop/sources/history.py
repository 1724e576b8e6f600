"""History from storage alone (``--storage PATH``): which folders under a storage path are
Tune experiments, and what Tune left in each trial's folder (RAY_NOTES f): the last
results of ``result.json`` (JSON lines, only its end is read) and the last failure of
``error.txt``.

Read only, like every reader here: a listing, a bounded read from the end of a file, never
a write, never an import of user code. Each file is untrusted: a size cap (only the tail
is read), malformed lines skipped with a warning naming the file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from raytop.model import untrusted_ray_files
from raytop.model.paths import is_uri, join_path, local_path
from raytop.rundir import TRAIN_RUNS_DIR
from raytop.sources.storage import Entry, Storage, Storages, open_storage

MAX_EXPERIMENTS = 500  # per storage path: a bigger folder is listed in part, with a warning
LOCAL_RELIST_S = 5.0  # how often a watched storage path is listed again for new experiments
RESULT_FILE, ERROR_FILE = "result.json", "error.txt"


def holds_tune_state(storage: Storage, rel: str = "") -> bool:
    """Whether folder ``rel`` of ``storage`` holds a Tune experiment's state."""
    tuner = join_path(rel, "tuner.pkl") if rel else "tuner.pkl"
    return storage.exists(tuner) or bool(storage.glob(rel, "experiment_state-*.json"))


def same_place(path: str) -> str:
    """A key under which two spellings of one folder compare equal."""
    return path.rstrip("/") if is_uri(path) else os.path.realpath(local_path(path))


class ExperimentFolders:
    """The Tune experiment folders directly under each storage path (or the path itself
    when it is one), listed again at most every ``period_s`` (0: at every call)."""

    def __init__(self, roots: list[str], period_s: float = 0.0) -> None:
        self.roots = [r.rstrip("/") if is_uri(r) else same_place(r) for r in roots]
        self._storages = [open_storage(root, watch=False) for root in self.roots]
        self.period_s = period_s
        self._found: tuple[float, list[str], list[str]] | None = None

    def find(self) -> tuple[list[str], list[str]]:
        """(experiment folders, warnings): a storage path that cannot be listed is one
        warning naming it; the others are still searched."""
        if self._found is not None and time.monotonic() - self._found[0] < self.period_s:
            return self._found[1], self._found[2]
        paths: list[str] = []
        warnings: list[str] = []
        for root, storage in zip(self.roots, self._storages, strict=True):
            entries = storage.listing("")
            if entries is None:
                why = storage.error or "not found or not readable"
                warnings.append(f"--storage {root}: cannot be listed ({why})")
                continue
            if holds_tune_state(storage):
                paths.append(root)
                continue
            folders = sorted(e.name for e in entries if e.is_dir and not e.name.startswith("."))
            found = [n for n in folders if holds_tune_state(storage, n)]
            if len(found) > MAX_EXPERIMENTS:
                warnings.append(
                    f"--storage {root}: {len(found)} experiments, showing the first "
                    f"{MAX_EXPERIMENTS} by name"
                )
                found = found[:MAX_EXPERIMENTS]
            paths += [join_path(root, n) for n in found]
        self._found = (time.monotonic(), paths, warnings)
        return paths, warnings


@dataclass(frozen=True)
class TrialHistory:
    """What a trial's folder says: its metric's last values and its last failure."""

    metric_history: tuple[float, ...] = ()
    error: str | None = None
    warnings: tuple[str, ...] = ()


class TrialFiles:
    """Reads the trial folders of experiments through the collector's ``Storages`` (so a
    local experiment shares its watch, a remote one its polling)."""

    def __init__(self, storages: Storages) -> None:
        self.storages = storages

    def _entries(self, path: str, sub: str = "") -> list[Entry]:
        storage, rel = self.storages.locate(path)
        where = join_path(rel, sub) if rel and sub else (rel or sub)
        return storage.listing(where) or []

    def trial_folder(self, experiment_path: str, trial_id: str) -> str | None:
        """The folder Tune made for ``trial_id`` (``<trainable>_<trial id>_<n>_<params>_<time>``),
        the newest if several name it."""
        marks = (f"_{trial_id}_",)
        named = [
            e for e in self._entries(experiment_path)
            if e.is_dir and (any(m in e.name for m in marks) or e.name.endswith(f"_{trial_id}"))
        ]  # fmt: skip
        if not named:
            return None
        return max(named, key=lambda e: (e.mtime or 0.0, e.name)).name

    def read(
        self, experiment_path: str, folder: str, metric: str | None, want_error: bool
    ) -> TrialHistory:
        """The trial's history from its folder ``folder`` of ``experiment_path``."""
        storage, rel = self.storages.locate(experiment_path)
        base = join_path(rel, folder) if rel else folder
        warnings: list[str] = []
        history: tuple[float, ...] = ()
        if metric:
            tail = storage.read_tail(
                join_path(base, RESULT_FILE), untrusted_ray_files.RESULT_TAIL_BYTES,
                f"{folder}/{RESULT_FILE}",
            )  # fmt: skip
            if tail.warning:
                warnings.append(tail.warning)
            if tail.data is not None:
                history, bad = untrusted_ray_files.result_tail(tail.data, tail.mid_file, metric)
                if bad:
                    warnings.append(f"{folder}/{RESULT_FILE}: {bad} malformed line(s) skipped")
        error = None
        if want_error:
            tail = storage.read_tail(
                join_path(base, ERROR_FILE), untrusted_ray_files.ERROR_TAIL_BYTES,
                f"{folder}/{ERROR_FILE}",
            )  # fmt: skip
            if tail.warning:
                warnings.append(tail.warning)
            if tail.data is not None:
                error = untrusted_ray_files.error_line(tail.data)
        return TrialHistory(history, error, tuple(warnings))

    def train_runs(self, experiment_path: str) -> list[str]:
        """The Train run folders under the experiment's ``train_runs``."""
        return sorted(e.name for e in self._entries(experiment_path, TRAIN_RUNS_DIR) if e.is_dir)

    def state_metric(self, experiment_path: str) -> str | None:
        """The metric named in Tune's newest experiment state (as Tune picks it)."""
        storage, rel = self.storages.locate(experiment_path)
        names = storage.glob(rel, "experiment_state-*.json")
        if not names:
            return None
        data, _warning = storage.read_json(join_path(rel, names[-1]) if rel else names[-1])
        return untrusted_ray_files.tune_state_metric(data)
