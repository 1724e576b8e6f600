"""The Ledger (``probe.ledger``, the real class, its publish loop into a KV stand-in) and the
reader (``sources.ledger_source``) together: a refresh reads what changed, not the run.

A heartbeat changes no page, only the beats; one rank's report republishes its chunk of
``PAGE_CHUNK_RANKS`` ranks and its chunk of ``BEAT_CHUNK_RANKS`` beats, not the run; and
the reader puts chunks and beats (or an older Ledger's one whole beat) back together into
one run of whole ``Worker``s. The load these keys put on a cluster of 2,000
ranks is measured in ``benchmarks/scale_bench.py``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from raytop.model import untrusted_beats as beats_module
from raytop.model import untrusted_ledger_page as ledger_page_module
from raytop.probe import ledger as ledger_module
from raytop.sources.ledger_source import LedgerReader
from raytop.wire.kv_keys import (
    BEAT_CHUNK_RANKS,
    BEAT_PREFIX,
    INDEX_KEY,
    PAGE_CHUNK_RANKS,
    PAGE_PREFIX,
    chunk_key,
)
from tests.fakes import FakeKv

WORLD = BEAT_CHUNK_RANKS * 2 + 3  # three chunks of beats, the last one short
BEATS = [BEAT_PREFIX + "r1.a1", BEAT_PREFIX + "r1.a1~1", BEAT_PREFIX + "r1.a1~2"]
PAGES = sorted(PAGE_PREFIX + chunk_key("r1.a1", n) for n in range(-(-WORLD // PAGE_CHUNK_RANKS)))


def report(rank: int, entered: int = 1, cpu: float = 50.0) -> dict:
    return {"run_id": "r1", "run_name": "exp-t1", "attempt_id": "a1", "world_size": WORLD,
            "rank": rank, "local_rank": rank % 8, "node_rank": rank // 8, "node_id": "n",
            "gpu_ids": [], "placement_group_id": None, "pid": 1000 + rank,
            "entered": entered, "exited": entered, "last_enter_at": 10.0 * entered,
            "last_exit_at": 10.0 * entered + 1, "usual_interval_s": 10.0, "done": False,
            "dropped": 0, "sent_at": 99.0, "cpu_percent": cpu, "rss_bytes": 2**30,
            "gpu_memory_bytes": None, "run_path": "/s/exp/r1", "checkpoints": [], "syncs": [],
            "report_times": [[10.0 * entered, 10.0 * entered + 1]],
            "activity": {"kind": "user", "where": "train.py:3", "since": 9.0,
                         "sampled_at": 99.0, "samples": 5, "waiting": 0.0}}  # fmt: skip


class Published:
    """The Ledger's publish loop, one tick at a time, into a ``FakeKv``; ``puts`` the keys
    each tick wrote."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kv = FakeKv()
        self.puts: list[str] = []
        monkeypatch.setattr(ledger_module, "kv_put_in_cluster", self._put)
        monkeypatch.setattr(ledger_module, "kv_del_in_cluster", self.kv.data.pop)
        monkeypatch.setattr(ledger_module.Ledger, "_start_publisher", lambda self: None)
        self.ledger = ledger_module.Ledger()

    def _put(self, key: str, value: bytes) -> None:
        self.puts.append(key)
        self.kv.put(key, value)

    def send(self, *reports: dict) -> list[str]:
        """The reports reach the Ledger, then one publish tick: the keys it wrote, less
        the index."""

        async def go() -> None:
            for message in reports:
                await self.ledger.update(json.loads(json.dumps(message)))
            task = asyncio.ensure_future(self.ledger._publish_loop())
            # One tick: until it wrote the index (a fixed sleep missed the tick on a
            # loaded machine, and the next send then wrote both ticks' keys).
            for _ in range(500):
                await asyncio.sleep(0.01)
                if INDEX_KEY in self.puts:
                    break
            task.cancel()

        self.puts = []
        asyncio.run(go())
        return sorted(k for k in self.puts if k != INDEX_KEY)


def calls_of(monkeypatch: pytest.MonkeyPatch, module, name: str) -> list[tuple]:
    """The arguments of every call of ``module.name`` from now on (it still runs)."""
    calls: list[tuple] = []
    real = getattr(module, name)

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_chunks_and_beats_read_back_as_one_run_of_whole_workers(monkeypatch):
    published = Published(monkeypatch)
    written = published.send(*(report(r) for r in range(WORLD)))
    assert written == [*BEATS, *PAGES] and len(PAGES) > len(BEATS)
    (run,), status = LedgerReader(published.kv).read(now=100.0)
    assert status.available and status.warnings == ()
    assert [w.rank for w in run.workers] == list(range(WORLD)) and run.world_size == WORLD
    last = run.workers[-1]
    assert (last.pid, last.reports_entered, last.cpu_percent, last.rss_bytes) == (
        1000 + WORLD - 1,
        1,
        50.0,
        2**30,
    )
    assert last.activity.where == "train.py:3" and last.heartbeat_at is not None
    assert 0 <= run.workers[-1].since_beat(status.known_at(100.0)) < 60
    assert run.run_path == "/s/exp/r1"


def test_a_heartbeat_changes_no_page_and_one_report_only_its_chunk(monkeypatch):
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(WORLD)))
    reader = LedgerReader(published.kv)
    reader.read(now=100.0)

    # every rank's heartbeat: new CPU figures, the same counts
    assert published.send(*(report(r, cpu=90.0) for r in range(WORLD))) == BEATS
    (run,), _ = reader.read(now=101.0)
    assert sorted(published.kv.multi_gets[-1]) == BEATS
    assert {w.cpu_percent for w in run.workers} == {90.0}
    assert read_afresh(published, 101.0) == run  # the kept Workers, moved on, are the same

    # one rank of the second beat chunk reports: its page chunk and its beats, nothing else
    rank = BEAT_CHUNK_RANKS + 5
    chunks = [BEAT_PREFIX + "r1.a1~1", PAGE_PREFIX + chunk_key("r1.a1", rank // PAGE_CHUNK_RANKS)]
    assert published.send(report(rank, entered=2, cpu=90.0)) == chunks
    (run,), _ = reader.read(now=102.0)
    assert sorted(published.kv.multi_gets[-1]) == chunks
    entered = {w.rank: w.reports_entered for w in run.workers}
    assert entered[rank] == 2 and set(entered.values()) == {1, 2} and len(entered) == WORLD
    assert read_afresh(published, 102.0) == run
    (later,), status = reader.read(now=109.0)  # nothing changed: the very run
    assert later is run and read_afresh(published, 109.0) == run
    assert run.workers[0].since_report(status.known_at(109.0)) == 99.0  # its times: no ages


def test_ages_run_to_the_ledgers_last_publish_not_past_it(monkeypatch):
    """A ledger that stopped publishing holds counts true at its last publish: the ages
    read from it stop there (and so every wait judged from them), until it publishes
    again."""
    published = Published(monkeypatch)
    published.send(report(0))  # entered its report at 10.0
    last_publish = json.loads(published.kv.data[INDEX_KEY])["published_at"]
    (run,), status = LedgerReader(published.kv).read(now=last_publish + 3.0)
    assert status.available
    assert run.workers[0].since_report(status.known_at(last_publish + 3.0)) == (last_publish - 10.0)
    (run,), status = LedgerReader(published.kv).read(now=last_publish + 60.0)
    assert not status.available
    assert run.workers[0].since_report(status.known_at(last_publish + 60.0)) == (
        last_publish - 10.0
    )


def test_an_older_ledgers_whole_beat_still_reads(monkeypatch):
    """A Ledger before 2026-12-05 published an attempt's beats as one value, under the
    name of chunk 0: every rank's beat is read from it."""
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(WORLD)))
    index = json.loads(published.kv.data[INDEX_KEY])
    whole = {}
    for name in [k for k in index["beats"]]:
        whole.update(json.loads(published.kv.data.pop(BEAT_PREFIX + name))["ranks"])
    published.kv.data[BEAT_PREFIX + "r1.a1"] = json.dumps({"ranks": whole}).encode()
    index["beats"] = {"r1.a1": 7}
    published.kv.data[INDEX_KEY] = json.dumps(index).encode()
    (run,), status = LedgerReader(published.kv).read(now=100.0)
    assert status.warnings == () and len(run.workers) == WORLD
    assert all(w.cpu_percent == 50.0 and w.heartbeat_at is not None for w in run.workers)


def read_afresh(published: Published, now: float):
    (run,), _ = LedgerReader(published.kv).read(now=now)
    return run


def test_a_bad_beat_keeps_its_last_good_copy_and_the_counts(monkeypatch):
    published = Published(monkeypatch)
    published.send(report(0), report(1))
    reader = LedgerReader(published.kv)
    reader.read(now=100.0)
    published.send(report(0, cpu=70.0), report(1, cpu=70.0))
    published.kv.data[BEAT_PREFIX + "r1.a1"] = b'{"ranks": {"0": {"cpu_percent": "hot"}}}'
    (run,), status = reader.read(now=101.0)
    assert [w.cpu_percent for w in run.workers] == [50.0, 50.0]  # the last good beat
    assert [w.reports_entered for w in run.workers] == [1, 1]
    assert status.warnings == (
        "ledger/beat/r1.a1: ranks.0.cpu_percent: expected a finite number, got a string",
    )


def test_an_evicted_attempt_takes_its_chunks_and_beat_with_it(monkeypatch):
    monkeypatch.setattr(ledger_module, "MAX_PAGES", 1)
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(BEAT_CHUNK_RANKS + 1)))
    published.send({**report(0), "attempt_id": "a2"})
    assert sorted(k for k in published.kv.data if k != INDEX_KEY) == [
        BEAT_PREFIX + "r1.a2",
        PAGE_PREFIX + "r1.a2",
    ]  # fmt: skip (the evicted attempt's chunks and beats are gone)
    (run,), _ = LedgerReader(published.kv).read(now=100.0)
    assert run.attempt_id == "a2" and [w.rank for w in run.workers] == [0]


def test_the_ranks_held_are_bounded_whatever_the_attempts(monkeypatch):
    monkeypatch.setattr(ledger_module, "MAX_RANK_RECORDS", BEAT_CHUNK_RANKS + 10)
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(BEAT_CHUNK_RANKS)))
    published.send(*({**report(r), "attempt_id": "a2"} for r in range(20)))
    assert list(published.ledger.pages) == ["r1.a2"] and published.ledger.ranks_held == 20
    # the newest attempt stays, even alone over the bound
    published.send(*({**report(r), "attempt_id": "a3"} for r in range(BEAT_CHUNK_RANKS + 11)))
    assert list(published.ledger.pages) == ["r1.a3"]
    assert published.ledger.ranks_held == BEAT_CHUNK_RANKS + 11


def test_one_ranks_report_revalidates_that_rank_alone_and_the_others_keep_their_records(
    monkeypatch,
):
    """A report republishes its rank's whole chunk; the reader keeps the records (and so
    the ``Worker``s) of the chunk's other ranks, by the number the Ledger gives each rank
    (``model.untrusted_ledger_page``), and reads what a fresh reader reads."""
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(WORLD)))
    reader = LedgerReader(published.kv)
    (before,), _ = reader.read(now=100.0)
    checked = calls_of(monkeypatch, ledger_page_module, "rank_record")
    rank = BEAT_CHUNK_RANKS + 5
    published.send(report(rank, entered=2))
    (run,), _ = reader.read(now=101.0)
    assert [where for _, where in checked] == [f"ranks.{rank}"]  # one rank of the chunk
    same = [w.rank for w, b in zip(run.workers, before.workers, strict=True)
            if w.rank != rank and w.pid == b.pid]  # fmt: skip
    assert len(same) == WORLD - 1 and run.workers[rank].reports_entered == 2
    checked.clear()
    assert read_afresh(published, 101.0) == run  # a fresh reader checks every rank
    assert len(checked) == WORLD


def test_one_ranks_beat_keeps_the_other_beats_of_its_chunk_and_their_workers(monkeypatch):
    """A rank's heartbeat re-sends its whole chunk of beats; the reader keeps the checked
    beat (and so the very ``Worker``) of each rank whose beat is the one it read before,
    and reads what a fresh reader reads."""
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(WORLD)))
    reader = LedgerReader(published.kv)
    (before,), _ = reader.read(now=100.0)
    checked = calls_of(monkeypatch, beats_module, "_plain")
    rank = BEAT_CHUNK_RANKS + 5
    assert published.send(report(rank, cpu=80.0)) == [BEAT_PREFIX + "r1.a1~1"]
    (run,), _ = reader.read(now=101.0)  # a new second: beats read
    assert [beat["cpu_percent"] for (beat,) in checked] == [80.0]
    kept = [w.rank for w, b in zip(run.workers, before.workers, strict=True) if w is b]
    assert kept == [r for r in range(WORLD) if r != rank]
    assert run.workers[rank].cpu_percent == 80.0
    assert read_afresh(published, 101.0) == run
    (again,), _ = reader.read(now=101.5)  # the same second: the very run
    assert again is run


def test_a_beat_chunk_held_is_fetched_again_at_most_once_a_second(monkeypatch):
    """The probes beat once a second: a beat chunk the reader holds is fetched again when
    its version moved and a second has passed since beats were last fetched; a chunk it
    never read, at once; pages at every read, with their attempt's changed beats."""
    published = Published(monkeypatch)
    published.send(*(report(r) for r in range(WORLD)))
    reader = LedgerReader(published.kv)
    reader.read(now=100.0)
    published.send(report(0, cpu=80.0))  # a beat alone: not yet
    asked = len(published.kv.multi_gets)
    (run,), _ = reader.read(now=100.5)
    assert len(published.kv.multi_gets) == asked and run.workers[0].cpu_percent == 50.0
    published.send(report(1, entered=2))  # a report: its page and its attempt's beats
    (run,), _ = reader.read(now=100.7)
    assert sorted(published.kv.multi_gets[-1]) == [BEAT_PREFIX + "r1.a1", PAGE_PREFIX + "r1.a1"]
    assert run.workers[1].reports_entered == 2 and run.workers[0].cpu_percent == 80.0
    published.send(report(2, cpu=70.0))  # a beat alone again
    asked = len(published.kv.multi_gets)
    (run,), _ = reader.read(now=100.9)
    assert len(published.kv.multi_gets) == asked and run.workers[2].cpu_percent == 50.0
    (run,), _ = reader.read(now=101.0)  # a second since the beats were last due
    assert published.kv.multi_gets[-1] == [BEAT_PREFIX + "r1.a1"]
    assert run.workers[2].cpu_percent == 70.0
    published.send({**report(0), "attempt_id": "a2"})  # a new attempt: its beats at once
    reader.read(now=101.2)
    assert sorted(published.kv.multi_gets[-1]) == [BEAT_PREFIX + "r1.a2", PAGE_PREFIX + "r1.a2"]
