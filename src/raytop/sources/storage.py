"""Reading an experiment's storage: Tune's and Train's state files and folder listings.

``experiment_state-*.json`` can be megabytes and ``checkpoint_manager_snapshot.json`` is
rewritten in place by Train; re-reading them at the TUI's 4 Hz would waste the machine,
and reading them mid-write gives a parse error. So:

- a local folder's files and listings are read again only after a watch saw them change,
  or when the cached copy is ``max_age_s`` old (a safety net for filesystems whose changes
  inotify cannot see, e.g. NFS written from another node): ``local_storage.py``, watching
  only the folders it reads inside the root (``folder_watch.py``);
- any other filesystem (``s3://``, ``gs://``… through pyarrow, as Ray Train reads it) is
  polled, each file and listing at most once per ``period_s`` (``remote_storage.py``);
- a file that does not parse, or parses into the wrong shape (a ``model.untrusted``
  validator given by the caller), is re-read a few times, then its last good copy is kept
  and a one-line warning names the file and what was wrong;
- a file over its size cap, nested too deep, or that is not a regular file (a FIFO would
  block the read; a folder is said to be one), is not read at all and not retried; a
  symlink loop, or a path no OS call can take (a NUL byte, a lone surrogate: a name from a
  file joined into a path), is an unreadable entry, never an exception.

Paths are relative to the storage's root (``"experiment_state-….json"``,
``"train_runs/<run>/checkpoint_manager_snapshot.json"``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from raytop.model.paths import is_uri
from raytop.sources.local_storage import LocalStorage
from raytop.sources.remote_storage import REMOTE_PERIOD_S, RemoteStorage
from raytop.sources.storage_base import Storage, real_path


def open_storage(root: str, watch: bool = True) -> Storage:
    """Local folders are watched (if ``watch``); URIs are read through pyarrow and polled
    (``watch=False``: read at every call, for one-shot commands)."""
    if is_uri(root):
        return RemoteStorage(root, REMOTE_PERIOD_S if watch else 0.0)
    return LocalStorage(root, watch=watch)


MAX_LOCATED = 65_536  # paths whose storage is remembered (``Storages.locate``)
# How long a watching ``Storages`` keeps a path's resolution (``Storages.new_read``).
RESOLVE_AGAIN_S = 5.0


class Storages:
    """One storage per root, shared by every reader of a collector: an experiment's
    folder, and a Train run outside any known experiment gets its own. ``watch``: keep
    watching (local) or polling (remote) between reads, for faces that read again and
    again (the TUI, ``run --no-tui``); without it every read goes to storage."""

    def __init__(self, watch: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.watch = watch
        self._by_root: dict[str, Storage] = {}
        # path as asked → its (storage, rel) (``new_read`` says for how long): a
        # collection locates every run's folder twice or more, and resolving a local path
        # (``real_path``) is ~30 µs of system calls (250 runs: ~7 ms a refresh, most of
        # what a refresh reads of storage when nothing changed). A root added forgets
        # them (a deeper root may answer now).
        self._located: dict[str, tuple[Storage, str]] = {}
        self._clock = clock
        self._resolved_at: float | None = None

    def new_read(self) -> None:
        """A collection begins. Without ``watch`` (a one-shot command) every collection
        resolves its paths afresh; a watching one (the TUI, ``run --no-tui``) again every
        ``RESOLVE_AGAIN_S``, so a folder re-pointed (a symlink) is followed within that,
        as its files are re-read within their watch's safety net."""
        now = self._clock()
        if (
            not self.watch
            or self._resolved_at is None
            or now - self._resolved_at >= RESOLVE_AGAIN_S
        ):
            self._located.clear()
            self._resolved_at = now

    def root(self, path: str) -> Storage:
        key = path if is_uri(path) else real_path(path)
        if key not in self._by_root:
            self._by_root[key] = open_storage(key, self.watch)
            self._located.clear()
        return self._by_root[key]

    def locate(self, path: str) -> tuple[Storage, str]:
        """The storage holding ``path`` (the deepest known root above it, else a new one
        rooted at ``path``) and ``path`` relative to its root."""
        found = self._located.get(path)
        if found is None:
            found = self._locate(path)
            if len(self._located) >= MAX_LOCATED:
                self._located.clear()
            self._located[path] = found
        return found

    def _locate(self, path: str) -> tuple[Storage, str]:
        key = path if is_uri(path) else real_path(path)
        bare, _, query = key.partition("?") if is_uri(key) else (key, "", "")
        for root, storage in sorted(self._by_root.items(), key=lambda kv: -len(kv[0])):
            root_bare, _, root_query = root.partition("?") if is_uri(root) else (root, "", "")
            if query != root_query:
                continue
            if bare.rstrip("/") == root_bare.rstrip("/"):
                return storage, ""
            if bare.startswith(root_bare.rstrip("/") + "/"):
                return storage, bare[len(root_bare.rstrip("/")) + 1 :]
        return self.root(key), ""

    def close(self) -> None:
        """Stop every storage's watcher (``SnapshotCollector.close``)."""
        for storage in self._by_root.values():
            storage.close()
