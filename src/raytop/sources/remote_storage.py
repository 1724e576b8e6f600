"""Reading an experiment's storage on any filesystem other than a local folder
(``s3://``, ``gs://``, ``file://``… through pyarrow, as Ray Train reads it): polled, each
file and listing at most once per ``period_s``, refreshed in the background so a slow or
unreachable endpoint does not block the faces. The caching and parse-error handling it
shares with a local folder are ``storage_base.Storage``'s."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from raytop.model import untrusted
from raytop.model.format import one_line
from raytop.sources.storage_base import (
    IS_A_FOLDER,
    Entry,
    Storage,
    StorageUnreachable,
    join_rel,
    usable_path,
)

REMOTE_PERIOD_S = 10.0


class RemoteStorage(Storage):
    """A pyarrow filesystem (``s3://bucket/prefix`` …), polled every ``period_s``.

    A remote read can take seconds (an unreachable S3 endpoint: ~6 s of retries), so when
    polling (``period_s > 0``) only the first read of a file or listing waits; after that
    the cached copy is returned at once and a background thread refreshes it when stale.
    The filesystem is resolved on first use: creating it may already touch the network."""

    def __init__(self, uri: str, period_s: float = REMOTE_PERIOD_S) -> None:
        super().__init__()
        self.root = uri
        self.period_s = period_s
        self._fs: Any = None
        self._base = ""
        self._queue: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._pending: set[tuple[str, str]] = set()
        self._refresher: threading.Thread | None = None
        self._how: dict[str, tuple] = {}  # rel → the label, validator and cap it is read with

    def _filesystem(self) -> Any:
        # heavy: pyarrow (~0.5 s), only for remote (URI) storage
        import pyarrow.fs

        if self._fs is None:
            try:
                self._fs, self._base = pyarrow.fs.FileSystem.from_uri(self.root)
            except Exception as exc:
                self.error = one_line(exc, limit=200)
                raise StorageUnreachable(self.error) from None
        return self._fs

    def _fresh(self, rel: str, read_at: float, listing: bool = False) -> bool:
        return time.time() - read_at < self.period_s

    def read_json(
        self,
        rel: str,
        label: str | None = None,
        validate: Callable[[Any], Any] | None = None,
        max_bytes: int = untrusted.MAX_STATE_BYTES,
    ) -> tuple[Any | None, str | None]:
        with self._lock:
            cached = self._files.get(rel)
        if cached is None or self.period_s <= 0:
            return super().read_json(rel, label, validate, max_bytes)
        if not self._fresh(rel, cached[0]):
            self._refresh("file", rel, (label, validate, max_bytes))
        warning = self.unreachable()
        return cached[1], f"{warning}; showing the last copy read" if warning else cached[2]

    def listing(self, rel: str = "") -> list[Entry] | None:
        with self._lock:
            cached = self._listings.get(rel)
        if cached is None or self.period_s <= 0:
            return super().listing(rel)
        if not self._fresh(rel, cached[0]):
            self._refresh("listing", rel)
        return cached[1]

    def _refresh(self, kind: str, rel: str, how: tuple = ()) -> None:
        with self._lock:
            if (kind, rel) in self._pending:
                return
            self._pending.add((kind, rel))
            if kind == "file":
                self._how[rel] = how
            if self._refresher is None:
                self._refresher = threading.Thread(
                    target=self._refresh_loop, name="raytop-storage-poll", daemon=True
                )
                self._refresher.start()
        self._queue.put((kind, rel))

    def _refresh_loop(self) -> None:
        while True:
            kind, rel = self._queue.get()
            try:
                if kind == "file":
                    Storage.read_json(self, rel, *self._how.get(rel, ()))
                else:
                    Storage.listing(self, rel)
            finally:
                with self._lock:
                    self._pending.discard((kind, rel))

    def _path(self, rel: str) -> str:
        """``rel`` on the filesystem (resolved first); ``untrusted.Refused`` if no UTF-8
        name can hold it."""
        return usable_path(join_rel(self._base, rel), "strict")

    def _failed(self, exc: Exception) -> Exception:
        """What a failed open means: a folder where a file was expected is that file's
        problem (pyarrow says "... is a directory"), not the storage's; anything else is
        taken as the storage unreachable."""
        if "is a directory" in str(exc).lower():
            return untrusted.Refused(IS_A_FOLDER)
        self.error = one_line(exc, limit=200)
        return StorageUnreachable(self.error)

    def _read_bytes(self, rel: str, max_bytes: int) -> bytes | None:
        # heavy: pyarrow (~0.5 s), only for remote (URI) storage
        import pyarrow

        fs = self._filesystem()
        path = self._path(rel)
        try:
            with fs.open_input_stream(path) as f:
                data = f.read(max_bytes + 1)
        except FileNotFoundError:
            data = None
        except (OSError, pyarrow.ArrowException) as exc:
            raise self._failed(exc) from None
        self.error = None
        return data

    def _read_tail(self, rel: str, max_bytes: int) -> tuple[bytes, bool] | None:
        # heavy: pyarrow (~0.5 s), only for remote (URI) storage
        import pyarrow

        fs = self._filesystem()
        path = self._path(rel)
        try:
            with fs.open_input_file(path) as f:
                size = f.size()
                start = max(0, size - max_bytes)
                data = f.read_at(size - start, start)
        except FileNotFoundError:
            return None
        except (OSError, pyarrow.ArrowException) as exc:
            raise self._failed(exc) from None
        self.error = None
        return data, start > 0

    def _list(self, rel: str) -> list[Entry] | None:
        # heavy: pyarrow (~0.5 s), only for remote (URI) storage
        import pyarrow.fs

        try:
            fs = self._filesystem()
            infos = fs.get_file_info(pyarrow.fs.FileSelector(self._path(rel)))
        except untrusted.Refused:
            return None
        except (OSError, pyarrow.ArrowException) as exc:
            if not isinstance(exc, FileNotFoundError):
                self.error = one_line(exc, limit=200)
            return None
        self.error = None
        return [
            Entry(
                name=info.base_name,
                is_dir=info.type == pyarrow.fs.FileType.Directory,
                mtime=info.mtime.timestamp() if info.mtime is not None else None,
            )
            for info in infos
        ]
