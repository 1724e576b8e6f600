"""Where raytop keeps its own small state: ``$RAYTOP_HOME`` (default ``~/.raytop``).

It holds the record of an embedded cluster raytop started (``cluster.json``) and the list
of experiments raytop launched (``experiments.json``), so that a bare ``raytop`` can
re-attach after the terminal was closed.

Reading it never creates it: a home that is missing, unreadable, a regular file or
malformed reads as "nothing recorded"; writers create what they write
(``write_json_atomic``), and an ``OSError`` from writing there propagates to the caller.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raytop.jsonfile import read_json, write_json_atomic
from raytop.model import untrusted


def raytop_home() -> Path:
    """Where raytop's own state lives (not created here: see the module's docstring)."""
    return Path(os.environ.get("RAYTOP_HOME") or Path.home() / ".raytop")


def registered_experiments() -> list[dict[str, Any]]:
    """Experiments raytop launched, oldest first: ``{"name", "path", "raytop_dir"}``
    (``read_registry`` without its warnings)."""
    return read_registry()[0]


def read_registry() -> tuple[list[dict[str, Any]], list[str]]:
    """(entries, warnings): the experiments raytop launched, and one line per problem of
    ``experiments.json`` naming it. A file that does not read, or of the wrong shape, reads
    as empty; an entry of the wrong shape is left out (the next ``register_experiment``
    rewrites the file without it)."""
    path = raytop_home() / "experiments.json"
    data = read_json(path, untrusted.MAX_REGISTRY_BYTES)
    if data is None:
        if not os.path.lexists(path):
            return [], []
        return [], [f"{path} is unreadable, torn or not JSON: no launched experiment listed"]
    try:
        entries = untrusted.registry(data)
    except untrusted.Invalid as exc:
        return [], [f"{path}: {exc}: no launched experiment listed"]
    good, bad = [], []
    for i, entry in enumerate(entries):
        try:
            good.append(untrusted.registered_experiment(entry, f"[{i}]"))
        except untrusted.Invalid as exc:
            bad.append(str(exc))
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return good, [f"{path}: {bad[0]}{more}: left out"] if bad else []


def register_experiment(name: str, path: str, raytop_dir: Path) -> None:
    entries = [e for e in registered_experiments() if e.get("raytop_dir") != str(raytop_dir)]
    entries.append({"name": name, "path": path, "raytop_dir": str(raytop_dir)})
    write_json_atomic(raytop_home() / "experiments.json", entries)
