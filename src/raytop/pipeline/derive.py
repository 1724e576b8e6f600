"""What the pipeline derives from what the sources read, before any face sees it.

Faces only display: a rank's state and how far behind it is are computed here, once per
snapshot, with the collector's thresholds (``--stall-after`` …), never with a second
default in a widget. What an attempt restored is joined here too: the probe's checkpoint
folder name with Train's own record of that checkpoint's metrics on storage.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from raytop.diagnose.ledger import rank_states
from raytop.model import TrainRun
from raytop.model.evolve import evolve
from raytop.model.records import MAX_METRIC_KEY_CHARS, MAX_REPORT_METRICS
from raytop.model.thresholds import Thresholds


def with_rank_states(run: TrainRun, thresholds: Thresholds) -> TrainRun:
    """``run`` with every worker's ``state`` and ``behind`` filled in."""
    states = rank_states(run, thresholds)
    workers = tuple(
        evolve(w, state=states[w.rank][0], behind=states[w.rank][1]) for w in run.workers
    )
    return dataclasses.replace(run, workers=workers)


def with_restored_checkpoint(run: TrainRun, snapshot: dict[str, Any] | None) -> TrainRun:
    """``run`` with its current attempt's restored checkpoint named, and its metrics filled
    in from the run's checkpoint snapshot (``checkpoint_manager_snapshot.json``, already
    shape-checked) when the RunProbe could not know them: the first attempt of a new
    controller that resumed the run (``raytop resume``, a re-run with the same name) starts
    from a checkpoint an earlier controller reported. Only on positive evidence: every rank
    that said names the same folder, and Train's snapshot holds that folder's metrics."""
    names = {w.restored_from for w in run.workers if w.restored_from}
    if len(names) != 1 or not run.attempts:
        return run
    (name,) = names
    current = [a for a in run.attempts if a.attempt_id == run.attempt_id] or [run.attempts[-1]]
    attempt = current[-1]
    restored = attempt.restored
    if restored is None:
        restored = _checkpoint_metrics(snapshot, name)
    filled = dataclasses.replace(attempt, restored=restored, restored_from=name)
    attempts = tuple(filled if a is attempt else a for a in run.attempts)
    return dataclasses.replace(run, attempts=attempts)


def _checkpoint_metrics(snapshot: dict[str, Any] | None, name: str) -> dict[str, float] | None:
    """The finite scalar metrics Train recorded for checkpoint folder ``name``."""
    for result in (snapshot or {}).get("checkpoint_results", []):
        if result.get("checkpoint_dir_name") != name:
            continue
        metrics = result.get("metrics") or {}
        kept: dict[str, float] = {}
        for key, value in metrics.items():
            if len(kept) >= MAX_REPORT_METRICS:
                break
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if isinstance(key, str) and math.isfinite(value):
                kept[key[:MAX_METRIC_KEY_CHARS]] = float(value)
        return kept or None
    return None
