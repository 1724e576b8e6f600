"""The pipeline derives each rank's state once, with the collector's thresholds, and
joins what an attempt restored (its ranks' checkpoint folder) with Train's snapshot."""

import dataclasses

from raytop.diagnose.retries import progress_backwards_findings
from raytop.model import Attempt, Worker
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states, with_restored_checkpoint
from tests.unit.test_diagnose_ledger import NOW, run, worker


def test_rank_states_are_derived_with_the_thresholds_given():
    r = run(worker(0, 5, 4, age=2.0), worker(1, 4, 4, age=30.0), worker(2, 5, 5, beat=40.0),
            worker(3, 5, 5, done=True), world_size=4)  # fmt: skip
    derived = with_rank_states(r, Thresholds(), NOW)
    assert [(w.state, w.behind) for w in derived.workers] == [
        ("waiting", 0), ("behind", 1), ("dead", 0), ("done", 0),
    ]  # fmt: skip
    # A longer dead_after (the collector's, not a face's default) keeps rank 2 alive.
    patient = with_rank_states(r, Thresholds(dead_after_s=60.0), NOW)
    assert patient.workers[2].state == "training"


def test_a_rank_has_one_interval_and_one_rate_the_median_of_its_history():
    steady = Worker(0, report_times=(0.0, 2.0, 4.0, 6.0, 20.0), usual_interval_s=9.0)
    (derived,) = with_rank_states(run(steady, world_size=1), Thresholds(), NOW).workers
    # The median gap (2 s), not the mean over the window (20 s / 4) nor the probe's 9 s.
    assert (derived.usual_interval_s, derived.rate_per_min) == (2.0, 30.0)
    older = Worker(0, usual_interval_s=4.0)  # a probe that sent no history: its own figure
    (derived,) = with_rank_states(run(older, world_size=1), Thresholds(), NOW).workers
    assert (derived.usual_interval_s, derived.rate_per_min) == (4.0, 15.0)
    one = Worker(0, report_times=(5.0,), usual_interval_s=4.0)
    (derived,) = with_rank_states(run(one, world_size=1), Thresholds(), NOW).workers
    assert (derived.usual_interval_s, derived.rate_per_min) == (None, None)


def test_a_quiet_rank_behind_is_silent_though_its_state_says_behind():
    r = run(worker(0, 9, 9, age=1.0), worker(1, 8, 8, age=200.0, usual_interval_s=2.0))
    derived = with_rank_states(r, Thresholds(), NOW)
    quiet = derived.workers[1]
    assert (quiet.state, quiet.silent, quiet.barrier) == ("behind", True, "")
    assert not derived.gone and not derived.over


def test_a_whole_group_without_a_beat_is_gone():
    r = run(worker(0, 5, 5, beat=20.0), worker(1, 5, 5, beat=30.0))
    assert with_rank_states(r, Thresholds(), NOW).over


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
