"""What the pipeline derives from what the sources read, before any face sees it.

Faces only display: a rank's state and how far behind it is are computed here, once per
snapshot, with the collector's thresholds (``--stall-after`` …), never with a second
default in a widget.
"""

from __future__ import annotations

import dataclasses

from raytop.diagnose.ledger import rank_states
from raytop.model import TrainRun
from raytop.model.thresholds import Thresholds


def with_rank_states(run: TrainRun, thresholds: Thresholds) -> TrainRun:
    """``run`` with every worker's ``state`` and ``behind`` filled in."""
    states = rank_states(run, thresholds)
    workers = tuple(
        dataclasses.replace(w, state=states[w.rank][0], behind=states[w.rank][1])
        for w in run.workers
    )
    return dataclasses.replace(run, workers=workers)
