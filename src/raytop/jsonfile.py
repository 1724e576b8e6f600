"""Small files raytop reads and writes itself: atomic writes, bounded reads.

Readers never see a half-written file (write a sibling, then rename over). A read never
blocks on a FIFO (the file is opened non-blocking before its type is known), reads
regular files only and never past its cap: ``read_capped`` says why it did not read
(``Unread``), ``read_json`` says "nothing" instead.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from raytop.model import untrusted

# Unread.kind: why a file was not read.
MISSING = "missing"
NOT_REGULAR = "not_regular"  # a FIFO, device, socket or folder: reading it may never end
TOO_LARGE = "too_large"
UNREADABLE = "unreadable"  # it exists, but opening or reading it failed (strerror)

DIRECTORY = "a directory"  # Unread.what of a folder
_KINDS = (
    (stat.S_ISDIR, DIRECTORY),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class Unread(Exception):
    """A file ``read_capped`` did not read. ``reason`` is the truthful rest of the line
    after the path (``not a regular file (a FIFO): not read``); ``str`` is the whole line;
    ``kind`` lets a caller word a case its own way (``MISSING``: "spec not found"), and
    ``what`` is the file type of one that is ``NOT_REGULAR`` (``a FIFO``, ``DIRECTORY``)."""

    def __init__(self, path: Path, kind: str, reason: str, what: str | None = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.kind = kind
        self.reason = reason
        self.what = what


def _not_regular(path: Path, mode: int) -> Unread:
    what = next((name for test, name in _KINDS if test(mode)), "of an unknown kind")
    return Unread(path, NOT_REGULAR, f"not a regular file ({what}): not read", what)


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; ``Unread``
    (with the reason) when it is missing, not a regular file, over the cap or unreadable.
    Its size is checked before reading and again by what was read (a file may grow)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Unread(path, MISSING, "not found") from None
    except OSError as exc:  # a socket cannot be opened at all (ENXIO): say what it is
        mode = _mode(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise _not_regular(path, mode) from None
        raise Unread(path, UNREADABLE, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:  # a NUL byte, or a lone surrogate the OS cannot be given
        raise Unread(path, UNREADABLE, f"not a usable file name ({exc})") from None
    try:  # the type of the file opened: a FIFO swapped in after a stat is still seen
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        untrusted.check_size(info.st_size, max_bytes)
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = untrusted.read_upto(f, info.st_size, max_bytes)
        untrusted.check_size(len(raw), max_bytes)
        return raw
    except untrusted.Refused as exc:
        raise Unread(path, TOO_LARGE, str(exc)) from None
    except OSError as exc:
        raise Unread(path, UNREADABLE, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Readers never see a half-written file: write a sibling, then rename over (whatever
    was at ``path``, a FIFO or a link included, is replaced, never opened)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1, default=str).encode())


def read_json(path: Path, max_bytes: int = untrusted.MAX_RECORD_BYTES) -> Any | None:
    """The parsed file, or None when ``read_capped`` does not read it (missing,
    unreadable, not a regular file, over ``max_bytes``) or it is not JSON. Callers check
    its shape."""
    try:
        return untrusted.parse(read_capped(path, max_bytes), max_bytes)
    except (Unread, ValueError):
        return None


def open_log(path: Path, mode: str = "ab") -> BinaryIO:
    """``path`` opened for writing a child process's log (``"ab"`` appends, ``"wb"``
    truncates), created if missing. Opened non-blocking and checked: a FIFO planted under
    the log's name (with no reader, ``open`` would wait forever) or a device is an
    ``OSError`` naming the file, which the CLI turns into one line."""
    if mode not in ("ab", "wb"):
        raise ValueError(f"mode {mode!r}: 'ab' or 'wb'")
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags | (os.O_APPEND if mode == "ab" else 0), 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        if mode == "wb":  # only once it is known to be a file
            os.ftruncate(fd, 0)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise
