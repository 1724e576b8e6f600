"""What every storage backend shares: the folder entry, the cached reads with their
parse-error handling (``Storage``), and the path helpers. ``local_storage.py`` and
``remote_storage.py`` build on it; ``storage.py`` chooses between them. The policy (what is
re-read when, what a bad file becomes) is described in ``storage.py``.

Paths are relative to the storage's root (``"experiment_state-….json"``,
``"train_runs/<run>/checkpoint_manager_snapshot.json"``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raytop.model import untrusted
from raytop.model.paths import join_path, local_path

PARSE_RETRIES = 3
LOCAL_MAX_AGE_S = 5.0


@dataclass(frozen=True)
class Entry:
    """One entry of a folder listing."""

    name: str
    is_dir: bool
    mtime: float | None


def _digest(raw: bytes) -> bytes:
    """A file's bytes, told apart from others': its length and BLAKE2b digest."""
    return len(raw).to_bytes(8, "big") + hashlib.blake2b(raw, digest_size=16).digest()


class Storage:
    """The caching and parse-error handling; subclasses say how to read and when a cached
    copy is still good."""

    root: str
    error: str | None = None  # why the storage itself could not be reached, last time

    def unreachable(self) -> str | None:
        """A one-line warning while the storage cannot be reached (else None)."""
        return unreachable(self.root, self.error) if self.error else None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # rel → (read at, parsed or last good copy, the warning of that read)
        self._files: dict[str, tuple[float, Any, str | None]] = {}
        self._last_good: dict[str, Any] = {}
        self._good_digests: dict[str, bytes | None] = {}  # rel → its last good bytes' digest
        self._listings: dict[str, tuple[float, list[Entry] | None]] = {}
        self._tails: dict[str, tuple[float, Tail]] = {}
        self.reads = 0  # files actually read (for tests and benchmarks)
        self.lists = 0  # folders actually listed (likewise)

    # -- what subclasses provide ----------------------------------------------------

    def _read_bytes(self, rel: str, max_bytes: int) -> bytes | None:
        """The file's bytes; None if it does not exist; OSError if unreadable;
        ``untrusted.Refused`` (read no further) over ``max_bytes``."""
        raise NotImplementedError

    def _list(self, rel: str) -> list[Entry] | None:
        """The folder's entries; None if it does not exist or cannot be listed."""
        raise NotImplementedError

    def _read_tail(self, rel: str, max_bytes: int) -> tuple[bytes, bool] | None:
        """The file's last ``max_bytes`` bytes and whether they start inside it; None if it
        does not exist; OSError if unreadable; ``untrusted.Refused`` if not a file."""
        raise NotImplementedError

    def _fresh(self, rel: str, read_at: float, listing: bool = False) -> bool:
        """Whether the copy of file (or, ``listing``, folder) ``rel`` read at ``read_at``
        is still good."""
        raise NotImplementedError

    def notices(self) -> tuple[str, ...]:
        """One-line warnings about the storage itself (not one file), e.g. folders it
        cannot watch; shown with the experiment it holds."""
        return ()

    def close(self) -> None:
        """Stop watching (if watching)."""

    # -- reads -------------------------------------------------------------------------

    def read_json(
        self,
        rel: str,
        label: str | None = None,
        validate: Callable[[Any], Any] | None = None,
        max_bytes: int = untrusted.MAX_STATE_BYTES,
    ) -> tuple[Any | None, str | None]:
        """(data, warning): the parsed file (None if absent), passed through ``validate``
        (a ``model.untrusted`` check: its result is what is returned and kept). A file that
        does not parse or validate is retried, then its last good copy is returned with a
        one-line warning naming ``label`` (default: the file's name); one refused unread
        (over ``max_bytes``, nested too deep, not a regular file) or that the OS cannot
        read (no permission) is not retried: its warning says which."""
        with self._lock:
            cached = self._files.get(rel)
        if cached is not None and self._fresh(rel, cached[0]):
            return cached[1], cached[2]
        read_at = time.time()
        name = label or rel.rsplit("/", 1)[-1]
        invalid: untrusted.Invalid | None = None
        for attempt in range(PARSE_RETRIES):
            try:
                self.reads += 1
                raw = self._read_bytes(rel, max_bytes)
                digest = None if raw is None else _digest(raw)
                with self._lock:
                    if digest is not None and self._good_digests.get(rel) == digest:
                        # The very bytes of its last good read (a watched file is read
                        # again every max_age_s as a safety net): that copy, not parsed
                        # and checked again (250 runs' snapshots: ~40 ms every 5 s).
                        good = self._last_good.get(rel)
                        self._files[rel] = (read_at, good, None)
                        return good, None
                data = None if raw is None else untrusted.parse(raw, max_bytes)
                if raw is not None and data is None:  # None means absent: a null is bad
                    raise untrusted.Invalid("top level: expected a dict or a list, got null")
                if data is not None and validate is not None:
                    data = validate(data)
            except StorageUnreachable as exc:
                warning = unreachable(self.root, str(exc))
                with self._lock:
                    self._files[rel] = (read_at, self._last_good.get(rel), warning)
                return self._last_good.get(rel), warning
            except untrusted.Refused as exc:
                return self._keep(rel, read_at, f"{name}: {exc}")
            except untrusted.Invalid as exc:
                invalid = exc
                if attempt + 1 < PARSE_RETRIES:
                    time.sleep(0.05)
                continue
            except OSError as exc:  # not torn: re-reading at once will not help
                return self._keep(rel, read_at, f"{name} is unreadable ({exc.strerror or exc})")
            except ValueError:  # not JSON (yet): torn mid-write, or never JSON
                invalid = None
                if attempt + 1 < PARSE_RETRIES:
                    time.sleep(0.05)
                continue
            with self._lock:
                last = self._last_good.get(rel)
                if data is None:
                    data = last  # gone: keep what was last seen
                elif last is not None and data == last:
                    # Read again only for its age (a watched copy too, every max_age_s):
                    # the same content is the same object, so what callers made of it
                    # (a run's checkpoint pipeline, ``pipeline.run_checkpoints``) is kept.
                    data = last
                    self._good_digests[rel] = digest
                else:
                    self._last_good[rel] = data
                    self._good_digests[rel] = digest
                self._files[rel] = (read_at, data, None)
            return data, None
        if invalid is not None:
            return self._keep(rel, read_at, f"{name}: {invalid}")
        return self._keep(rel, read_at, f"{name} is unreadable (partly written?)")

    def _keep(self, rel: str, read_at: float, problem: str) -> tuple[Any | None, str]:
        """The last good copy, and the warning saying so. Cached like a good read, so a
        file that stays bad is not re-read (and re-warned about) faster than a good one."""
        with self._lock:
            good = self._last_good.get(rel)
            warning = f"{problem}; " + (
                "using the last good copy" if good is not None else "no good copy yet"
            )
            self._files[rel] = (read_at, good, warning)
        return good, warning

    def read_tail(self, rel: str, max_bytes: int, label: str | None = None) -> Tail:
        """The end of a file that only grows (a trial's result.json, error.txt): at most
        its last ``max_bytes`` bytes, whatever its size, cached like ``read_json``. A file
        that cannot be read is a ``Tail`` with a warning naming ``label``."""
        with self._lock:
            cached = self._tails.get(rel)
        if cached is not None and self._fresh(rel, cached[0]):
            return cached[1]
        read_at = time.time()
        name = label or rel.rsplit("/", 1)[-1]
        try:
            self.reads += 1
            found = self._read_tail(rel, max_bytes)
            tail = Tail(None, False) if found is None else Tail(found[0], found[1])
        except untrusted.Refused as exc:
            tail = Tail(None, False, f"{name}: {exc}")
        except OSError as exc:  # StorageUnreachable included
            tail = Tail(None, False, f"{name} is unreadable ({exc.strerror or exc})")
        with self._lock:
            self._tails[rel] = (read_at, tail)
        return tail

    def forget(self, rel: str) -> None:
        """Read ``rel`` again next time, whatever the watch says: for a moment when the
        file is known to have just changed (the driver's last write before it ended) and a
        change event may still be on its way."""
        with self._lock:
            self._files.pop(rel, None)

    def listing(self, rel: str = "") -> list[Entry] | None:
        """The entries of a folder under the root (None: absent or unlistable)."""
        with self._lock:
            cached = self._listings.get(rel)
        if cached is not None and self._fresh(rel, cached[0], listing=True):
            return cached[1]
        read_at = time.time()
        self.lists += 1
        entries = self._list(rel)
        with self._lock:
            self._listings[rel] = (read_at, entries)
        return entries

    def glob(self, rel: str, pattern: str) -> list[str]:
        """Names of the files (not folders) in folder ``rel`` matching ``pattern``, sorted:
        a folder named ``experiment_state-….json`` is not Tune's newest state."""
        return sorted(
            e.name
            for e in self.listing(rel) or []
            if not e.is_dir and fnmatch.fnmatch(e.name, pattern)
        )

    def exists(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        return any(e.name == name for e in self.listing(folder) or [])


@dataclass(frozen=True)
class Tail:
    """The end of a file (``Storage.read_tail``): ``data`` None when it is absent or could
    not be read (then ``warning`` says why); ``mid_file``: ``data`` starts inside it."""

    data: bytes | None
    mid_file: bool
    warning: str | None = None


def join_rel(root: str, rel: str) -> str:
    return join_path(root, rel) if rel else root


def unreachable(root: str, why: str) -> str:
    """The one line for a storage that cannot be reached: never "no experiment"."""
    return f"{root}: storage unreachable ({why})"


class StorageUnreachable(OSError):
    """The filesystem could not be reached (not a torn file: no point re-reading)."""


def usable_path(path: str, encoding_errors: str = "surrogateescape") -> str:
    """``path`` if an OS call can take it; else ``untrusted.Refused`` saying why. A name
    read from a file (a trial id in Tune's state) may hold a NUL byte or a lone surrogate,
    on which ``os.open`` raises ValueError / UnicodeEncodeError. Local names keep the
    surrogates Python made of undecodable bytes (``surrogateescape``: real files); a remote
    filesystem takes UTF-8 only (``strict``)."""
    if "\0" in path:
        raise untrusted.Refused("its path holds a NUL byte: not read")
    try:
        path.encode("utf-8", encoding_errors)
    except UnicodeEncodeError:
        raise untrusted.Refused(
            "its path holds a character no file name can (a lone surrogate): not read"
        ) from None
    return path


IS_A_FOLDER = "is a folder, not a file"


def real_path(path: str) -> str:
    """The absolute, symlink-free path. ``os.path.realpath``, not ``Path.resolve``: on a
    symlink loop that raises RuntimeError, this leaves the looping part as it is. A path
    no OS call can take (``usable_path``) is only made absolute: its reads say why."""
    try:
        return os.path.realpath(local_path(path))
    except ValueError:  # UnicodeEncodeError included
        return os.path.abspath(local_path(path))
