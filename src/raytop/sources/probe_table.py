"""The TrialProbe's live table of an experiment raytop launched, read in what changed.

The probe writes the table in segments (``probe.trial_table``): ``trials/index.json``
names each segment's version, and a segment is read again only when its version moved, so
a result in a 10,000-trial sweep costs a reader one small index and one 64-row segment,
not the whole table. A driver of an older raytop wrote the table whole, as
``trials.json``: that is read as before (re-read whole when it changes, each row checked
again only when it differs from the last read's).

Every file is untrusted (``model.untrusted``); a bad segment keeps its last good rows with
a warning naming it, and the rest of the table stands. A segment never read good makes the
table unread (None): the reader then lists Tune's own state, which has every trial.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from raytop.model import Trial, untrusted, untrusted_trial_table
from raytop.model.paths import PLAIN_NAME_RULE, is_plain_name, quoted
from raytop.rundir import TRIALS_DIR, TRIALS_INDEX, TRIALS_WHOLE, trials_segment
from raytop.sources.storage import Storages


def odd_ids(trials: tuple[Trial, ...] | list[Trial]) -> list[str]:
    """The trial ids among ``trials`` that are not plain names."""
    return [t.trial_id for t in trials if not is_plain_name(t.trial_id)]


def odd_trial_ids(source: str, odd: list[str]) -> list[str]:
    """One warning (naming ``source``) when trial ids in it are not plain names: no path
    is ever made of them (``model.paths.is_plain_name``), so their runs go unread."""
    if not odd:
        return []
    more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
    return [f"{source}: trial id {quoted(odd[0])}{more} is not a plain name "
            f"({PLAIN_NAME_RULE}): its Train run's checkpoints are not looked for"]  # fmt: skip


class _Segment(NamedTuple):
    generation: str
    version: int
    trials: tuple[Trial, ...]
    odd: tuple[str, ...] = ()


def _segment(data: Any) -> _Segment:
    """A segment checked, its rows made ``Trial``s (what the storage keeps as its last good
    copy: the very objects the table hands on)."""
    checked = untrusted_trial_table.probe_trial_segment(data)
    trials = tuple(Trial(**row) for row in checked["trials"])
    return _Segment(checked["generation"], checked["version"], trials, tuple(odd_ids(trials)))


class ProbeTable:
    """One per launched experiment: its table's segments as last read."""

    def __init__(self, storages: Storages, raytop_dir: Path) -> None:
        self._storages = storages
        self._dir = raytop_dir
        # Inside a local experiment folder it shares that watch; else it gets its own.
        storages.locate(str(raytop_dir))
        self._segments: list[_Segment] = []  # as the index last named them
        self._list: tuple[Trial, ...] = ()
        # The whole table (an older raytop's driver): its rows as last checked
        # (``untrusted.probe_trials``' memo), and each checked row's Trial.
        self._checked: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._by_row: dict[int, tuple[dict[str, Any], Trial]] = {}
        self._rows: list[dict[str, Any]] | None = None  # the rows last made Trials
        self._whole_list: tuple[Trial, ...] = ()
        self._whole_odd: list[str] = []

    def _locate(self, rel: str) -> tuple[Any, str]:
        return self._storages.locate(str(self._dir / rel))

    def forget(self) -> None:
        """Read the index and the whole file afresh next time (the driver just ended: its
        last write came just before)."""
        for rel in (TRIALS_INDEX, TRIALS_WHOLE):
            storage, at = self._locate(rel)
            storage.forget(at)

    def read(self) -> tuple[tuple[Trial, ...] | None, list[str]]:
        """The trials (None: no table yet) and the warnings of this read: the very same
        tuple while the table did not change, so that what is made of it can be kept
        (``pipeline.kept_trials``)."""
        if self._whole_is_newer():
            return self._read_whole()
        storage, rel = self._locate(TRIALS_INDEX)
        index, warning = storage.read_json(
            rel, TRIALS_INDEX, untrusted_trial_table.probe_trial_index,
            untrusted_trial_table.MAX_INDEX_BYTES,
        )  # fmt: skip
        if index is None:
            return (None, [warning]) if warning else self._read_whole()
        warnings = [warning] if warning else []
        generation, segments = index["generation"], []
        changed = len(index["segments"]) != len(self._segments)
        for k, version in enumerate(index["segments"]):
            kept = self._segments[k] if k < len(self._segments) else None
            if kept is not None and (kept.generation, kept.version) == (generation, version):
                segments.append(kept)
                continue
            changed = True
            segment, problem = self._read_segment(k, generation, version)
            if segment is None:
                segment = kept
            if segment is None:  # never read good: Tune's state tells these trials better
                return None, [*warnings, problem or f"{trials_segment(k)}: unread"]
            if problem:
                warnings.append(problem)
            else:  # read as named: not read again until the index moves it on
                segment = segment._replace(version=version)
            segments.append(segment)
        self._segments = segments
        if changed:
            self._list = tuple(t for segment in segments for t in segment.trials)
        odd = [i for segment in segments for i in segment.odd]
        return self._list, warnings + odd_trial_ids(TRIALS_DIR, odd)

    def _read_segment(
        self, k: int, generation: str, version: int
    ) -> tuple[_Segment | None, str | None]:
        """Segment ``k`` as the index names it (of ``generation``, at least ``version``):
        re-read once past a cached copy that is older; else the segment read (or None) and
        a warning saying why it is not the one named."""
        storage, rel = self._locate(trials_segment(k))
        label = trials_segment(k)
        for _ in range(2):
            segment, warning = storage.read_json(
                rel, label, _segment, untrusted_trial_table.MAX_SEGMENT_BYTES
            )
            if warning:
                return segment, warning
            if segment is None:
                return None, f"{label}: missing, though {TRIALS_INDEX} names it"
            if segment.generation == generation and segment.version >= version:
                return segment, None
            storage.forget(rel)
        # The storage keeps what it last read of a file now gone: say which it is.
        why = "older than" if storage.exists(rel) else "missing, though"
        return segment, f"{label}: {why} {TRIALS_INDEX} names it; using the last good copy"

    def _whole_is_newer(self) -> bool:
        """Both forms present (a driver of an older raytop resumed the run): the newer."""
        storage, rel = self._locate(TRIALS_WHOLE)
        folder = rel.rpartition("/")[0]
        entries = {e.name: e for e in storage.listing(folder) or []}
        whole = entries.get(TRIALS_WHOLE)
        if whole is None or whole.is_dir:
            return False
        tables = {e.name: e for e in storage.listing(f"{folder}/{TRIALS_DIR}".lstrip("/")) or []}
        index = tables.get(TRIALS_INDEX.rpartition("/")[2])
        return index is None or (whole.mtime or 0) > (index.mtime or 0)

    def _read_whole(self) -> tuple[tuple[Trial, ...] | None, list[str]]:
        storage, rel = self._locate(TRIALS_WHOLE)
        # Checked row by row (model.untrusted); a bad table keeps its last good copy.
        rows, warning = storage.read_json(rel, TRIALS_WHOLE, self._check_whole)
        warnings = [warning] if warning else []
        if rows is None:
            return None, warnings
        return self._as_trials(rows), warnings + self._whole_odd

    def _check_whole(self, data: Any) -> list[dict[str, Any]]:
        return untrusted.probe_trials(data, self._checked)

    def _as_trials(self, rows: list[dict[str, Any]]) -> tuple[Trial, ...]:
        """The checked rows as Trials; a row checked before (the same object: unchanged
        since) keeps its Trial."""
        if rows is self._rows:  # the file did not change: the very same Trials
            return self._whole_list
        before, self._by_row = self._by_row, {}
        trials = []
        for row in rows:
            kept = before.get(id(row))
            trial = kept[1] if kept is not None and kept[0] is row else Trial(**row)
            self._by_row[id(row)] = (row, trial)  # holding the row keeps its id unique
            trials.append(trial)
        self._rows, self._whole_list = rows, tuple(trials)
        self._whole_odd = odd_trial_ids(TRIALS_WHOLE, odd_ids(trials))
        return self._whole_list
