"""Ray's NCCL hang detector's verdict on one Train run, from the run's folder on storage
(``model.nccl_ras`` says what Ray writes there and how it is read).

Asked only for a run whose folder has a ``hang_detector`` folder (its listing is already
read for the checkpoint pipeline), so a run without one costs nothing. Through
``sources.storage``: local or remote, cached, regular files only, the newest poll read up
to its cap; a poll that does not parse is a warning naming it, and the verdict still
stands on the files' presence.
"""

from __future__ import annotations

import fnmatch

from raytop.model.nccl_ras import (
    HANG_DETECTOR_DIR,
    MAX_RAS_BYTES,
    POLL_GLOB,
    RAS_DIR,
    STACKS_DIR,
    RayHangVerdict,
    Unreadable,
    parse_poll,
)
from raytop.model.paths import join_path
from raytop.sources.storage import Storages

MAX_STACK_RANKS = 4096


def _rank_of(name: str) -> int | None:
    number = name.removeprefix("rank_").removesuffix(".log")
    return int(number) if name.startswith("rank_") and number.isdigit() else None


class HangDetectorReader:
    def __init__(self, storages: Storages) -> None:
        self._storages = storages

    def read(self, run_path: str) -> tuple[RayHangVerdict | None, str | None]:
        """(Ray's verdict on the run, or None when its detector confirmed nothing; a
        warning when its newest poll cannot be read)."""
        storage, rel = self._storages.locate(run_path)
        base = join_path(rel, HANG_DETECTOR_DIR) if rel else HANG_DETECTOR_DIR
        polls = sorted(
            (e for e in storage.listing(join_path(base, RAS_DIR)) or []
             if not e.is_dir and fnmatch.fnmatch(e.name, POLL_GLOB)),
            key=lambda e: e.name,
        )  # fmt: skip
        stacks = [e for e in storage.listing(join_path(base, STACKS_DIR)) or [] if not e.is_dir]
        if not polls and not stacks:
            return None, None
        times = [e.mtime for e in (*polls, *stacks) if e.mtime is not None]
        ranks = sorted(r for r in map(_rank_of, (e.name for e in stacks)) if r is not None)
        communicators, lagging, warning = 0, (), None
        if polls:
            label = f"{HANG_DETECTOR_DIR}/{RAS_DIR}/{polls[-1].name}"
            tail = storage.read_tail(join_path(base, RAS_DIR, polls[-1].name),
                                     MAX_RAS_BYTES + 1, label)  # fmt: skip
            warning = tail.warning
            if tail.mid_file:
                warning = f"{label}: over {MAX_RAS_BYTES} bytes, not read"
            elif tail.data is not None:
                try:
                    communicators, lagging = parse_poll(tail.data)
                except Unreadable as exc:
                    warning = f"{label}: {exc}"
        verdict = RayHangVerdict(
            confirmed_at=max(times) if times else None,
            folder=join_path(run_path, HANG_DETECTOR_DIR),
            communicators=communicators,
            lagging=lagging,
            stack_ranks=tuple(ranks[:MAX_STACK_RANKS]),
        )
        return verdict, warning
