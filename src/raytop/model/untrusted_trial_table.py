"""The TrialProbe's table in segments (``probe.trial_table``), as untrusted input:
``trials/index.json`` names each segment's version; ``trials/<k>.json`` holds the k-th
``SEGMENT_ROWS`` trials, each row checked like a row of the whole table of an older raytop
(``untrusted.probe_trial``).

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

from typing import Any

from raytop.model.untrusted import MAX_TRIALS, at, fail, integer, obj, probe_trial, seq, text

SEGMENT_ROWS = 64
MAX_SEGMENTS = -(-MAX_TRIALS // SEGMENT_ROWS)
# Size caps: a row is ~650 bytes (a config of a few values); 256 KiB a row leaves room for
# a large config, and the index is a version per segment.
MAX_SEGMENT_BYTES = SEGMENT_ROWS * 256 * 1024
MAX_INDEX_BYTES = 1024 * 1024
_GENERATION_CHARS = frozenset("0123456789abcdef")


def _generation(table: dict[str, Any], where: str = "") -> str:
    """Which driver process wrote the table: up to 32 hex digits."""
    value = text(table, "generation", where, nonempty=True)
    if len(value) > 32 or not set(value) <= _GENERATION_CHARS:
        raise fail(at(where, "generation"), "up to 32 hex digits", value[:40])
    return value


def probe_trial_index(data: Any) -> dict[str, Any]:
    """``{"updated_at", "generation", "segments": [version…]}``: the segments' versions, in
    order. The index is written after the segments it names, so a segment older than its
    version here is a stale copy, not the driver's."""
    table = obj(data)
    versions = seq(table.get("segments"), "segments", MAX_SEGMENTS)
    for i, version in enumerate(versions):
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise fail(at("segments", i), "a version (an integer >= 1)", version)
    return {"generation": _generation(table), "segments": tuple(versions)}


def probe_trial_segment(data: Any) -> dict[str, Any]:
    """``{"generation", "version", "trials": [row…]}``: at most ``SEGMENT_ROWS`` rows, each
    checked like a row of the whole table (``probe_trial``); one bad row makes the segment
    bad (its last good copy is kept)."""
    table = obj(data)
    rows = seq(table.get("trials"), "trials", SEGMENT_ROWS)
    return {
        "generation": _generation(table),
        "version": integer(table, "version", minimum=1),
        "trials": [probe_trial(row, f"trials[{i}]") for i, row in enumerate(rows)],
    }
