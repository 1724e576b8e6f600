"""The overview dashboard's decisions: a run's phase, the rank strip and its collapse into
a histogram, where bundles are, and how long a phase has lasted."""

from __future__ import annotations

import pytest

from raytop.model import Bundle, CheckpointRecord, PlacementGroup, TrainRun, Trial, Worker
from raytop.model.dashboard import (
    ERRORED,
    FINISHED,
    SCHEDULING,
    STARTING,
    TRAINING,
    WAITING,
    PhaseClock,
    bundle_places,
    groups_of,
    latest_checkpoints,
    rank_strip,
    run_phase,
)


def trial(status="RUNNING", iterations=0, **kw) -> Trial:
    return Trial(trial_id="t1", status=status, iterations=iterations, **kw)


def run(world=2, up=2, reports=(0, 0), **kw) -> TrainRun:
    workers = tuple(
        Worker(rank=r, reports_entered=reports[r], reports_exited=reports[r], state="training")
        for r in range(up)
    )
    return TrainRun(
        run_id="r", run_name="exp-t1", attempt_id="a", world_size=world, trial_id="t1",
        workers=workers, placement_group_id="pg-train", **kw,
    )  # fmt: skip


def group(kind="train_run", placed=True, bundles=2, why=None, pg_id="pg-train") -> PlacementGroup:
    return PlacementGroup(
        pg_id=pg_id, strategy="PACK", state="CREATED" if placed else "PENDING",
        scheduling_state="FINISHED" if placed else "NO_RESOURCES",
        bundles=tuple(Bundle(i, {"CPU": 1.0}, "node-a" if placed else None)
                      for i in range(bundles)),
        owner_kind=kind, trial_id="t1", why_pending=why,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("the_trial", "the_run", "groups", "phase", "says"),
    [
        (trial("PENDING", pending_reason="needs 2 CPU"), None, (), WAITING, "needs 2 CPU"),
        (trial(), None, (), SCHEDULING, "controller is starting"),
        (trial(), None, (group(placed=False, why="no node has 4 CPU"),), SCHEDULING,
         "placing 2 worker bundle(s): no node has 4 CPU"),
        (trial(), None, (group(),), STARTING, "ranks starting 0/2"),
        (trial(), run(up=1, reports=(0,)), (group(),), STARTING, "worker group starting 1/2"),
        (trial(), run(), (group(),), STARTING, "2/2 ranks up, waiting for the first report"),
        (trial(iterations=3), run(reports=(3, 3)), (), TRAINING, "report 3 · 2 rank(s)"),
        (trial(iterations=7), None, (), TRAINING, "iteration 7"),
        (trial("TERMINATED", 5), run(reports=(5, 5)), (), FINISHED, "5 reports"),
        (trial("ERROR", error="ValueError: nan\nTraceback..."), None, (), ERRORED,
         "ValueError: nan"),
    ],
)  # fmt: skip
def test_a_runs_phase_says_what_it_waits_for(the_trial, the_run, groups, phase, says):
    found = run_phase(the_trial, the_run, groups)
    assert found.name == phase
    assert says in found.detail
    assert "\n" not in found.detail


def test_a_trials_groups_are_its_own_and_its_train_runs():
    mine = group(kind="trial", pg_id="pg-tune")
    train = group(pg_id="pg-train")
    other = PlacementGroup("pg-x", "PACK", "CREATED", "FINISHED", owner_kind="other")
    assert groups_of(trial(), None, (mine, train, other)) == (mine, train)
    unlabelled = PlacementGroup("pg-train", "PACK", "CREATED", "FINISHED", owner_kind="train_run")
    assert groups_of(trial(), run(), (unlabelled, other)) == (unlabelled,)


def test_ranks_that_fit_are_cells_in_rank_order():
    strip = rank_strip(run(world=4, up=4, reports=(3, 3, 2, 3)), 0.0, width=80, lines=2)
    assert [c.rank for c in strip.cells] == [0, 1, 2, 3]
    assert not strip.bars


def test_hundreds_of_ranks_collapse_to_a_histogram_naming_the_laggards():
    reports = [41] * 500
    reports[17] = 40
    reports[333] = 39
    workers = tuple(
        Worker(rank=r, reports_entered=n, reports_exited=n,
               behind=41 - n, state="behind" if n < 41 else "training")
        for r, n in enumerate(reports)
    )  # fmt: skip
    big = TrainRun("r", "exp-t1", "a", world_size=500, workers=workers)
    strip = rank_strip(big, 0.0, width=70, lines=3, stalled=[333])
    assert not strip.cells
    assert [(b.reports, b.ranks) for b in strip.bars] == [(41, 498), (40, 1)]
    assert strip.bars[0].share == 1.0
    assert [c.rank for c in strip.laggards] == [17, 333]
    assert strip.laggards[1].stalled and strip.more_laggards == 0


def test_no_lines_no_strip():
    assert rank_strip(run(), 0.0, width=80, lines=0).cells == ()


def test_bundles_are_placed_on_nodes_with_the_gpus_their_rank_holds():
    workers = (
        Worker(rank=0, node_id="node-a", gpu_ids=("0",)),
        Worker(rank=1, node_id="node-b", gpu_ids=("3",)),  # not where bundle 1 is: not claimed
    )
    the_run = TrainRun("r", "exp-t1", "a", world_size=2, workers=workers)
    places = bundle_places((group(kind="trial", bundles=1, pg_id="tune"), group()), the_run)
    assert places == [(0, "node-a", ("0",)), (1, "node-a", ())]
    assert bundle_places((group(placed=False),), None) == [(0, None, ()), (1, None, ())]
    assert bundle_places((), None) == []


def test_latest_checkpoints_newest_report_first():
    records = tuple(
        CheckpointRecord(dir_name=f"checkpoint_{i}", state="committed", report_index=i)
        for i in (2, 0, 1)
    )
    shown = latest_checkpoints(run(checkpoints=records), 2)
    assert [c.report_index for c in shown] == [2, 1]


def test_a_phase_counts_from_when_it_was_first_seen():
    clock = PhaseClock()
    assert clock.seen("t1", STARTING, 100.0) == "for ≥0s"  # already on when raytop looked
    assert clock.seen("t1", STARTING, 130.0) == "for ≥30s"
    assert clock.seen("t1", TRAINING, 140.0) == "for 0s"  # seen to begin
    assert clock.seen("t1", TRAINING, 205.0) == "for 1m05s"
    assert clock.seen("t2", WAITING, 205.0) == "for ≥0s"


def test_a_run_of_thousands_of_laggards_names_those_that_fit_and_counts_the_rest():
    workers = tuple(
        Worker(rank=r, reports_entered=3, reports_exited=3, state="silent", last_enter_at=91.0)
        for r in range(2_000)
    )
    strip = rank_strip(TrainRun("r", "exp-t1", "a", world_size=2_000, workers=workers), 100.0,
                       width=80, lines=3)  # fmt: skip
    assert [(b.reports, b.ranks) for b in strip.bars] == [(3, 2_000)]
    shown = [c.rank for c in strip.laggards]
    assert shown == list(range(len(shown))) and 0 < len(shown) * strip.cell_width <= 80
    assert strip.more_laggards == 2_000 - len(shown)
