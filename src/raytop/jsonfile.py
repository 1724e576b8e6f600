"""Small JSON files raytop writes and reads itself: atomic writes, capped reads.

Readers never see a half-written file (write a sibling, then rename over); a read never
blocks on a FIFO, never reads past its cap, and says "nothing" instead of raising.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from raytop.model import untrusted


def write_json_atomic(path: Path, data: Any) -> None:
    """Readers never see a half-written file: write a sibling, then rename over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path, max_bytes: int = untrusted.MAX_RECORD_BYTES) -> Any | None:
    """The parsed file, or None when it is missing, unreadable, not a regular file (a FIFO
    would block), over ``max_bytes`` or not JSON. Callers check its shape."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                return None
            return untrusted.parse(f.read(max_bytes + 1), max_bytes)
    except (OSError, ValueError):
        return None
