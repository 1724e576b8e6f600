"""The pipeline derives each rank's state once, with the collector's thresholds."""

from raytop.diagnose.ledger import worker_state
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from tests.unit.test_diagnose_ledger import run, worker


def test_rank_states_are_derived_with_the_thresholds_given():
    r = run(worker(0, 5, 4, age=2.0), worker(1, 4, 4, age=30.0), worker(2, 5, 5, beat=40.0),
            worker(3, 5, 5, done=True), world_size=4)  # fmt: skip
    derived = with_rank_states(r, Thresholds())
    assert [(w.state, w.behind) for w in derived.workers] == [
        ("waiting", 0), ("behind", 1), ("dead", 0), ("done", 0),
    ]  # fmt: skip
    assert all(w.state == worker_state(w, r, Thresholds()) for w in derived.workers)
    # A longer dead_after (the collector's, not a face's default) keeps rank 2 alive.
    patient = with_rank_states(r, Thresholds(dead_after_s=60.0))
    assert patient.workers[2].state == "training"
