"""Where raytop keeps its own small state: ``$RAYTOP_HOME`` (default ``~/.raytop``).

It holds the record of an embedded cluster raytop started (``cluster.json``) and the list
of experiments raytop launched (``experiments.json``), so that a bare ``raytop`` can
re-attach after the terminal was closed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def raytop_home() -> Path:
    home = Path(os.environ.get("RAYTOP_HOME") or Path.home() / ".raytop")
    home.mkdir(parents=True, exist_ok=True)
    return home


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


def read_json(path: Path) -> Any | None:
    """The parsed file, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def registered_experiments() -> list[dict[str, Any]]:
    """Experiments raytop launched, oldest first: ``{"name", "path", "raytop_dir"}``."""
    return read_json(raytop_home() / "experiments.json") or []


def register_experiment(name: str, path: str, raytop_dir: Path) -> None:
    entries = [e for e in registered_experiments() if e.get("raytop_dir") != str(raytop_dir)]
    entries.append({"name": name, "path": path, "raytop_dir": str(raytop_dir)})
    write_json_atomic(raytop_home() / "experiments.json", entries)
