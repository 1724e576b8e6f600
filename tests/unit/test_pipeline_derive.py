"""The pipeline derives each rank's state once, with the collector's thresholds, and
joins what an attempt restored (its ranks' checkpoint folder) with Train's snapshot."""

import dataclasses

from raytop.diagnose.retries import progress_backwards_findings
from raytop.model import Attempt
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states, with_restored_checkpoint
from tests.unit.test_diagnose_ledger import run, worker


def test_rank_states_are_derived_with_the_thresholds_given():
    r = run(worker(0, 5, 4, age=2.0), worker(1, 4, 4, age=30.0), worker(2, 5, 5, beat=40.0),
            worker(3, 5, 5, done=True), world_size=4)  # fmt: skip
    derived = with_rank_states(r, Thresholds())
    assert [(w.state, w.behind) for w in derived.workers] == [
        ("waiting", 0), ("behind", 1), ("dead", 0), ("done", 0),
    ]  # fmt: skip
    # A longer dead_after (the collector's, not a face's default) keeps rank 2 alive.
    patient = with_rank_states(r, Thresholds(dead_after_s=60.0))
    assert patient.workers[2].state == "training"


SNAPSHOT = {
    "checkpoint_results": [
        {"checkpoint_dir_name": "checkpoint_a", "metrics": {"epoch": 2, "loss": 0.5}},
        {"checkpoint_dir_name": "checkpoint_b",
         "metrics": {"epoch": 3, "note": "text", "flag": True, "bad": float("nan")}},
    ],
    "latest_checkpoint_result": {"checkpoint_dir_name": "checkpoint_b", "metrics": {}},
}  # fmt: skip


def resumed(*names, restored=None, first=None):
    """A new controller's first attempt whose ranks say they started from ``names``."""
    workers = tuple(worker(r, 1, 1, restored_from=n) for r, n in enumerate(names))
    attempt = Attempt(1, "running", 0.0, attempt_id="a1", restored=restored,
                      first_report=first)  # fmt: skip
    return dataclasses.replace(run(*workers, world_size=len(names)), attempts=(attempt,))


def test_a_new_controller_restoring_an_earlier_checkpoint_gets_its_metrics_from_storage():
    joined = with_restored_checkpoint(resumed("checkpoint_b", "checkpoint_b",
                                              first={"epoch": 0.0}), SNAPSHOT)  # fmt: skip
    (attempt,) = joined.attempts
    assert attempt.restored_from == "checkpoint_b"
    assert attempt.restored == {"epoch": 3.0}  # only finite numbers, never a flag or text
    (back,) = progress_backwards_findings(joined)
    assert back.evidence["checkpoint"] == "checkpoint_b" and back.evidence["restored"] == 3.0


def test_what_the_runprobe_knew_is_kept_and_only_positive_evidence_fills_a_gap():
    known = resumed("checkpoint_b", restored={"epoch": 9.0})
    assert with_restored_checkpoint(known, SNAPSHOT).attempts[0].restored == {"epoch": 9.0}
    # ranks that disagree, a folder Train has no record of, no snapshot, a fresh start
    for unsure, snapshot in ((resumed("checkpoint_a", "checkpoint_b"), SNAPSHOT),
                             (resumed("checkpoint_z"), SNAPSHOT),
                             (resumed("checkpoint_b"), None),
                             (resumed(None, None), SNAPSHOT)):  # fmt: skip
        assert with_restored_checkpoint(unsure, snapshot).attempts[0].restored is None
    no_attempts = run(worker(0, 1, 1, restored_from="checkpoint_b"))
    assert with_restored_checkpoint(no_attempts, SNAPSHOT) == no_attempts
