"""Validators of the checkpoint part of a rank's ledger record: its checkpoint uploads
(with the files it put into each, their sizes and content hashes) and its report-barrier
waits, as ``model.untrusted_kv`` reads a page. Apart from it so that each stays a size a
reader takes in at once.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

from typing import Any

from raytop.model.records import HASH_HEX_CHARS, CheckpointUpload, Wait
from raytop.model.untrusted import at, fail, flag, integer, number, obj, text

_NUMBER_OR_NONE = frozenset({int, float, type(None)})  # not bool: type(True) is bool


def barrier_wait(sync: Any, where: str) -> Wait:
    """One ``[report, start, end]`` of a rank's recent barrier waits, a plain tuple
    (``model.records.Wait``)."""
    if type(sync) is list and len(sync) == 3:  # the usual shape, checked inline
        report, start, end = sync
        if (
            type(report) in _NUMBER_OR_NONE
            and type(start) in _NUMBER_OR_NONE
            and (type(end) in _NUMBER_OR_NONE)
        ):
            return report, start, end
    if (
        not isinstance(sync, list)
        or len(sync) != 3
        or not all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in sync
        )
    ):
        raise fail(where, "[report, start, end] (numbers)", sync)
    report, start, end = sync
    return report, start, end


def upload(record: Any, where: str) -> CheckpointUpload:
    """One checkpoint upload record of a rank (``ReportProbe.upload_started``)."""
    raw = obj(record, where)
    dir_name = text(raw, "dir_name", where)
    start = number(raw, "start", where)
    end, sync_s = (number(raw, key, where, optional=True) for key in ("end", "sync_s"))
    report = integer(raw, "report", where, optional=True, minimum=None)
    error, mode = (text(raw, key, where, optional=True) for key in ("error", "mode"))
    custom_upload = flag(raw, "custom_upload", where)
    files = obj(raw.get("files") or {}, at(where, "files"))
    record = CheckpointUpload(
        dir_name=dir_name, report=report, mode=mode, custom_upload=custom_upload,
        files={path: integer(files, path, at(where, "files"), minimum=None) for path in files},
        sync_s=sync_s, start=start, end=end, error=error,
    )  # fmt: skip
    if "hashes" in raw:  # absent from older probes' records, which read back as they were
        record["hashes"] = _hashes(raw["hashes"])
    return record


MAX_HASHES = 1_000  # hashed files of one upload record: more drops the field
_HEX = frozenset("0123456789abcdef")


def _hashes(value: Any) -> dict[str, str]:
    """Relative path → content hash: optional (older probes send none), so a value of the
    wrong shape drops the field and a hash that is not ``HASH_HEX_CHARS`` lowercase hex
    drops that entry, never the rank (the file then counts as unhashed)."""
    if not isinstance(value, dict) or len(value) > MAX_HASHES:
        return {}
    return {
        path: digest for path, digest in value.items()
        if isinstance(path, str) and isinstance(digest, str)
        and len(digest) == HASH_HEX_CHARS and _HEX.issuperset(digest)
    }  # fmt: skip
