"""A run unchanged between refreshes is the very same object, and what is made of it is
kept (``pipeline.kept_runs``): its rank states until the clock alone could move one (a
threshold crossed), its judgement until the ledger's next publish, and neither past a
change of the run or of its context. So are
an experiment's trials' reasons to wait and its best trial (``pipeline.kept_trials``), and
the placement groups, why each waits and their findings (``pipeline.kept_groups``)."""

import dataclasses
import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from raytop.diagnose import diagnose
from raytop.diagnose.findings import RunContext, judge_run, trial_findings
from raytop.diagnose.hang import stall_limit, stall_limit_of
from raytop.model import (
    Activity,
    Bundle,
    Cluster,
    Experiment,
    ExperimentStatus,
    LedgerStatus,
    Node,
    PlacementGroup,
    Snapshot,
    TrainRun,
    Trial,
    Worker,
)
from raytop.model.identity import same_items, same_values
from raytop.model.refresh import AGES_EVERY_S
from raytop.model.snapshot import BestTrial
from raytop.model.thresholds import Thresholds
from raytop.model.train_run import report_intervals
from raytop.pipeline.derive import with_rank_states
from raytop.pipeline.joins import pending_reasons, with_reasons
from raytop.pipeline.kept_groups import KeptGroups
from raytop.pipeline.kept_runs import KeptRuns
from raytop.pipeline.kept_trials import KeptTrials
from raytop.pipeline.run_checkpoints import RunCheckpoints
from raytop.pipeline.workloads import KeptHoldings, _held
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.ledger_source import LedgerReader
from raytop.sources.placement_source import PlacementReader
from raytop.wire.gcs import KeptNodes, nodes_from_gcs
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, RUN_PREFIX
from tests.fakes import FakeKv

ATTEMPT = {"index": 1, "status": "errored", "started_at": 9.0, "attempt_id": "a0",
           "ended_at": 9.5, "error": "boom", "error_class": "RuntimeError",
           "failure_class": "worker", "first_report": None, "restored": None}  # fmt: skip
RUN_RECORD = {"run_id": "run1", "run_name": "exp-t1", "sent_at": 9.0,
              "failure_config": {"max_failures": 1, "controller_failure_limit": -1,
                                 "max_preemption_failures": -1},
              "attempts": [ATTEMPT, {**ATTEMPT, "index": 2, "status": "running",
                                     "attempt_id": "a1", "ended_at": None, "error": None,
                                     "error_class": None, "failure_class": None}]}  # fmt: skip

T = Thresholds(stall_after_s=60)
AT = 1000.0  # the ledger's publish: the time ages are said as of


def rank(r: int, entered: int, received_at: float = 100.0) -> dict:
    return {"rank": r, "entered": entered, "exited": entered, "last_enter_at": 90.0,
            "received_at": received_at, "pid": 10 + r}  # fmt: skip


def publish(kv: FakeKv, published_at: float, version: int, *ranks: dict, runs=None) -> None:
    page = {"run_id": "run1", "run_name": "exp-t1", "attempt_id": "a1", "world_size": 2,
            "first_seen_at": 10.0, "version": version,
            "ranks": {str(r["rank"]): r for r in ranks}}  # fmt: skip
    kv.data[PAGE_PREFIX + "run1.a1"] = json.dumps(page).encode()
    index = {"started_at": 1.0, "published_at": published_at, "pages": {"run1.a1": version},
             "runs": runs or {}}  # fmt: skip
    kv.data[INDEX_KEY] = json.dumps(index).encode()


def test_the_reader_hands_out_the_same_run_while_nothing_was_said_of_it():
    """However much later: the run carries times, not ages (``pipeline.derive`` makes
    those)."""
    kv = FakeKv()
    reader = LedgerReader(kv)
    publish(kv, 100.0, 1, rank(0, 3), rank(1, 3))
    (first,), _ = reader.read(now=100.0)
    publish(kv, 105.6, 1, rank(0, 3), rank(1, 3))  # republished, nothing new
    (again,), _ = reader.read(now=105.6)
    assert again is first
    assert again.workers[0].heartbeat_at == 100.0
    assert again.attempts == ()


def test_a_derived_run_stands_until_the_clock_crosses_a_threshold():
    """It carries times: its ages are said as of the ledger's publish, by whoever reads
    them, and the run derived from the same run read stands, second after second, until
    a rank's heartbeat goes past ``dead_after_s`` (or a report past its silence limit)."""
    kv = FakeKv()
    reader, kept = LedgerReader(kv), KeptRuns()
    kv.data[RUN_PREFIX + "run1"] = json.dumps(RUN_RECORD).encode()
    publish(kv, 100.0, 1, rank(0, 3), rank(1, 3), runs={"run1": 1})
    (run,), _ = reader.read(now=100.0)
    first = kept.derive(run, T, 100.0)
    assert (first.workers[0].since_beat(100.0), first.workers[0].since_report(100.0)) == (0, 10)
    assert [a.lasted(100.0) for a in first.attempts] == [0.5, 91.0]  # the running one's: to now
    assert [w.state for w in first.workers] == ["training", "training"]
    for later in (100.6, 101.0, 107.5, 100.0 + T.dead_after_s):  # no threshold crossed yet
        assert kept.derive(run, T, later) is first
    assert first.attempts[1].lasted(107.5) == 98.5  # said as of when it is asked
    dead = kept.derive(run, T, 100.0 + T.dead_after_s + 0.5)  # the beats went past it
    assert dead is not first and [w.state for w in dead.workers] == ["dead", "dead"]
    assert dead.gone and kept.derive(run, T, 500.0) is dead  # nothing left to cross


def test_a_rank_that_falls_silent_is_derived_again_when_its_limit_passes():
    """A rank out of report past max(silent_min_s, silent_factor × its interval) turns
    silent at that moment, though nothing new was read of it."""
    kept = KeptRuns()
    times = tuple(900.0 + 2.0 * i for i in range(10))  # every 2 s, the last at 918
    quiet = Worker(rank=0, reports_entered=10, reports_exited=10, last_enter_at=918.0,
                   heartbeat_at=970.0, report_times=times)  # fmt: skip
    run = TrainRun("r1", "exp-t1", "a1", 1, workers=(quiet,))
    first = kept.derive(run, T, 971.0)
    assert first.workers[0].state == "training"
    limit = 918.0 + max(T.silent_min_s, T.silent_factor * 2.0)  # 978
    assert kept.derive(run, T, limit - 0.1) is first
    silent = kept.derive(run, T, limit + 0.1)
    assert silent.workers[0].silent and silent.workers[0].state == "silent"
    assert silent == with_rank_states(run, T, limit + 0.1)  # what deriving afresh says


def test_a_kept_run_is_never_handed_out_for_an_earlier_time():
    """A recreated ledger may publish earlier than the last: what was derived as of a
    later time is not handed out for an earlier one."""
    kept = KeptRuns()
    run = TrainRun("r1", "exp-t1", "a1", 1, workers=(Worker(0, 3, 3, heartbeat_at=100.0),))
    assert kept.derive(run, T, 200.0).workers[0].state == "dead"
    assert kept.derive(run, T, 101.0).workers[0].state == "training"


def test_a_changed_page_or_run_record_makes_the_run_again_at_once():
    kv = FakeKv()
    reader = LedgerReader(kv)
    publish(kv, 100.0, 1, rank(0, 3), rank(1, 3))
    (first,), _ = reader.read(now=100.0)
    publish(kv, 100.2, 2, rank(0, 4), rank(1, 3))
    (reported,), _ = reader.read(now=100.2)
    assert reported is not first and reported.workers[0].reports_entered == 4
    kv.data[RUN_PREFIX + "run1"] = json.dumps(RUN_RECORD).encode()
    publish(kv, 100.4, 2, rank(0, 4), rank(1, 3), runs={"run1": 1})
    (recorded,), status = reader.read(now=100.4)
    assert not status.warnings
    assert recorded is not reported and [a.index for a in recorded.attempts] == [1, 2]


def test_a_run_made_again_keeps_what_its_unchanged_record_made():
    """Its ranks reported (or beat): the run is new, its attempts and retry budgets the very
    objects made of the same RunProbe record; a new record makes them again."""
    kv = FakeKv()
    reader = LedgerReader(kv)
    kv.data[RUN_PREFIX + "run1"] = json.dumps(RUN_RECORD).encode()
    publish(kv, 100.0, 1, rank(0, 3), rank(1, 3), runs={"run1": 1})
    (first,), _ = reader.read(now=100.0)
    publish(kv, 100.2, 2, rank(0, 4), rank(1, 3), runs={"run1": 1})
    (reported,), _ = reader.read(now=100.2)
    assert reported is not first and reported.workers[0].reports_entered == 4
    assert reported.attempts is first.attempts and reported.retry_budget is first.retry_budget
    config = {**RUN_RECORD["failure_config"], "max_failures": 2}
    kv.data[RUN_PREFIX + "run1"] = json.dumps({**RUN_RECORD, "failure_config": config}).encode()
    publish(kv, 100.4, 2, rank(0, 4), rank(1, 3), runs={"run1": 2})
    (recorded,), status = reader.read(now=100.4)
    assert not status.warnings and recorded.retry_budget["worker"].limit == 2
    assert recorded.attempts is not first.attempts and recorded.attempts == first.attempts


def worker(r: int, entered: int, exited: int, age: float) -> Worker:
    return Worker(rank=r, reports_entered=entered, reports_exited=exited,
                  last_enter_at=AT - age, heartbeat_at=AT - 0.5)  # fmt: skip


def stalled() -> TrainRun:
    """Rank 1 a report behind while rank 0 waits 75 s: past the 60 s stall threshold."""
    return TrainRun("r1", "exp-t1", "a1", 2, workers=(worker(0, 5, 4, 75), worker(1, 4, 4, 80)))


def context(**changed) -> RunContext:
    return RunContext(**{"ended": False, "ledger_available": True, "known_at": 1000.0,
                         "dead_nodes": frozenset(), "taken_at": 1000.2, **changed})  # fmt: skip


def a_second_on(seconds: float = 1.0) -> RunContext:
    """``context()`` as a refresh ``seconds`` later sees it: the ledger published again."""
    return context(known_at=1000.0 + seconds, taken_at=1000.2 + seconds)


def test_what_is_made_of_the_same_run_is_kept_and_of_a_new_one_made_again():
    kept = KeptRuns()
    run = stalled()
    derived = kept.derive(run, T, AT)
    assert kept.derive(run, T, AT) is derived
    assert kept.derive(stalled(), T, AT) is not derived  # equal, but not the same object
    tagged = kept.with_trial(derived, "t1")
    assert tagged.trial_id == "t1" and kept.with_trial(derived, "t1") is tagged
    assert kept.with_trial(derived, "t2").trial_id == "t2"
    judged = kept.judge(tagged, T, context())
    assert [f.kind for f in judged[2]] == ["barrier_stall"]
    assert kept.judge(tagged, T, context()) is judged
    # a publish within the wall clock's second: its waits stand until the next second
    assert kept.judge(tagged, T, context(known_at=1000.5, taken_at=1000.7)) is judged
    # the next second: its waits are longer, and say so
    later = kept.judge(tagged, T, a_second_on())
    assert later is not judged and later == judge_run(tagged, T, a_second_on())
    assert "for 76s" in later[2][0].message


def test_a_changed_context_is_judged_again():
    kept = KeptRuns()
    run = kept.derive(stalled(), T, AT)
    kept.judge(run, T, context())
    assert kept.judge(run, T, context(ended=True))[2] == []  # its trial ended: over
    assert kept.judge(run, T, context(ledger_available=False))[2] == []
    assert kept.judge(run, Thresholds(stall_after_s=100), context())[2] == []
    assert [f.kind for f in kept.judge(run, T, context())[2]] == ["barrier_stall"]


def test_the_stall_limit_is_made_again_only_when_a_report_history_changed(monkeypatch):
    """And then from the intervals of the ranks whose history did not change, as kept."""
    made, walked = [], []

    def counted(gaps, t):
        made.append("r1")
        return stall_limit_of(gaps, t)

    def intervals(times):
        walked.append(times)
        return report_intervals(times)

    monkeypatch.setattr("raytop.pipeline.kept_runs.stall_limit_of", counted)
    monkeypatch.setattr("raytop.pipeline.kept_runs.report_intervals", intervals)
    kept = KeptRuns()
    histories = ((900.0, 910.0, 920.0), (905.0, 915.0))
    workers = tuple(dataclasses.replace(w, report_times=h)
                    for w, h in zip(stalled().workers, histories, strict=True))  # fmt: skip
    run = kept.derive(dataclasses.replace(stalled(), workers=workers), T, AT)
    first = kept.judge(run, T, context())
    aged = dataclasses.replace(run, workers=tuple(
        dataclasses.replace(w, heartbeat_at=w.heartbeat_at + 1) for w in run.workers
    ))  # fmt: skip  # its ranks beat: a new run of the very same histories
    assert kept.judge(aged, T, a_second_on()) == judge_run(aged, T, a_second_on())
    assert made == ["r1"]
    longer = (*histories[0], 930.0)
    moved = dataclasses.replace(aged, workers=(
        dataclasses.replace(aged.workers[0], report_times=longer), aged.workers[1]))  # fmt: skip
    assert kept.judge(moved, T, context()) == judge_run(moved, T, context())
    assert made == ["r1", "r1"] and [f.kind for f in first[2]] == ["barrier_stall"]
    assert walked == [*histories, longer]  # rank 1's intervals kept
    assert kept._stall(moved, T) == stall_limit(moved, T)


def test_the_run_time_shares_are_kept_while_its_ranks_activities_are_the_same():
    seconds = {"collective": 3.0, "compute": 1.0}
    activity = Activity(kind="collective", where="all_reduce", since=990.0, sampled_at=999.0,
                        samples=10, waiting=0.5, time_s=seconds)  # fmt: skip
    workers = tuple(dataclasses.replace(w, activity=activity) for w in stalled().workers)
    run = dataclasses.replace(stalled(), workers=workers)
    ranks: dict = {}
    derived = with_rank_states(run, T, AT, ranks)
    assert derived.time_shares == with_rank_states(run, T, AT).time_shares
    assert derived.time_shares["collective"] == 0.75
    aged = dataclasses.replace(run, workers=tuple(
        dataclasses.replace(w, heartbeat_at=AT - 0.1) for w in run.workers))  # fmt: skip
    assert with_rank_states(aged, T, AT, ranks).time_shares is derived.time_shares
    busier = dataclasses.replace(activity, time_s={"compute": 4.0})
    moved = dataclasses.replace(aged, workers=(
        dataclasses.replace(aged.workers[0], activity=busier), aged.workers[1]))  # fmt: skip
    afresh = with_rank_states(moved, T, AT).time_shares
    assert with_rank_states(moved, T, AT, ranks).time_shares == afresh
    assert with_rank_states(moved, T, AT, ranks).time_shares["collective"] == 0.375


def test_a_run_not_seen_in_a_collection_is_forgotten():
    kept = KeptRuns()
    run = stalled()
    derived = kept.derive(run, T, AT)
    kept.forget_unseen()  # seen in that collection: kept
    assert kept.derive(run, T, AT) is derived
    kept.forget_unseen()
    kept.forget_unseen()  # a collection without it
    assert kept.derive(run, T, AT) is not derived


def test_diagnose_with_kept_judgements_says_what_judging_afresh_says():
    kept = KeptRuns()
    run = kept.derive(stalled(), T, AT)
    snapshot = Snapshot(
        taken_at=1000.0,
        cluster=Cluster(address="a", connected=True, nodes=(Node("n1", "1.2.3.4", True, True),)),
        runs=(run,),
        ledger=LedgerStatus(True, started_at=1.0, published_at=1000.0),
    )
    afresh = diagnose(snapshot, T)
    assert [f.kind for f in afresh] == ["barrier_stall"]
    assert diagnose(snapshot, T, kept.judge) == afresh
    assert diagnose(snapshot, T, kept.judge) == afresh  # kept, the same
    assert judge_run(run, T, context()) == kept.judge(run, T, context())


def test_the_checkpoint_step_hands_out_the_same_run_while_its_folder_is_the_same(tmp_path):
    folder = tmp_path / "run"
    (folder / "hang_detector" / "stack_traces").mkdir(parents=True)
    (folder / "hang_detector" / "stack_traces" / "rank_0.log").write_text("stack\n")
    step = RunCheckpoints(CheckpointSnapshots(), LedgerReader(FakeKv()))
    run = TrainRun("r1", "exp-t1", "a1", 2, run_path=str(folder))
    first = step.of(run)
    assert first.ray_hang is not None  # Ray's verdict read again, equal: the same run
    assert step.of(run) is first
    (folder / "hang_detector" / "stack_traces" / "rank_1.log").write_text("stack\n")
    told_more = step.of(run)  # Ray's verdict now names another rank
    assert told_more is not first and told_more.ray_hang != first.ray_hang
    assert step.of(TrainRun("r1", "exp-t1", "a1", 2, run_path=str(folder))) is not first


# -- trials: their reasons to wait and the best, kept while they are the same tuple ---------


def trial(i: int, status: str = "PENDING", loss: float | None = None) -> Trial:
    return Trial(f"t{i}", status, metrics={} if loss is None else {"loss": loss})


def group(owner_kind: str, owner: str | None, why: str) -> PlacementGroup:
    return PlacementGroup(f"pg-{owner}", "PACK", "PENDING", "NO_RESOURCES", experiment="e",
                          owner_kind=owner_kind, owner=owner, why_pending=why)  # fmt: skip


def test_the_trials_reasons_and_best_are_kept_while_the_trials_and_reasons_are():
    kept = KeptTrials()
    trials = (trial(0, "RUNNING", 0.5), trial(1, "RUNNING", 0.2), trial(2), trial(3))
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", "min", trials)
    groups = (group("pending_trial", None, "fits, but 4 of 4 CPU are held by trial t0"),)
    (joined,) = kept.join([exp], groups)
    assert [t.pending_reason for t in joined.trials] == [None, None, *[groups[0].why_pending] * 2]
    assert joined.best_trial.trial_id == "t1"
    (again,) = kept.join([exp], groups)  # the same trials, the same reasons
    assert again.trials is joined.trials and again.best_trial is joined.best_trial
    other = (group("pending_trial", None, "bundle 0 needs GPU 1; no node has GPU"),)
    (moved,) = kept.join([exp], other)  # a reason moved: the trials are made again
    assert moved.trials[2].pending_reason == other[0].why_pending
    newer = (*trials[:2], trial(2, "RUNNING", 0.1), trials[3])
    (told,) = kept.join([dataclasses.replace(exp, trials=newer)], other)  # a trial moved
    assert told.best_trial.trial_id == "t2" and told.trials[2].pending_reason is None
    (unwaited,) = kept.join([exp], ())  # none of its groups waits: its trials as they are
    assert unwaited.trials is trials


def test_the_trials_findings_and_counts_are_kept_while_the_trials_are_the_same_tuple():
    kept = KeptTrials()
    reported = [trial(0, "ERROR", 0.9), trial(1, "RUNNING", 0.2), trial(2, "TERMINATED", 0.1)]
    trials = tuple(dataclasses.replace(t, iterations=1) for t in reported)
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "acc", "max", trials)
    findings, ended = kept.judge(exp)
    assert (findings, ended) == trial_findings(exp)  # what judging afresh says
    assert [f.kind for f in findings] == ["metric_missing", "trial_error"]
    assert ended == {"t0", "t2"} and kept.counts(exp) == exp.status_counts()
    again = dataclasses.replace(exp, status=ExperimentStatus.INTERRUPTED)  # a new object
    assert kept.judge(again)[0] is findings and kept.counts(again) is kept.counts(exp)
    renamed = dataclasses.replace(exp, metric="loss")  # another metric: judged again
    assert [f.kind for f in kept.judge(renamed)[0]] == ["trial_error"]
    moved = (trials[0], trial(1, "ERROR"), trials[2])  # a trial moved: a new tuple
    told = dataclasses.replace(exp, trials=moved)
    assert kept.judge(told) == trial_findings(told) and len(kept.judge(told)[0]) == 3
    counts = kept.counts(told)
    assert counts == {"ERROR": 2, "TERMINATED": 1} and kept.counts(told) is counts
    kept.join([], ())  # an experiment no longer seen is forgotten
    assert kept.counts(told) is not counts


def test_the_groups_holdings_are_kept_while_groups_creators_and_runs_are_the_same():
    held = KeptHoldings()
    placed = PlacementGroup("pg1", "PACK", "CREATED", "FINISHED",
                            bundles=(Bundle(0, {"CPU": 2.0}, "n1"),))  # fmt: skip
    groups, creators = (placed,), {"pg1": ("01000000", "")}
    runs = (TrainRun("r1", "exp-t1", "a1", 2),)
    first = held.of(groups, creators, runs, {}, {})
    assert first[1]["01000000"].cpu == 2.0 and held.of(groups, creators, runs, {}, {}) is first
    assert held.of(groups, creators, (*runs,), {}, {}) is first  # the same runs, a new tuple
    assert held.of(groups, dict(creators), runs, {}, {}) is not first  # creators made anew
    owned = TrainRun("r1", "exp-t1", "a1", 2, placement_group_id="pg1")
    mine = held.of(groups, creators, (owned,), {}, {})  # the group is the run's now
    assert mine == _held(groups, creators, (owned,), {}, {}) and mine[0]["r1"].cpu == 2.0


def test_the_placement_reader_keeps_its_creators_while_the_gcs_rows_are_the_same():
    row = dict(GROUP)
    gcs = Groups(row)
    reader = PlacementReader(gcs, FakeKv())
    reader.read([], (), {}, now=100.0)
    creators = reader.creators
    assert creators == {"pg1": ("01000000", "")}
    reader.read([], (), {}, now=100.1)
    assert reader.creators is creators  # the very rows: the very dict
    gcs.rows = [dict(row, creator_job_id="02000000")]
    reader.read([], (), {}, now=100.2)
    assert reader.creators == {"pg1": ("02000000", "")}


def test_no_reason_moved_leaves_the_very_trials():
    trials = (trial(0, "RUNNING"), trial(1, "RUNNING"))
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, trials=trials)
    groups = (group("pending_trial", None, "fits"),)  # for trials not started: none here
    assert with_reasons(exp, pending_reasons(exp, groups)) is trials


# -- placement groups: the same tuple while what they are made of is, their reasons kept ----


GROUP = {"pg_id": "pg1", "name": "", "strategy": "PACK", "state": "PENDING",
         "scheduling_state": "NO_RESOURCES", "attempts": 3, "created_at": 50.0,
         "creator_job_id": "01000000", "creator_actor_id": "", "creator_dead": False,
         "detached": False, "bundles": [{"index": 0, "resources": {"CPU": 8.0},
                                         "node_id": None}]}  # fmt: skip


class Groups:
    def __init__(self, *rows: dict) -> None:
        self.rows = list(rows)

    def placement_groups(self):
        return list(self.rows)


def test_the_placement_reader_hands_out_the_same_groups_while_their_basis_is_the_same():
    gcs = Groups(GROUP)
    reader = PlacementReader(gcs, FakeKv())
    experiments = [Experiment("e", "/e", ExperimentStatus.RUNNING, job_id="01000000")]
    first = reader.read(experiments, (), {}, now=100.0)
    assert first[0].owner_kind == "pending_trial" and first[0].age_s == 50.0
    assert reader.read(experiments, (), {}, now=100.5) is first  # ages as of 100.0
    later = reader.read(experiments, (), {}, now=100.0 + AGES_EVERY_S)
    assert later is not first and later[0].age_s == 50.0 + AGES_EVERY_S
    # only its age moved: the same group otherwise, and the reader says which it aged
    assert reader.aged_from is first
    assert later[0] == dataclasses.replace(first[0], age_s=later[0].age_s)
    assert reader.read(experiments, (), {}, now=100.0 + AGES_EVERY_S) is later
    assert reader.aged_from is None
    run = TrainRun("r1", "exp-t1", "a1", 2, placement_group_id="pg1")
    owned = reader.read(experiments, (run,), {}, now=101.1)  # a run names the group
    assert owned is not later and owned[0].owner_kind == "train_run"
    assert reader.aged_from is None  # labelled again, not aged
    gcs.rows = [dict(GROUP)]  # read again from the GCS: a new row, equal or not
    assert reader.read(experiments, (run,), {}, now=101.2) is not owned


def node(cpus_free: float, alive: bool = True) -> Node:
    return Node("n1", "1.2.3.4", alive, True, {"CPU": 8.0}, {"CPU": cpus_free})


def test_why_a_group_waits_and_its_findings_are_kept_while_the_nodes_hold_the_same():
    kept = KeptGroups()
    groups = PlacementReader(Groups(GROUP), FakeKv()).read([], (), {}, now=100.0)
    why = kept.with_why_pending(groups, (node(0.0),))
    assert why[0].why_pending.startswith("fits, but 8 of 8 CPU")
    busy = dataclasses.replace(node(0.0), host=None, labels={"zone": "a"})
    assert kept.with_why_pending(groups, (busy,)) is why  # what a reason needs: the same
    freed = kept.with_why_pending(groups, (node(8.0),))
    assert freed is not why and freed[0].why_pending.startswith("fits; waiting")
    assert kept.with_why_pending(groups, (node(8.0, alive=False),))[0].why_pending == (
        "bundle 0 needs {CPU: 8}; no node has CPU"
    )
    judged = kept.findings(why, (node(0.0),), 30.0)
    assert [f.kind for f in judged] == ["placement_waiting"]  # pending for 50 s, over 30
    assert kept.findings(why, (node(0.0),), 30.0) is judged
    assert kept.findings(why, (node(0.0),), 60.0) == []


def test_groups_that_only_aged_keep_their_reasons_said_at_their_new_age(monkeypatch):
    """What a group's reason says in resources is not worked out again as the groups age
    (``PlacementReader.aged_from``); a Train run's worker group says at its new age how
    many start timeouts it has waited. Each answer is the one worked out afresh."""
    import raytop.pipeline.pending as pending

    asked: list[int] = []
    made = pending.waiting_reasons

    def counted(groups, nodes):
        asked.append(len(groups))
        return made(groups, nodes)

    monkeypatch.setattr(pending, "waiting_reasons", counted)
    import raytop.pipeline.kept_groups as kept_groups

    monkeypatch.setattr(kept_groups, "waiting_reasons", counted)
    reader, kept, nodes = PlacementReader(Groups(GROUP), FakeKv()), KeptGroups(), (node(0.0),)
    run = TrainRun("r1", "exp-t1", "a1", 2, placement_group_id="pg1")
    young = reader.read([], (run,), {}, now=100.0)  # 50 s old: no start timeout yet
    why = kept.with_why_pending(young, nodes, reader.aged_from)
    assert why[0].why_pending.startswith("fits, but 8 of 8 CPU") and asked == [1]
    old = reader.read([], (run,), {}, now=111.0)  # 61 s old: past one start timeout
    aged = kept.with_why_pending(old, nodes, reader.aged_from)
    assert asked == [1]
    afresh = KeptGroups().with_why_pending(old, nodes)
    assert aged == afresh and aged[0].why_pending.startswith(
        "Train run exp-t1 has waited in SCHEDULING for 1 worker-group start timeout(s)"
    )
    freed = kept.with_why_pending(old, (node(8.0),), reader.aged_from)
    assert freed == KeptGroups().with_why_pending(old, (node(8.0),))
    assert asked == [1, 1, 1, 1]  # other nodes, and each fresh KeptGroups: worked out again


def test_the_findings_of_groups_that_only_aged_are_said_again_at_their_age(monkeypatch):
    """Groups that only aged keep what was said of each but its age (its subject, whether
    it can never be placed): not looked up again, and the findings are those judged
    afresh, their ages moved on."""
    from raytop.diagnose import placement

    looked: list[str] = []
    infeasible = placement.Capacity.infeasible

    def counted(self, pg):
        looked.append(pg.pg_id)
        return infeasible(self, pg)

    monkeypatch.setattr(placement.Capacity, "infeasible", counted)
    reader, kept, nodes = PlacementReader(Groups(GROUP), FakeKv()), KeptGroups(), (node(0.0),)
    young = kept.with_why_pending(reader.read([], (), {}, now=100.0), nodes, reader.aged_from)
    (first,) = kept.findings(young, nodes, 30.0)
    assert first.message.startswith("pending for 50s") and len(looked) == 2  # why, findings
    old = kept.with_why_pending(reader.read([], (), {}, now=111.0), nodes, reader.aged_from)
    (later,) = kept.findings(old, nodes, 30.0)
    assert len(looked) == 2 and later.message.startswith("pending for 61s")
    assert [later] == placement.placement_findings(old, nodes, 30.0)


VALUES = st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.3, float("nan")]))


@settings(max_examples=300, deadline=None)
@given(
    first=st.lists(st.tuples(st.sampled_from(["PENDING", "RUNNING"]), VALUES), max_size=12),
    rounds=st.lists(
        st.tuples(
            st.lists(
                st.tuples(st.integers(0, 11), st.sampled_from(["PENDING", "RUNNING"]), VALUES),
                max_size=3,
            ),  # fmt: skip
            st.integers(0, 2),  # trials added at the end
            st.sampled_from(["min", "max"]),
            st.booleans(),  # whether the pending-trial group's reason moved
        ),
        max_size=5,
    ),
)
def test_kept_trials_say_what_joining_afresh_says(first, rounds):
    """Whatever moves between refreshes (trials rewritten in place, added, the mode, the
    reasons), the kept reasons and best trial are those of the whole table joined anew."""
    kept = KeptTrials()
    made = [0]

    def new(status: str, value: float | None) -> Trial:
        made[0] += 1
        return Trial(f"t{made[0]}", status, metrics={} if value is None else {"loss": value})

    trials = tuple(new(s, v) for s, v in first)
    why = "fits"
    for changes, added, mode, move in [([], 0, "min", False), *rounds]:
        listed = list(trials)
        for place, status, value in changes:
            if place < len(listed):  # the same trial id, told anew
                listed[place] = Trial(listed[place].trial_id, status,
                                      metrics={} if value is None else {"loss": value})  # fmt: skip
        trials = (*listed, *(new("PENDING", None) for _ in range(added)))
        why = why + "!" if move else why
        exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", mode, trials)
        groups = (group("pending_trial", None, why),)
        (joined,) = kept.join([exp], groups)
        afresh = KeptTrials().join([exp], groups)[0]
        assert [t.pending_reason for t in joined.trials] == [
            t.pending_reason for t in afresh.trials
        ]
        assert [t.trial_id for t in joined.trials] == [t.trial_id for t in trials]
        assert joined.best_trial == afresh.best_trial


def test_a_best_trial_told_worse_gives_way_to_one_that_did_not_move():
    kept = KeptTrials()
    table = tuple(Trial(f"t{i}", "RUNNING", metrics={"loss": v})
                  for i, v in enumerate([0.3, 0.9, 0.5, 0.7]))  # fmt: skip
    exp = Experiment("e", "/e", ExperimentStatus.RUNNING, "loss", "max", table)
    assert kept.with_best_trial(exp).best_trial.trial_id == "t1"
    worse = (table[0], Trial("t1", "RUNNING", metrics={"loss": 0.1}), *table[2:])
    told = kept.with_best_trial(dataclasses.replace(exp, trials=worse))
    assert told.best_trial == BestTrial("t3", "loss", 0.7)
    again = (*worse[:3], Trial("t3", "RUNNING", metrics={"loss": 0.7}))  # the same value
    assert kept.with_best_trial(dataclasses.replace(exp, trials=again)).best_trial.trial_id == "t3"


def test_what_is_kept_is_told_by_identity_not_by_equality():
    row, again = {"pg_id": "pg1"}, {"pg_id": "pg1"}  # equal, read anew
    assert same_items([row], [row]) and not same_items([row], [again])
    assert not same_items([row], [row, row])
    assert same_values({"a": row}, {"a": row}) and not same_values({"a": row}, {"a": again})
    assert not same_values({"a": row}, {"b": row})


def test_a_node_whose_row_holds_the_very_values_is_the_very_node():
    """``wire.gcs.KeptNodes``: the GCS reader keeps a node's parsed row and its free
    figures while their bytes are the same; such a row is the very ``Node`` made before,
    any other is made afresh (the same as ``nodes_from_gcs``), in the rows' order."""
    total, free = {"CPU": 8.0}, {"CPU": 2.0}
    rows = [{"node_id": n, "address": "1.2.3.4", "alive": True, "is_head": n == "a",
             "resources_total": total, "resources_available": free, "labels": {}}
            for n in ("a", "b")]  # fmt: skip
    kept = KeptNodes()
    first = kept.of(rows)
    assert first == nodes_from_gcs(rows)
    again = kept.of([dict(r) for r in rows])  # new dicts of the very values
    assert all(n is m for n, m in zip(again, first, strict=True))
    moved = [dict(rows[0]), {**rows[1], "resources_available": {"CPU": 2.0}}]
    later = kept.of(moved)
    assert later[0] is first[0] and later[1] is not first[1] and later == nodes_from_gcs(moved)
    assert [n.node_id for n in kept.of(moved[::-1])] == ["b", "a"]


def test_a_new_publish_judges_again_only_what_the_clock_moves(monkeypatch):
    """The run's checkpoints, attempts and time sinks say the same at any time: at the
    ledger's next publish only its waits are judged again (``timed_findings``)."""
    import raytop.pipeline.kept_runs as kept_runs

    steady = []
    real = kept_runs.steady_findings
    monkeypatch.setattr(kept_runs, "steady_findings", lambda *a: steady.append(1) or real(*a))
    kept = KeptRuns()
    run = kept.derive(stalled(), T, AT)
    first = kept.judge(run, T, context())
    later = kept.judge(run, T, a_second_on())
    assert later == judge_run(run, T, a_second_on()) and later != first
    assert steady == [1] and later[0] is first[0] and later[1] is first[1]
    assert kept.judge(run, T, context(ended=True)) == judge_run(run, T, context(ended=True))
    assert steady == [1, 1]  # another context: all of it again


RANK = st.tuples(
    st.integers(0, 12),  # reports entered
    st.booleans(),  # inside the last one
    st.booleans(),  # done
    st.floats(0.0, 150.0),  # its last heartbeat, seconds before 1000
    st.floats(0.0, 150.0),  # its last report entered, seconds before 1000
    st.floats(0.5, 10.0),  # its report interval
)


@settings(max_examples=400, deadline=None)
@given(
    ranks=st.lists(RANK, min_size=1, max_size=4),
    steps=st.lists(st.tuples(st.floats(0, 120), st.none() | st.integers(0, 3)), max_size=8),
)
@example(  # three beats, 5 s apart: the first rank's death derives the run again while
    # the others are kept; the second's is still to come, before the run's last beat's
    ranks=[(1, False, False, b, 0.0, 1.0) for b in (10.0, 5.0, 1.0)],
    steps=[(6.0, None), (5.0, None)],
)
def test_a_kept_derivation_says_what_deriving_afresh_says_at_every_time(ranks, steps):
    """Whatever its ranks, however the clock moves on and whichever rank's beat comes in
    meanwhile (a new run whose other ranks are the very same: ``derive.derived_run``),
    the run a caller keeps is the one ``with_rank_states`` makes afresh at that time."""
    workers = [
        Worker(rank=r, reports_entered=n, reports_exited=n - 1 if inside and n else n, done=done,
               heartbeat_at=AT - beat, last_enter_at=AT - last,
               report_times=tuple(AT - last - gap * i for i in range(min(n, 5)))[::-1])
        for r, (n, inside, done, beat, last, gap) in enumerate(ranks)
    ]  # fmt: skip
    run = TrainRun("r1", "exp-t1", "a1", len(workers), workers=tuple(workers))
    kept, now = KeptRuns(), AT
    for step, beating in [(0.0, None), *steps]:
        now += step
        if beating is not None and beating < len(workers):
            workers[beating] = dataclasses.replace(workers[beating], heartbeat_at=now)
            run = dataclasses.replace(run, workers=tuple(workers))
        assert kept.derive(run, T, now) == with_rank_states(run, T, now)
