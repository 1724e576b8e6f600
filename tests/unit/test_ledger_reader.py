"""The ledger reader over a fake KV store: deltas by version, latest attempt per run,
a recreated ledger noticed, a silent ledger flagged."""

import json

from raytop.pipeline.ledger_commands import LedgerCommands
from raytop.sources.ledger_source import LedgerReader
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, STACKS_COMMAND_KEY
from tests.fakes import FakeKv


def rank(r: int, entered: int, received_at: float = 100.0) -> dict:
    return {"rank": r, "entered": entered, "exited": entered, "last_enter_at": 90.0,
            "received_at": received_at, "pid": 10 + r}  # fmt: skip


def publish(kv: FakeKv, started_at: float, published_at: float, pages: dict[str, dict]):
    for key, page in pages.items():
        kv.data[PAGE_PREFIX + key] = json.dumps(page).encode()
    index = {"started_at": started_at, "published_at": published_at,
             "pages": {k: p["version"] for k, p in pages.items()}}  # fmt: skip
    kv.data[INDEX_KEY] = json.dumps(index).encode()


def page(attempt: str, first_seen: float, version: int, *ranks: dict, world_size=2) -> dict:
    return {"run_id": "run1", "run_name": "exp-t1", "attempt_id": attempt,
            "world_size": world_size, "first_seen_at": first_seen, "version": version,
            "ranks": {str(r["rank"]): r for r in ranks}}  # fmt: skip


def test_no_ledger_yet():
    runs, status = LedgerReader(FakeKv()).read(now=100.0)
    assert runs == () and not status.available and "no ledger" in status.error


def test_only_changed_pages_are_fetched_and_the_latest_attempt_wins():
    kv = FakeKv()
    reader = LedgerReader(kv)
    first = page("a1", 10.0, 1, rank(0, 3), rank(1, 3))
    publish(kv, 1.0, 100.5, {"run1.a1": first})
    (run,), status = reader.read(now=100.5)
    assert status.available and run.attempt_index == 1
    assert [w.reports_entered for w in run.workers] == [3, 3]
    at = status.known_at(100.5)
    assert (run.workers[0].since_beat(at), run.workers[0].since_report(at)) == (0.5, 10.5)
    # half a second later, the ledger not having published since: as of its publish
    (run,), status = reader.read(now=101.0)
    at = status.known_at(101.0)
    assert (run.workers[0].since_beat(at), run.workers[0].since_report(at)) == (0.5, 10.5)

    # a restart: a new worker group (attempt) with fresh counts and a new world size
    second = page("a2", 50.0, 2, rank(0, 1), world_size=1)
    publish(kv, 1.0, 101.0, {"run1.a1": first, "run1.a2": second})
    (run,), _ = reader.read(now=101.0)
    assert (run.attempt_id, run.attempt_index, run.world_size) == ("a2", 2, 1)
    assert kv.multi_gets[-1] == [PAGE_PREFIX + "run1.a2"]  # the unchanged page is not refetched


def test_a_recreated_ledger_is_noticed_with_its_gap():
    kv = FakeKv()
    reader = LedgerReader(kv)
    publish(kv, 1.0, 100.0, {"run1.a1": page("a1", 10.0, 1, rank(0, 3))})
    reader.read(now=100.0)
    publish(kv, 107.0, 108.0, {"run1.a1": page("a1", 107.0, 1, rank(0, 5))})
    (run,), status = reader.read(now=108.0)
    assert status.available and status.restarted_at == 107.0 and status.gap_s == 7.0
    assert run.workers[0].reports_entered == 5  # counts resumed from the probes


def test_a_ledger_that_stopped_publishing_is_unavailable():
    kv = FakeKv()
    publish(kv, 1.0, 100.0, {"run1.a1": page("a1", 10.0, 1, rank(0, 3))})
    _, status = LedgerReader(kv).read(now=130.0)
    assert not status.available and "30s" in status.error


def test_stack_requests_go_through_the_kv_store():
    kv = FakeKv()
    request = LedgerCommands(kv).request_stacks("run1")
    command = json.loads(kv.data[STACKS_COMMAND_KEY])
    assert command["request_id"] == request and command["run_id"] == "run1"


def test_a_malformed_page_is_a_warning_and_its_last_good_copy_stays():
    kv = FakeKv()
    reader = LedgerReader(kv)
    publish(kv, 1.0, 100.0, {"run1.a1": page("a1", 10.0, 1, rank(0, 3), rank(1, 3))})
    reader.read(now=100.5)
    bad = page("a1", 10.0, 2, {**rank(0, 4), "pid": "abc"}, rank(1, 4))
    publish(kv, 1.0, 101.0, {"run1.a1": bad})
    (kept,), status = reader.read(now=101.5)
    assert [w.reports_entered for w in kept.workers] == [3, 3]  # the last good copy
    assert status.available
    assert status.warnings == (
        "ledger/page/run1.a1: ranks.0.pid: expected an integer, got a string",
    )
    publish(kv, 1.0, 102.0, {"run1.a1": page("a1", 10.0, 3, rank(0, 5), rank(1, 5))})
    (fixed,), status = reader.read(now=102.5)  # fetched again: its version never counted
    assert [w.reports_entered for w in fixed.workers] == [5, 5] and status.warnings == ()


def test_a_malformed_index_freezes_the_counts_and_says_so():
    kv = FakeKv()
    reader = LedgerReader(kv)
    publish(kv, 1.0, 100.0, {"run1.a1": page("a1", 10.0, 1, rank(0, 3), rank(1, 3))})
    reader.read(now=100.5)
    for raw in (b"[]", b"{", b"\xff", json.dumps({"started_at": "x", "published_at": 1}).encode()):
        kv.data[INDEX_KEY] = raw
        (again,), status = reader.read(now=101.0)
        assert [w.reports_entered for w in again.workers] == [3, 3] and not status.available
        assert status.error.startswith("ledger/index: ") and status.error.endswith(
            "counts are frozen"
        )
