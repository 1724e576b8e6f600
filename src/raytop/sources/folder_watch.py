"""Watching the folders a local storage reads, inside its root, and no others.

``watchfiles.watch`` of an experiment folder is recursive and follows symlinks: a link
inside the experiment to a tree of 2,041 folders added 2,043 inotify watches, and a link
to ``/`` would use up the user's inotify limit. So the storage registers each folder as
it lists it or reads a file from it (``since``), and only those are watched, each on its
own (``recursive=False``):

- a folder whose realpath is outside the root (reached through a link out of the
  experiment) is never watched, nor is one past ``MAX_WATCHED_FOLDERS`` (one warning names
  the root): their copies are trusted until the storage's max age, as on NFS, where
  inotify sees no change either;
- when the set grows, a new watcher is started on the whole set and the old one is
  stopped only once the new one is up, so no change falls between the two; a folder's
  copies are trusted only if read after its own watch was up (``since``);
- a watched folder that is deleted, or replaced by another of its name, took its watch
  with it: it is registered afresh at its next read.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from raytop.model.format import one_line

MAX_WATCHED_FOLDERS = 2048
NEVER_WATCHED = 0.0  # ``since`` of a folder outside the root or past the cap


@dataclass(eq=False)
class _Watcher:
    """One ``watchfiles`` thread over a fixed set of folders."""

    folders: frozenset[str]  # less any deleted since: what it really watches
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None  # set before it starts
    up: bool = False  # it has yielded once: its watches are in place


class FolderWatch:
    """The watched folders of one local storage (absolute paths under ``root``, itself a
    realpath), and when each was last seen to change."""

    def __init__(self, root: str, max_age_s: float, max_folders: int | None = None) -> None:
        self.root = root
        self.max_age_s = max_age_s
        self.max_folders = MAX_WATCHED_FOLDERS if max_folders is None else max_folders
        self._lock = threading.Lock()
        self._decided: dict[str, bool] = {}  # folder → watched (True) or never (False)
        self._wanted: set[str] = set()  # the folders to watch
        self._since: dict[str, float] = {}  # folder → when its watch was known to be up
        self._changed: dict[str, float] = {}  # path → when a change to it was seen
        self._current: _Watcher | None = None
        self._starting: _Watcher | None = None
        self._failed_on: frozenset[str] | None = None  # the set that could not be watched
        self._error: str | None = None
        self._over_cap = 0  # folders read but not watched: past the cap
        self._closed = False
        self._threads: list[threading.Thread] = []  # those that may still run

    @property
    def watching(self) -> bool:
        """Whether a watcher is up (its folders' copies can be trusted)."""
        return self._current is not None and self._current.up

    def alive(self) -> bool:
        """Whether any of its watcher threads still runs (after ``close``: not for long)."""
        return any(t.is_alive() for t in self._threads)

    def since(self, folder: str) -> float | None:
        """When copies read from ``folder`` (a file in it, or its listing) began to be
        trustworthy: its watch's start; ``NEVER_WATCHED`` for one outside the root or past
        the cap (trusted until max age); None while it is not watched, or not there.
        Registers ``folder`` on first sight."""
        with self._lock:
            decided = self._decided.get(folder)
            if decided is not None:
                return self._since.get(folder) if decided else NEVER_WATCHED
        inside = self._inside(folder)
        if inside is None:
            return None
        with self._lock:
            if self._closed or folder in self._decided:
                return None
            if not inside or len(self._wanted) >= self.max_folders:
                if inside:
                    self._over_cap += 1
                self._decided[folder] = False
                return NEVER_WATCHED
            self._decided[folder] = True
            self._wanted.add(folder)
            self._spawn()
        return None

    def _inside(self, folder: str) -> bool | None:
        """Whether ``folder`` is a folder inside the root (None: not there, or no OS call
        can take its path: asked again at its next read)."""
        try:
            real = os.path.realpath(folder)
            if not os.path.isdir(folder):
                return None
        except (OSError, ValueError):
            return None
        return real == self.root or real.startswith(self.root.rstrip("/") + "/")

    def changed_at(self, path: str) -> float:
        """When a change to ``path`` (a file, or a folder's entries) was last seen."""
        return self._changed.get(path, 0.0)

    def warning(self) -> str | None:
        """One line while some folders read are not watched: past the cap, or the watch
        failed (e.g. the user's inotify limit)."""
        with self._lock:
            watched = self._current.folders if self._current is not None else frozenset()
            unwatched = len(self._wanted - watched)
        if self._error is not None and unwatched:
            return (f"{self.root}: {unwatched} folder(s) cannot be watched ({self._error}): "
                    "their files are read again at every refresh")  # fmt: skip
        if self._over_cap:
            return (f"{self.root}: {self._over_cap} folder(s) read past the {self.max_folders} "
                    f"watched: their files are read again every {self.max_age_s:g} s")  # fmt: skip
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for watcher in (self._current, self._starting):
                if watcher is not None:
                    watcher.stop.set()

    # -- the watcher threads (the lock is held by every method below but _run) ----------

    def _spawn(self) -> None:
        """Start a watcher on the wanted set unless one is starting (it will start the
        next when it is up), the set is already watched, or it failed on this very set."""
        wanted = frozenset(self._wanted)
        if self._closed or self._starting is not None or not wanted:
            return
        if self._current is not None and self._current.folders == wanted:
            return
        if wanted == self._failed_on:
            return
        watcher = _Watcher(wanted)
        watcher.thread = threading.Thread(
            target=self._run, args=(watcher,), name="raytop-watch", daemon=True
        )
        self._starting = watcher
        self._threads = [t for t in self._threads if t.is_alive()] + [watcher.thread]
        watcher.thread.start()

    def _run(self, watcher: _Watcher) -> None:
        # heavy: watchfiles' Rust extension, only once a local folder is watched
        import watchfiles

        error = None
        try:
            # A short debounce: a changed file must not wait long to be re-read. The
            # timeout's empty yield says the watches are in place. A folder it may not
            # watch is skipped, not the end of all watching (its copies: max age).
            for changes in watchfiles.watch(
                *sorted(watcher.folders), recursive=False, debounce=50, step=10,
                stop_event=watcher.stop, rust_timeout=1000, yield_on_timeout=True,
                raise_interrupt=False, watch_filter=None, ignore_permission_denied=True,
            ):  # fmt: skip
                now = time.time()
                with self._lock:
                    if not watcher.up:
                        self._up(watcher, now)
                    self._record(changes, now)
        except Exception as exc:  # inotify limits, a folder gone
            error = one_line(exc, limit=200)
        with self._lock:
            ours = watcher is self._current or watcher is self._starting
            if watcher is self._current:  # stopped (closed) or died: its copies untrusted
                self._current = None
                for folder in watcher.folders:
                    self._since.pop(folder, None)
            if watcher is self._starting:
                self._starting = None
            if ours and error is not None:
                self._failed(watcher, error)

    def _up(self, watcher: _Watcher, now: float) -> None:
        """``watcher``'s watches are in place: its new folders are trusted from now on,
        and the watcher it replaces (whose folders it also watches) can stop."""
        watcher.up = True
        for folder in watcher.folders:
            self._since.setdefault(folder, now)
        replaced, self._current, self._starting = self._current, watcher, None
        self._error = None
        if replaced is not None:
            replaced.stop.set()
        self._spawn()  # folders registered meanwhile

    def _record(self, changes: set, now: float) -> None:
        for change, path in changes:
            # A file's change also changes its folder's listing.
            self._changed[path] = now
            self._changed[os.path.dirname(path)] = now
            if self._decided.get(path) and change.name in ("added", "deleted"):
                # A watched folder itself went (or another took its name): its watch is
                # gone; registered afresh at its next read, it gets a new one.
                self._since.pop(path, None)
                self._decided.pop(path, None)
                self._wanted.discard(path)
                for watcher in (self._current, self._starting):
                    if watcher is not None:
                        watcher.folders = watcher.folders - {path}

    def _failed(self, watcher: _Watcher, error: str) -> None:
        """A watcher could not start (or died): without the folders gone since it was
        asked for, the next one may; else say why, and do not try this set again."""
        gone = {f for f in watcher.folders if not os.path.isdir(f)}
        for folder in gone:
            self._decided.pop(folder, None)
            self._wanted.discard(folder)
        if not gone:
            self._failed_on, self._error = watcher.folders, error
        self._spawn()
