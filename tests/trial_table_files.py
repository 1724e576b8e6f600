"""What the TrialProbe left on disk (``probe.trial_table``), read back for a test: the
rows in the order the index names its segments, each file checked as the reader checks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raytop.model import untrusted_trial_table
from raytop.rundir import TRIALS_INDEX, trials_segment


def written_rows(raytop_dir: str | Path) -> list[dict[str, Any]]:
    """The rows as written; every segment is of the index's generation and version, and
    the reader's checks accept the index and every segment."""
    folder = Path(raytop_dir)
    index = json.loads((folder / TRIALS_INDEX).read_text())
    untrusted_trial_table.probe_trial_index(index)
    rows: list[dict[str, Any]] = []
    for k, version in enumerate(index["segments"]):
        segment = json.loads((folder / trials_segment(k)).read_text())
        untrusted_trial_table.probe_trial_segment(segment)
        assert (segment["generation"], segment["version"]) == (index["generation"], version)
        rows += segment["trials"]
    assert len(rows) == index["trials"]
    return rows
