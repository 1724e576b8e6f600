"""Each Train run's checkpoint pipeline, worked out again only when its inputs changed; and
what its folder says of Ray's NCCL hang detector (its verdict, and the line on it).

The pipeline of a run (``diagnose.checkpoints.pipeline``) joins its ranks' upload records
(the ledger's pages), Train's checkpoint snapshot and the folders on storage. At 250 runs
it was the largest part of a refresh where nothing changed (``benchmarks/scale_bench.py``),
so a run keeps its last result while its pages (the very objects the ledger reader holds:
it replaces a page only when it changed), its snapshot (the same object until the file
changes) and its folders' names are the ones it was worked out from. A result that depends
on the time (an upload still in flight, whose duration grows) is never kept. And a run the
ledger reader hands out again (the same object: nothing new said of it) with the same
checkpoints gets the very run it got last time, so the stages after keep theirs too.
"""

from __future__ import annotations

import time
from typing import Any

from raytop.diagnose.checkpoints import pipeline
from raytop.model import CheckpointRecord, TrainRun
from raytop.model.evolve import evolve
from raytop.model.identity import same_items
from raytop.model.nccl_ras import HANG_DETECTOR_DIR
from raytop.pipeline.derive import with_ray_detector, with_restored_checkpoint
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.hang_detector import HangDetectorReader
from raytop.sources.ledger_source import LedgerReader


class RunCheckpoints:
    def __init__(self, snapshots: CheckpointSnapshots, ledger: LedgerReader) -> None:
        self._snapshots = snapshots
        self._ledger = ledger
        self._hangs = HangDetectorReader(snapshots.storages)  # Ray 2.60's NCCL detector
        # (run id, attempt id) → (pages, snapshot, folder names, the pipeline's result)
        self._kept: dict[tuple[str, str], tuple[tuple, Any, Any, tuple[CheckpointRecord, ...]]]
        self._kept = {}
        self._seen: set[tuple[str, str]] = set()
        # (run id, attempt id) → (the run, its checkpoints, Ray's verdict, Train's snapshot,
        # the run made of them)
        self._made: dict[tuple[str, str], tuple[TrainRun, tuple, Any, Any, TrainRun]] = {}

    def of(self, run: TrainRun) -> TrainRun:
        """``run`` with its checkpoint pipeline and its restored checkpoint filled in."""
        snapshot, on_storage = None, None
        if run.run_path:
            snapshot = self._snapshots.read(run.run_path)
            folders = self._snapshots.folders(run.run_path)
            on_storage = None if folders is None else frozenset(f.name for f in folders)
        key = (run.run_id, run.attempt_id)
        self._seen.add(key)
        pages = self._ledger.pages_of(run.run_id, run.attempt_id)
        kept = self._kept.get(key)
        if (
            kept is not None
            and kept[1] is snapshot
            and kept[2] == on_storage
            and same_items(kept[0], pages)
        ):
            checkpoints = kept[3]
        else:
            uploads = self._ledger.uploads(run.run_id, run.attempt_id)
            syncs = self._ledger.syncs(run.run_id, run.attempt_id)
            checkpoints = pipeline(uploads, snapshot, on_storage, time.time(), syncs)
            in_flight = any(u["end"] is None for records in uploads.values() for u in records)
            if in_flight:
                self._kept.pop(key, None)
            else:
                self._kept[key] = (pages, snapshot, on_storage, checkpoints)
        ray_hang = None
        if run.run_path and on_storage and HANG_DETECTOR_DIR in on_storage:
            ray_hang, warning = self._hangs.read(str(run.run_path))
            if warning:
                self._snapshots.warnings.append(warning)
        made = self._made.get(key)
        if (
            made is not None
            and made[0] is run
            and made[1] is checkpoints
            and made[2] == ray_hang
            and made[3] is snapshot
        ):
            return made[4]
        filled = evolve(run, checkpoints=checkpoints, ray_hang=ray_hang)
        filled = with_restored_checkpoint(with_ray_detector(filled), snapshot)
        self._made[key] = (run, checkpoints, ray_hang, snapshot, filled)
        return filled

    def forget_unseen(self) -> None:
        """After a collection: drop what is kept for runs it did not see."""
        for gone in set(self._kept) - self._seen:
            del self._kept[gone]
        for gone in set(self._made) - self._seen:
            del self._made[gone]
        self._seen.clear()
