"""``model.evolve`` is ``dataclasses.replace`` for the pipeline's hot paths: same result."""

import dataclasses

import pytest

from raytop.model import Worker
from raytop.model.evolve import evolve


def test_evolve_equals_replace_and_leaves_the_original_alone():
    worker = Worker(rank=3, reports_entered=2, report_times=(1.0, 2.0), activity=None)
    changed = evolve(worker, heartbeat_at=1.5, state="training")
    assert changed == dataclasses.replace(worker, heartbeat_at=1.5, state="training")
    assert worker.heartbeat_at is None and worker.state == ""
    assert type(changed) is Worker and hash(changed.report_times) == hash((1.0, 2.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.state = "dead"  # type: ignore[misc]
    with pytest.raises(TypeError, match="Worker has no field 'stat'"):
        evolve(worker, stat="training")
