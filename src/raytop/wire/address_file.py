"""Ray's "latest cluster on this host" file, ``<Ray temp dir>/ray_current_cluster``: where a
plain ``ray.init()`` with no address looks first. ``ray stop`` removes it; a head ended by a
signal (raytop's embedded cluster: its ``ray start --block`` sent SIGTERM) leaves it naming
a dead address, and the next plain ``ray.init()`` on the machine then tries to join that
address until it times out instead of starting a cluster of its own
(docs/RAY_FACTS.md#current-cluster-file). Stdlib only: the path is Ray's convention
(``ray._common.utils.get_ray_address_file`` on 2.60), not a call into Ray."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

FILE_NAME = "ray_current_cluster"
MAX_BYTES = 256  # an address; anything larger is not the file this names


def address_file(environ: Mapping[str, str] = os.environ) -> Path:
    """Where a ``ray start`` run with ``environ`` writes the file (Ray's own order)."""
    if "RAY_TMPDIR" in environ:
        base = environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in environ:
        base = environ["TMPDIR"]
    elif sys.platform.startswith(("darwin", "linux")):
        base = "/tmp"
    else:
        base = tempfile.gettempdir()
    return Path(base) / "ray" / FILE_NAME


def forget(path: Path, address: str) -> bool:
    """Remove ``path`` when it is that file and names ``address`` (a cluster raytop has
    stopped) and nothing else: a file naming another cluster, or anything else, is left."""
    try:
        if path.name != FILE_NAME or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return False
        if path.read_text(errors="replace").strip() != address:
            return False
        path.unlink()
    except OSError:
        return False
    return True
