"""History from storage alone (``--storage PATH``): which folders under a storage path are
Tune experiments, and what Tune left in each trial's folder: the last
results of ``result.json`` (JSON lines, only its end is read) and the last failure of
``error.txt``.

Read only, like every reader here: a listing, a bounded read from the end of a file, never
a write, never an import of user code. Each file is untrusted: a size cap (only the tail
is read), malformed lines skipped with a warning naming the file.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from raytop.model import untrusted_ray_files
from raytop.model.paths import is_uri, join_path, local_path
from raytop.rundir import TRAIN_RUNS_DIR
from raytop.sources.storage import Storages, open_storage
from raytop.sources.storage_base import Entry, Storage

MAX_EXPERIMENTS = 500  # per storage path: a bigger folder is listed in part, with a warning
LOCAL_RELIST_S = 5.0  # how often a watched storage path is listed again for new experiments
RESULT_FILE, ERROR_FILE = "result.json", "error.txt"
STATE_FILES = "experiment_state-*.json"
UNLISTABLE = "not found or not readable"


def holds_tune_state(entries: list[Entry]) -> bool:
    """Whether a folder listed as ``entries`` holds a Tune experiment's state (files only:
    a folder named ``experiment_state-….json`` is not one)."""
    return any(
        not e.is_dir and (e.name == "tuner.pkl" or fnmatch.fnmatch(e.name, STATE_FILES))
        for e in entries
    )


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
                why = storage.unreachable() or f"{root}: cannot be listed ({UNLISTABLE})"
                warnings.append(f"--storage {why}")
                continue
            if holds_tune_state(entries):
                paths.append(root)
                continue
            folders = sorted(e.name for e in entries if e.is_dir and not e.name.startswith("."))
            found = [n for n in folders if holds_tune_state(storage.listing(n) or [])]
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


def match_trial_folders(entries: Iterable[Entry], trial_ids: Iterable[str]) -> dict[str, str]:
    """Each trial id's folder among ``entries``: one whose name holds ``_<id>_`` or ends
    with ``_<id>`` (Tune's ``<trainable>_<trial id>_<n>_<params>_<time>``), the newest
    (by time, then name) if several do. One pass over the names: each is cut at its
    underscores, and each run of as many pieces as an id has is looked up among the ids;
    asking the listing once per trial made reading 5,000 trials' history take minutes."""
    ids = set(trial_ids)
    lengths = {i.count("_") + 1 for i in ids}
    best: dict[str, Entry] = {}
    for entry in entries:
        if not entry.is_dir:
            continue
        pieces = entry.name.split("_")
        runs = ("_".join(pieces[i : i + n]) for i in range(1, len(pieces)) for n in lengths
                if i + n <= len(pieces))  # fmt: skip
        named = {run for run in runs if run in ids}
        for trial_id in named:
            kept = best.get(trial_id)
            if kept is None or (entry.mtime or 0.0, entry.name) > (kept.mtime or 0.0, kept.name):
                best[trial_id] = entry
    return {trial_id: entry.name for trial_id, entry in best.items()}


class ExperimentFiles:
    """One experiment folder as one read sees it: listed once, and what is read through
    that listing: Tune's metric, each trial's folder, its result.json and error.txt, the
    Train run folders (``TrialFiles.of``)."""

    def __init__(self, storage: Storage, rel: str, entries: list[Entry], files: TrialFiles) -> None:
        self.storage, self.rel, self.entries = storage, rel, entries
        self._files = files

    def _path(self, *names: str) -> str:
        return join_path(self.rel, *names) if self.rel else join_path(*names)

    def trial_folders(self, trial_ids: Iterable[str]) -> dict[str, str]:
        """The folder Tune made for each of ``trial_ids`` (those it has one for)."""
        return self._files.matched(self, tuple(trial_ids))

    def read(self, folder: str, metric: str | None, want_error: bool) -> TrialHistory:
        """The trial's history from its folder ``folder``."""
        warnings: list[str] = []
        history: tuple[float, ...] = ()
        if metric:
            tail = self.storage.read_tail(
                self._path(folder, RESULT_FILE), untrusted_ray_files.RESULT_TAIL_BYTES,
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
            tail = self.storage.read_tail(
                self._path(folder, ERROR_FILE), untrusted_ray_files.ERROR_TAIL_BYTES,
                f"{folder}/{ERROR_FILE}",
            )  # fmt: skip
            if tail.warning:
                warnings.append(tail.warning)
            if tail.data is not None:
                error = untrusted_ray_files.error_line(tail.data)
        return TrialHistory(history, error, tuple(warnings))

    def train_runs(self) -> list[str]:
        """The Train run folders under the experiment's ``train_runs``."""
        entries = self.storage.listing(self._path(TRAIN_RUNS_DIR)) or []
        return sorted(e.name for e in entries if e.is_dir)

    def state_metric(self) -> str | None:
        """The metric named in Tune's newest experiment state (as Tune picks it)."""
        names = sorted(
            e.name for e in self.entries if not e.is_dir and fnmatch.fnmatch(e.name, STATE_FILES)
        )
        if not names:
            return None
        data, _warning = self.storage.read_json(self._path(names[-1]))
        return untrusted_ray_files.tune_state_metric(data)


class TrialFiles:
    """Reads the trial folders of experiments through the collector's ``Storages`` (so a
    local experiment shares its watch, a remote one its polling). Keeps each experiment's
    last match of trial ids to folders while its listing is the same copy (a watched,
    unchanged folder): the TUI asks at every refresh."""

    def __init__(self, storages: Storages) -> None:
        self.storages = storages
        self._matches: dict[tuple[str, str], tuple[list[Entry], tuple[str, ...], dict]] = {}

    def of(self, experiment_path: str) -> ExperimentFiles:
        """The experiment folder ``experiment_path``, listed now (once for the read)."""
        storage, rel = self.storages.locate(experiment_path)
        return ExperimentFiles(storage, rel, storage.listing(rel) or [], self)

    def matched(self, files: ExperimentFiles, trial_ids: tuple[str, ...]) -> dict[str, str]:
        key = (files.storage.root, files.rel)
        kept = self._matches.get(key)
        if kept is not None and kept[0] is files.entries and kept[1] == trial_ids:
            return kept[2]
        found = match_trial_folders(files.entries, trial_ids)
        self._matches[key] = (files.entries, trial_ids, found)
        return found
