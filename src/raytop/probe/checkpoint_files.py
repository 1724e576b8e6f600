"""The files a rank put into a checkpoint: their sizes, and a content hash of each file
under the caps, so that raytop tells replicated state (every DDP rank saving the same
weights) from ranks overwriting each other's different files (``diagnose.checkpoint_copies``).

The hash is blake2b with a 16-byte digest, of files up to ``HASH_MAX_FILE_BYTES`` each, at
most ``HASH_MAX_CHECKPOINT_BYTES`` and ``HASH_MAX_FILES`` per checkpoint
(``model.records``). It is taken while Train uploads the same bytes: small checkpoints in
the calling thread (microseconds), larger ones in a thread of their own started when the
upload starts, which the end of the upload waits for (at most ``HASH_WAIT_S``): the local
folder must not change under it (the user's ``TemporaryDirectory`` goes when ``report``
returns). Costs measured in docs/PERFORMANCE.md. A file that is not a regular file, changed
size since it was listed, or could not be read goes unhashed: never compared, never a
collision.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time

from raytop.model.records import (
    HASH_MAX_CHECKPOINT_BYTES,
    HASH_MAX_FILE_BYTES,
    HASH_MAX_FILES,
    CheckpointUpload,
)

MAX_FILES = 200  # files listed per checkpoint (enough to spot a collision)
INLINE_BYTES = 1024 * 1024  # at most this much is hashed in the calling thread
HASH_WAIT_S = 5.0  # the longest the end of an upload waits for its hashes
CHUNK = 1024 * 1024


def list_files(path: str | None) -> dict[str, int]:
    """Relative path → size of a local checkpoint folder (bounded)."""
    files: dict[str, int] = {}
    if not path or not os.path.isdir(path):
        return files
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            try:
                files[os.path.relpath(full, path)] = os.path.getsize(full)
            except OSError:
                continue
            if len(files) >= MAX_FILES:
                return files
    return files


def to_hash(files: dict[str, int]) -> dict[str, int]:
    """The files of a listing that are hashed: each under the file cap, in listing order
    until the checkpoint's byte or file cap."""
    chosen: dict[str, int] = {}
    total = 0
    for path, size in files.items():
        if not 0 <= size <= HASH_MAX_FILE_BYTES or total + size > HASH_MAX_CHECKPOINT_BYTES:
            continue
        chosen[path] = size
        total += size
        if len(chosen) >= HASH_MAX_FILES:
            break
    return chosen


def file_hash(path: str, size: int, stop: threading.Event) -> str | None:
    """blake2b-128 hex of the regular file at ``path`` when it still has ``size`` bytes;
    None otherwise, or when ``stop`` is set meanwhile. Opened non-blocking: a FIFO in the
    folder is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return None
        digest = hashlib.blake2b(digest_size=16)
        read = 0
        while read <= size and not stop.is_set():
            chunk = f.read(CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            read += len(chunk)
        return digest.hexdigest() if read == size and not stop.is_set() else None


class FileHasher:
    """The content hashes of one checkpoint folder's files under the caps: ``start`` when
    its upload starts, ``result`` when it ends."""

    def __init__(self, root: str, files: dict[str, int]) -> None:
        self.root = root
        self.todo = to_hash(files)
        self._hashes: dict[str, str] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if sum(self.todo.values()) <= INLINE_BYTES:
            self._run()
            return
        self._thread = threading.Thread(target=self._run, name="raytop-hash", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for path, size in self.todo.items():
            digest = file_hash(os.path.join(self.root, path), size, self._stop)
            with self._lock:
                if self._stop.is_set():
                    return
                if digest is not None:
                    self._hashes[path] = digest

    def result(self, timeout: float = HASH_WAIT_S) -> dict[str, str]:
        """The hashes taken by now, after waiting at most ``timeout`` for the rest; the
        thread stops at once after (its folder may change from then on)."""
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            self._stop.set()
            return dict(self._hashes)


class UploadInFlight:
    """One checkpoint upload as the probe records it (``CheckpointUpload``), between the
    start and the end of Train's transfer, with the hashing of its files."""

    def __init__(self, record: CheckpointUpload, hasher: FileHasher | None) -> None:
        self.record = record
        self.hasher = hasher

    def failed(self, exc: BaseException) -> None:
        self.record["error"] = f"{type(exc).__name__}: {exc}"[:300]

    def ended(self) -> None:
        """The upload's end (its time first: the wait for the hashes is not the upload's),
        then the hashes, given as a new dict: the flush thread copies the record while
        this runs."""
        self.record["end"] = time.time()
        if self.hasher is not None:
            self.record["hashes"] = self.hasher.result()


def start_upload(record: CheckpointUpload, local_path: str | None) -> UploadInFlight:
    """``record``'s upload begun, its files' hashing started (none without a folder)."""
    hasher = FileHasher(local_path, record["files"]) if local_path else None
    if hasher is not None:
        hasher.start()
    return UploadInFlight(record, hasher)
