"""Barrier-stall diagnosis over hand-made ledger pages (pure, no Ray)."""

from raytop.diagnose import diagnose
from raytop.diagnose.check import exit_code
from raytop.diagnose.ledger import run_findings
from raytop.model import Cluster, LedgerStatus, Node, Snapshot, TrainRun, Worker
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states

T = Thresholds(stall_after_s=60)
NOW = 1000.0  # the ledger's last publish: the time every age below is said as of


def worker(rank, entered, exited, age=1.0, beat=0.5, done=False, **kw) -> Worker:
    return Worker(rank=rank, reports_entered=entered, reports_exited=exited,
                  last_enter_at=NOW - age, heartbeat_at=NOW - beat, done=done, **kw)  # fmt: skip


def run(*workers: Worker, world_size=2, t=T) -> TrainRun:
    """An attempt as the pipeline hands it on: its rank facts derived with ``t``."""
    return with_rank_states(TrainRun("r1", "exp-t1", "a1", world_size, workers=workers), t, NOW)


def kinds(findings) -> list[str]:
    return [f.kind for f in findings]


def test_healthy_lockstep_has_no_findings():
    page = run(worker(0, 7, 7, age=0.4), worker(1, 7, 6, age=0.2))
    assert run_findings(page, T, NOW) == []
    assert [w.behind for w in page.workers] == [0, 0]


def test_a_rank_waiting_briefly_for_another_is_not_a_stall():
    page = run(worker(0, 5, 4, age=30), worker(1, 4, 4, age=31))
    assert run_findings(page, T, NOW) == []
    assert [(w.state, w.behind, w.barrier) for w in page.workers] == [
        ("waiting", 0, "waiting"), ("behind", 1, "holding"),
    ]  # fmt: skip


def test_stall_names_missing_and_waiting_ranks_and_the_wait():
    page = run(worker(0, 5, 4, age=75), worker(1, 4, 4, age=80))
    (stall,) = run_findings(page, T, NOW)
    assert stall.kind == "barrier_stall"
    assert stall.message == "rank 1 is 1 report behind: rank 0 has waited in report 5 for 75s"
    assert stall.evidence["missing_ranks"] == [1] and stall.evidence["waiting_ranks"] == [0]
    assert exit_code([stall]) == 10


def test_rank_zero_missing_is_named_just_the_same():
    page = run(worker(0, 4, 4, age=80), worker(1, 5, 4, age=75))
    (stall,) = run_findings(page, T, NOW)
    assert stall.evidence["missing_ranks"] == [0]


def test_a_rank_that_finished_early_means_mispaired_reports():
    page = run(worker(0, 5, 4, age=75), worker(1, 4, 4, age=80, done=True))
    assert kinds(run_findings(page, T, NOW)) == ["barrier_stall", "report_mispaired"]


def test_a_rank_never_seen_by_the_ledger_is_missing():
    page = run(worker(0, 1, 0, age=90), world_size=2)
    (stall,) = run_findings(page, T, NOW)
    assert "rank 1 never reported" in stall.message


def test_dead_and_silent_ranks():
    dead = run(worker(0, 3, 3, beat=0.5), worker(1, 3, 3, beat=40))
    assert kinds(run_findings(dead, T, NOW)) == ["rank_dead"]
    assert exit_code(run_findings(dead, T, NOW)) == 11
    quiet = {"age": 200, "usual_interval_s": 2.0}
    silent = run(worker(0, 9, 9, **quiet), worker(1, 9, 9, **quiet))
    assert kinds(run_findings(silent, T, NOW)) == ["rank_silent", "rank_silent"]
    slow_but_usual = run(worker(0, 9, 9, age=200, usual_interval_s=50.0),
                         worker(1, 9, 9, age=200, usual_interval_s=50.0))  # fmt: skip
    assert run_findings(slow_but_usual, T, NOW) == []


def test_a_whole_group_gone_quiet_or_finished_is_over_not_stalled():
    killed = run(worker(0, 5, 4, age=300, beat=200), worker(1, 4, 4, age=300, beat=200))
    assert run_findings(killed, T, NOW) == []
    finished = run(worker(0, 5, 5, done=True), worker(1, 5, 5, done=True))
    assert run_findings(finished, T, NOW) == []


def snapshot(page: TrainRun, available=True) -> Snapshot:
    ledger = LedgerStatus(available=available, error=None if available else "stale")
    return Snapshot(NOW, Cluster("h:1", True), runs=(page,), ledger=ledger)


def test_no_rank_alarm_while_the_ledger_itself_is_down():
    page = run(worker(0, 5, 4, age=75), worker(1, 4, 4, age=80))
    assert kinds(diagnose(snapshot(page, available=False), T)) == ["ledger_unavailable"]
    assert kinds(diagnose(snapshot(page), T)) == ["barrier_stall"]


def test_the_most_severe_check_code_wins():
    stalled = run_findings(run(worker(0, 5, 4, age=75), worker(1, 4, 4, age=80)), T, NOW)
    dead = run_findings(run(worker(0, 3, 3), worker(1, 3, 3, beat=40)), T, NOW)
    assert exit_code(dead) == 11
    assert exit_code(dead + stalled) == 10
    lost = diagnose(Snapshot(NOW, Cluster("h:1", False, error="gone")), T)
    assert exit_code(list(lost) + dead + stalled) == 20
    assert exit_code([]) == 0


def test_a_rank_on_a_dead_node_is_lost_not_a_stall_or_a_hang():
    """The survivors wait in the barrier for a rank whose node died: the finding names
    the dead node, not a barrier stall (the rank's last heartbeat is still fresh)."""
    page = run(worker(0, 5, 4, age=75, node_id="aa"), worker(1, 4, 4, age=80, node_id="bb"))
    nodes = (Node("aa", "h:1", True, True), Node("bb", "h:2", False, False))
    snap = Snapshot(NOW, Cluster("h:1", True, nodes=nodes), runs=(page,), ledger=LedgerStatus(True))
    (lost,) = diagnose(snap, T)
    assert lost.kind == "rank_dead" and lost.evidence["rank"] == 1
    assert "node bb" in lost.message and "dead" in lost.message
    assert exit_code([lost]) == 11
    alive = Snapshot(NOW, Cluster("h:1", True, nodes=(nodes[0], Node("bb", "h:2", True, False))),
                     runs=(page,), ledger=LedgerStatus(True))  # fmt: skip
    assert kinds(diagnose(alive, T)) == ["barrier_stall"]
