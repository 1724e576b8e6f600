"""A local experiment folder (``storage_base.Storage``): its files and listings read with plain
OS calls, never blocking (a FIFO is opened non-blocking and refused by its type), and the
folders it reads watched (``folder_watch``), so a copy is read again only after its file
or folder changed, or when ``max_age_s`` old where no watch can see."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from raytop.model import untrusted
from raytop.sources.folder_watch import FolderWatch
from raytop.sources.storage_base import (
    IS_A_FOLDER,
    LOCAL_MAX_AGE_S,
    Entry,
    Storage,
    join_rel,
    real_path,
    usable_path,
)


class LocalStorage(Storage):
    """A local folder: the folders it reads are watched (``sources.folder_watch``), each
    copy trusted until its file or folder is seen to change, or for ``max_age_s`` where
    no watch can see (outside the root, past the cap); unwatched (``watch=False``:
    one-shot commands) every read goes to the disk."""

    def __init__(
        self, root: str | Path, max_age_s: float = LOCAL_MAX_AGE_S, watch: bool = True
    ) -> None:
        super().__init__()
        self.root = real_path(str(root))
        self.max_age_s = max_age_s
        self.watch = watch
        self._watch = FolderWatch(self.root, max_age_s) if watch else None
        self._watched(self.root)  # the root is read first: its watch starts now

    @property
    def watching(self) -> bool:
        """Whether its folders' watch is up."""
        return self._watch is not None and self._watch.watching

    def notices(self) -> tuple[str, ...]:
        warning = self._watch.warning() if self._watch is not None else None
        return (warning,) if warning else ()

    def _watched(self, folder: str) -> float | None:
        """Since when copies read from ``folder`` are trusted (None: not yet); registers
        it to be watched."""
        return self._watch.since(folder.rstrip("/") or "/") if self._watch else None

    def _fresh(self, rel: str, read_at: float, listing: bool = False) -> bool:
        if self._watch is None or time.time() - read_at >= self.max_age_s:
            return False
        since = self._watched(join_rel(self.root, rel if listing else rel.rpartition("/")[0]))
        if since is None or read_at < since:
            return False
        return self._watch.changed_at(join_rel(self.root, rel).rstrip("/")) < read_at

    def _open(self, rel: str) -> tuple[int, os.stat_result] | None:
        """An fd open on regular file ``rel`` and its stat; None if it does not exist;
        ``untrusted.Refused`` (closed again) if it is anything but a regular file."""
        self._watched(join_rel(self.root, rel.rpartition("/")[0]))
        try:
            # Non-blocking: a FIFO planted under the file's name must not hang the reader.
            fd = os.open(usable_path(join_rel(self.root, rel)), os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise untrusted.Refused(IS_A_FOLDER)
            if not stat.S_ISREG(info.st_mode):
                raise untrusted.Refused("not a regular file: not read")
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def _read_bytes(self, rel: str, max_bytes: int) -> bytes | None:
        opened = self._open(rel)
        if opened is None:
            return None
        fd, info = opened
        with os.fdopen(fd, "rb") as f:
            untrusted.check_size(info.st_size, max_bytes)
            return untrusted.read_upto(f, info.st_size, max_bytes)

    def _read_tail(self, rel: str, max_bytes: int) -> tuple[bytes, bool] | None:
        opened = self._open(rel)
        if opened is None:
            return None
        fd, info = opened
        with os.fdopen(fd, "rb") as f:
            start = max(0, info.st_size - max_bytes)
            f.seek(start)
            # at most max_bytes, in a buffer of what is there (and what it grew by since)
            return untrusted.read_upto(f, info.st_size - start, max_bytes - 1), start > 0

    def _list(self, rel: str) -> list[Entry] | None:
        self._watched(join_rel(self.root, rel))
        try:
            with os.scandir(usable_path(join_rel(self.root, rel))) as it:
                return [entry for e in it if (entry := _entry(e)) is not None]
        except (OSError, untrusted.Refused):
            return None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()


def _entry(e: os.DirEntry) -> Entry | None:
    """One listed entry; a dangling link or a symlink loop is listed as a plain file (its
    own time), so one bad entry cannot hide the folder's others."""
    try:
        return Entry(e.name, e.is_dir(), e.stat().st_mtime)
    except OSError:
        try:
            return Entry(e.name, False, e.stat(follow_symlinks=False).st_mtime)
        except OSError:
            return None
