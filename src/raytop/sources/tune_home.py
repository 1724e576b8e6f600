"""Tune's default storage on this node, read with no flag: the experiments of Tune drivers
raytop did not launch (a ``ray job submit`` of a Tune script, a script run by hand).

Where Ray puts them (checked on Ray 2.58): a Tune run with no ``storage_path`` writes under
``ray.train.constants.DEFAULT_STORAGE_PATH``, ``Path("~/ray_results").expanduser()`` of the
driver's own home; ``tune.RunConfig`` (``ray/air/config.py``) takes the deprecated
``RAY_STORAGE`` variable instead when it is set; ``TUNE_RESULT_DIR`` and
``RAY_AIR_LOCAL_CACHE_DIR`` are no longer read (``ray/tune/tune.py`` raises on them). So:
``~/ray_results`` of raytop's home, and ``RAY_STORAGE`` when it names a local folder (a
URI is for ``--storage``: it would be listed over the network at every refresh).

A home may hold hundreds of old experiments. Only its listing is read (the folders'
times); a folder is opened (listed) only when it may be live or is recent: changed since
the oldest live job of the cluster started (a live Tune driver creates its trials' folders
and its state files after it started; ``alive_since``), or within ``RECENT_S``; at most
``MAX_SHOWN`` of them, the newest. The others are counted (``TuneHome.older``), and read
when asked (``show_all``: ``SnapshotCollector.show_all_experiments``). Never written.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from raytop.model.paths import is_uri, join_path
from raytop.sources.history import MAX_EXPERIMENTS, holds_tune_state, same_place
from raytop.sources.storage import open_storage
from raytop.sources.storage_base import Entry, Storage

STORAGE_ENV = "RAY_STORAGE"  # ray/air/config.py RunConfig.__post_init__
DEFAULT_FOLDER = "~/ray_results"  # ray/train/constants.py DEFAULT_STORAGE_PATH
RECENT_S = 24 * 3600.0  # a folder changed within a day is shown by default
MAX_SHOWN = 50  # folders opened by default per root, the newest


def default_roots() -> list[str]:
    """Tune's default storage folders on this node, as Ray resolves them (existing or
    not: one created later is found then)."""
    roots = [same_place(str(Path(DEFAULT_FOLDER).expanduser()))]
    env = os.environ.get(STORAGE_ENV, "").strip()
    if env and not is_uri(env) and os.path.isabs(os.path.expanduser(env)):
        # A NUL, an unresolvable path: not a folder Ray could use either.
        with contextlib.suppress(OSError, ValueError):
            roots.append(same_place(os.path.expanduser(env)))
    return list(dict.fromkeys(roots))


class TuneHome:
    """The experiment folders under the default roots worth reading now, listed again at
    most every ``period_s`` (0: at every call)."""

    def __init__(self, roots: list[str], period_s: float = 0.0) -> None:
        self.roots = roots
        self._storages: list[Storage] = [open_storage(r, watch=False) for r in roots]
        self.period_s = period_s
        self.show_all = False
        self.older: dict[str, int] = {}  # root → folders not opened (by the last find)
        # (root, folder) → (its time when it was found to hold no Tune state): not opened
        # again until it changes (a Train run's folder, anything else kept there).
        self._not_tune: dict[tuple[str, str], float | None] = {}
        self._found: tuple[float, bool, float | None, list[str]] | None = None

    def find(self, alive_since: float | None, now: float | None = None) -> list[str]:
        """The experiment folders to show: every one when ``show_all`` (at most
        ``MAX_EXPERIMENTS`` per root, the newest), else the live and recent ones.
        ``alive_since``: the start of the cluster's oldest live job (None: none, or no
        cluster). A root that is missing or cannot be listed is no warning: nobody
        asked for it."""
        now = time.time() if now is None else now
        kept = self._found
        if (kept is not None and time.monotonic() - kept[0] < self.period_s
                and kept[1] == self.show_all and kept[2] == alive_since):  # fmt: skip
            return kept[3]
        since = now - RECENT_S if alive_since is None else min(now - RECENT_S, alive_since)
        paths: list[str] = []
        for root, storage in zip(self.roots, self._storages, strict=True):
            listing = storage.listing("") or []
            folders = [e for e in listing if e.is_dir and not e.name.startswith(".")]
            folders.sort(key=lambda e: (e.mtime or 0.0, e.name), reverse=True)
            if self.show_all:
                chosen = folders[:MAX_EXPERIMENTS]
            else:
                chosen = [e for e in folders if (e.mtime or 0.0) >= since][:MAX_SHOWN]
            self.older[root] = len(folders) - len(chosen)
            listed = {(root, e.name) for e in folders}
            self._not_tune = {k: t for k, t in self._not_tune.items()
                              if k[0] != root or k in listed}  # fmt: skip
            paths += [join_path(root, e.name) for e in chosen
                      if self._holds_tune(root, storage, e)]  # fmt: skip
        self._found = (time.monotonic(), self.show_all, alive_since, paths)
        return paths

    def _holds_tune(self, root: str, storage: Storage, entry: Entry) -> bool:
        key = (root, entry.name)
        if key in self._not_tune and self._not_tune[key] == entry.mtime:
            return False
        if holds_tune_state(storage.listing(entry.name) or []):
            self._not_tune.pop(key, None)
            return True
        self._not_tune[key] = entry.mtime
        return False
