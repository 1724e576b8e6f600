"""Reads the Flight Recorder dumps a launched NCCL run's ranks wrote under the raytop dir.

``launch.flight_recorder`` points each rank of a torch trial on GPUs at
``<raytop dir>/flight_recorder/<trial id>/rank_`` (``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``):
torch appends the global rank and writes ``rank_<N>`` on a collective's timeout or when
its dump pipe is written to. Each file is untrusted input: only regular files named
``rank_<N>`` are opened (never a FIFO, never through a symlink), each read up to its cap;
a pickle goes through ``model.untrusted_pickle`` (never the plain ``pickle`` module), a
JSON dump through ``json``; then ``model.flight_recorder.parse_dump``. A bad file is one
warning naming it and is left out; reading never raises.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from raytop.model import untrusted
from raytop.model.flight_recorder import RankDump, parse_dump
from raytop.model.paths import is_plain_name
from raytop.model.untrusted_pickle import MAX_PICKLE_BYTES, load_plain_pickle
from raytop.rundir import FLIGHT_RECORDER_DIR

DUMP_NAME = re.compile(r"rank_(\d{1,7})")
MAX_DUMP_FILES = 10_000


@dataclass(frozen=True)
class DumpFile:
    rank: int
    path: Path
    mtime: float


def dump_folder(raytop_dir: Path, trial_id: str) -> Path | None:
    """Where the trial's ranks dump (``launch.trainable`` made it); None for a trial id
    that is not a plain name (``model.paths.is_plain_name``: it comes from the cluster's
    KV store, and ``../x`` would lead out of the raytop dir)."""
    if not is_plain_name(trial_id):
        return None
    return raytop_dir / FLIGHT_RECORDER_DIR / trial_id


def trial_folders(raytop_dir: Path) -> list[tuple[str, Path]]:
    """(trial id, folder) of every trial with a Flight Recorder folder, by name."""
    root = raytop_dir / FLIGHT_RECORDER_DIR
    try:
        names = sorted(os.listdir(root))[:MAX_DUMP_FILES]
    except OSError:
        return []
    return [(n, root / n) for n in names if (root / n).is_dir() and not (root / n).is_symlink()]


def dump_files(folder: Path) -> list[DumpFile]:
    """The ``rank_<N>`` regular files in ``folder`` (symlinks and FIFOs left alone)."""
    try:
        names = os.listdir(folder)[:MAX_DUMP_FILES]
    except OSError:
        return []
    found = []
    for name in names:
        match = DUMP_NAME.fullmatch(name)
        if match is None:
            continue
        try:
            info = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append(DumpFile(int(match.group(1)), folder / name, info.st_mtime))
    return sorted(found, key=lambda f: f.rank)


def read_dump(file: DumpFile, max_bytes: int = MAX_PICKLE_BYTES) -> RankDump:
    """One dump, checked; ``untrusted.Invalid`` (one line) when it cannot be used."""
    try:
        fd = os.open(file.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise untrusted.Invalid(f"cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise untrusted.Refused("not a regular file: not read")
        untrusted.check_size(info.st_size, max_bytes)
        raw = f.read(max_bytes + 1)
    if raw.lstrip()[:1] == b"{":  # torch's JSON dump (_dump_fr_trace_json)
        try:
            data = untrusted.parse(raw, max_bytes)
        except (ValueError, UnicodeDecodeError) as exc:
            raise untrusted.Invalid(untrusted.problem("JSON", exc).removeprefix("JSON: ")) from None
    else:
        untrusted.check_size(len(raw), max_bytes)
        data = load_plain_pickle(raw, max_bytes)
    return parse_dump(data, file.rank)


def read_dumps(folder: Path) -> tuple[list[RankDump], list[str]]:
    """Every readable dump in ``folder``, and one warning per file that is not."""
    dumps, warnings = [], []
    for file in dump_files(folder):
        try:
            dumps.append(read_dump(file))
        except untrusted.Invalid as exc:
            warnings.append(f"{file.path}: {exc}")
    return dumps, warnings
