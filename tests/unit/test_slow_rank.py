"""A rank slower at the same work as its peers: the probe's step counter (torch's own
process-wide step hook, real torch when installed) and the judgement on its rates."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raytop.diagnose.time_sinks import slow_rank_findings
from raytop.probe.step_counter import MIN_SPAN_S, StepCounter
from tests.unit.test_time_shares import ranked, run_of


def test_without_torch_nothing_is_counted(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch.optim.optimizer", raising=False)
    counter = StepCounter()
    counter.sample(1.0)
    assert counter.record() == (None, None)


def test_torchs_optimizer_steps_are_counted_and_their_rate_starts_at_the_first():
    torch = pytest.importorskip("torch")
    counter = StepCounter()
    counter.sample(100.0)  # installs torch's hook (torch is loaded)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        counter.sample(101.0)  # no step yet: the rate does not start here
        for second in range(30):
            for _ in range(4):
                model(torch.randn(3, 2)).sum().backward()
                optimizer.step()
            counter.sample(110.0 + second)
            if second == int(MIN_SPAN_S) - 1:
                assert counter.record() == (4 * (second + 1), None)  # too short a span
        assert counter.record() == (120, 4.0)
    finally:
        counter.close()
    optimizer.step()
    assert counter.steps == 120  # the hook is gone with its rank


def stepping(rank: int, rate: float | None, compute: float = 30.0, done: bool = False):
    w = ranked(rank, {"compute": compute, "data_loader": 40.0 - compute})
    return replace(w, step_rate=rate, optimizer_steps=100, done=done)


def test_a_rank_slower_at_the_same_work_is_named_with_its_rate_beside_its_peers():
    run = run_of(stepping(0, 9.8), stepping(1, 3.1, compute=31.0), stepping(2, 10.0))
    (finding,) = slow_rank_findings(run)
    assert (finding.kind, finding.severity, finding.ranks) == ("slow_rank", "warning", (1,))
    assert finding.message.startswith("rank 1 makes 3.10 optimizer steps/s, its peers 9.90,")
    assert "same mix of work (compute 78%, theirs 75%)" in finding.message


@pytest.mark.parametrize("workers", [
    (stepping(0, 10.0), stepping(1, 9.9)),  # lockstep (DDP): one pace
    (stepping(0, 10.0), stepping(1, 3.0, compute=10.0)),  # not the same work: a straggler's
    (stepping(0, 10.0), stepping(1, None)),  # a rate not known yet
    (stepping(0, 10.0), stepping(1, 3.0, done=True)),  # done
    (stepping(0, 10.0),),  # alone
])  # fmt: skip
def test_no_slow_rank_without_positive_evidence(workers):
    assert slow_rank_findings(run_of(*workers)) == []


def _slow_by_definition(run) -> list[int]:
    """Each rank against the median of every other rank, sorted afresh: the definition."""
    import statistics

    from raytop.diagnose.time_sinks import SAME_MIX, SLOWER, _compute

    slow = []
    for w in run.workers:
        peers = [p for p in run.workers if p is not w]
        pace = statistics.median(p.step_rate for p in peers)
        usual = statistics.median(_compute(p) for p in peers)
        if pace > 0 and w.step_rate <= SLOWER * pace and abs(_compute(w) - usual) <= SAME_MIX:
            slow.append(w.rank)
    return slow


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 3.0, 3.1, 6.0, 9.9, 10.0]),
                          st.integers(0, 40)), min_size=2, max_size=9))  # fmt: skip
def test_the_peers_medians_read_off_one_order_are_the_definitions(ranks) -> None:
    run = run_of(*(stepping(i, rate, compute=float(c)) for i, (rate, c) in enumerate(ranks)))
    assert [f.ranks[0] for f in slow_rank_findings(run)] == _slow_by_definition(run)
