"""The TrialProbe's table on disk, in segments: one trial's result costs the Tune driver a
few hundred microseconds however many trials the sweep has.

The table used to be one file, rewritten whole whenever a trial reported: at 10,000 trials
6.5 MB and ~225 ms of the user's Tune driver per write. Now (in the raytop dir; the names
are ``rundir``'s):

- ``trials/<k>.json``: ``{"generation", "version", "trials": [row…]}``, the k-th
  ``SEGMENT_ROWS`` trials in the order this driver first saw them;
- ``trials/index.json``: ``{"updated_at", "generation", "trials", "segments": [version…]}``,
  written after the segments it names, so a reader that finds a segment older than its
  version in the index has a stale copy, not the driver's.

Each row is kept serialized, so a changed row costs its own ``json.dumps`` and its
segment's write (atomic rename), not a pass over the table. ``generation`` is new in
every driver process: a resumed driver starts its versions afresh, and a reader tells
its segments from the last process's by it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from raytop.jsonfile import write_atomic
from raytop.model.untrusted_trial_table import SEGMENT_ROWS
from raytop.rundir import TRIALS_INDEX, trials_segment


class TrialSegments:
    """The segments and index of one driver process (``generation``)."""

    def __init__(self, raytop_dir: Path) -> None:
        self._dir = raytop_dir
        self.generation = uuid.uuid4().hex
        self._position: dict[str, int] = {}  # trial id → its row's place in the table
        self._rows: list[list[str]] = []  # per segment, each row as JSON
        self._versions: list[int] = []  # per segment, its last write's version

    def put(self, rows: list[dict[str, Any]]) -> None:
        """Write the segments holding ``rows`` (each with its ``trial_id``; a trial not seen
        before is added at the end), then the index. On an ``OSError`` nothing is counted
        as written: the caller puts the same rows again later."""
        touched: dict[int, list[str]] = {}
        pending: dict[str, int] = {}
        size = len(self._position)
        for row in rows:
            trial_id = row["trial_id"]
            place = self._position.get(trial_id, pending.get(trial_id))
            if place is None:
                place = pending[trial_id] = size
                size += 1
            k, i = divmod(place, SEGMENT_ROWS)
            if k not in touched:
                touched[k] = list(self._rows[k]) if k < len(self._rows) else []
            segment = touched[k]
            text = json.dumps(row, default=str)
            if i < len(segment):
                segment[i] = text
            else:
                segment.append(text)
        versions = list(self._versions)
        for k in sorted(touched):
            version = versions[k] + 1 if k < len(versions) else 1
            head = f'{{"generation": "{self.generation}", "version": {version}, "trials": [\n'
            body = ",\n".join(touched[k])
            write_atomic(self._dir / trials_segment(k), (head + body + "\n]}\n").encode())
            if k < len(versions):
                versions[k] = version
            else:
                versions.append(version)
        index = {
            "updated_at": time.time(),
            "generation": self.generation,
            "trials": size,
            "segments": versions,
        }
        write_atomic(self._dir / TRIALS_INDEX, json.dumps(index).encode())
        self._position.update(pending)
        for k in sorted(touched):  # new segments are the last ones, in order
            if k < len(self._rows):
                self._rows[k] = touched[k]
            else:
                self._rows.append(touched[k])
        self._versions = versions
