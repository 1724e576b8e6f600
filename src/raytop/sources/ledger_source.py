"""Reads the report ledger from the GCS KV store into ``model.TrainRun`` pages.

One ``get`` of the index and one ``multi_get`` of the pages and beats whose version
changed per refresh (the protocol in ``raytop.wire.kv_keys``): an attempt's ranks come in
chunks, their heartbeat figures in beats chunked the same way (one whole beat from a Ledger
before 2026-12-05), merged here into its ``Worker``s. Notices
when the ledger was recreated (its start time changed) and when it stopped publishing.

Every value is untrusted input (``model.untrusted``): an index or page over its size cap
or of the wrong shape is a one-line warning naming its key (``LedgerStatus.warnings``);
the last good copy of that page is kept and ``read`` goes on, so one bad page can neither
end a command nor stop the TUI's poller.

It only reads: the commands raytop writes to the probes (stacks and Flight Recorder
requests) are ``pipeline.ledger_commands``'s.
"""

from __future__ import annotations

import math
import time
from typing import Any

from raytop.model import (
    Attempt,
    LedgerStatus,
    TrainRun,
    Worker,
    untrusted,
    untrusted_kv,
)
from raytop.model.identity import same_items
from raytop.model.records import (
    CheckpointUpload,
    LedgerPage,
    RankBeat,
    RankRecord,
    RunAttempts,
    Wait,
)
from raytop.model.refresh import same_second
from raytop.model.untrusted_beats import ledger_beats
from raytop.model.untrusted_ledger_page import ledger_page
from raytop.sources.ledger_beat_reads import beats_to_read
from raytop.sources.ledger_records import (
    attempts_from_record,
    detector_from_record,
    with_beat,
    worker_from_record,
)
from raytop.wire.gcs import GcsKv
from raytop.wire.kv_keys import (
    BEAT_PREFIX,
    INDEX_KEY,
    PAGE_PREFIX,
    RUN_PREFIX,
    page_key,
    split_chunk_key,
)

STALE_AFTER_S = 5.0  # the ledger republishes its index every second


def _parse(raw: Any, max_bytes: int) -> Any:
    if not isinstance(raw, (bytes, str)):
        raise untrusted.Invalid(f"expected bytes, got {type(raw).__name__}")
    return untrusted.parse(raw, max_bytes)


def _checked_page(_name: str, data: Any, previous: LedgerPage | None) -> LedgerPage:
    """A page chunk (``untrusted_ledger_page.ledger_page``)."""
    return ledger_page(data, previous)


def _checked_beats(
    _name: str, data: Any, previous: dict[str, RankBeat] | None
) -> dict[str, RankBeat]:
    """A beat chunk (``untrusted_beats.ledger_beats``): a chunk's beats are re-sent whole
    when one of them moved, so the Ledger's publish of a few ranks' beats (they arrive one
    by one over a second) re-sends up to 31 others, each kept as checked at the last read
    by its stamp."""
    return ledger_beats(data, previous)


def _merged(parts: list[dict[str, RankBeat]]) -> dict[str, RankBeat]:
    """One attempt's beats by rank, from its chunks."""
    if not parts:
        return {}
    return parts[0] if len(parts) == 1 else {r: b for part in parts for r, b in part.items()}


def _attempt_index(history: tuple[Attempt, ...], attempt_id: str, pages: int) -> int:
    """The page's attempt number: the RunProbe's for that worker group when it has one,
    else the count of the run's pages the ledger holds."""
    for attempt in history:
        if attempt.attempt_id == attempt_id:
            return attempt.index
    return pages


def _run_of_record(run_id: str, record: RunAttempts) -> TrainRun:
    """A run whose workers never reported (every attempt failed before its probes
    flushed): its attempts alone."""
    history, budget = attempts_from_record(record)
    last = history[-1] if history else None
    return TrainRun(
        run_id=run_id, run_name=record["run_name"],
        attempt_id=(last.attempt_id or "") if last else "", world_size=0,
        attempt_index=last.index if last else 1,
        attempts=history, retry_budget=budget,
        ray_detector=detector_from_record(record),
    )  # fmt: skip


class LedgerReader:
    def __init__(self, kv: GcsKv) -> None:
        self._kv = kv
        self._pages: dict[str, LedgerPage] = {}  # chunk name → page of those ranks
        self._versions: dict[str, int] = {}
        self._attempts: dict[str, list[LedgerPage]] = {}  # page key → its chunks
        # beat name (a page key and its chunk, as ``chunk_key`` names them) → rank → beat
        self._beats: dict[str, dict[str, RankBeat]] = {}
        self._beat_versions: dict[str, int] = {}
        self._beats_read_at = -math.inf  # when changed beat chunks were last fetched
        # page key → rank → (its record, its beat, the Worker built from them)
        self._worker_cache: dict[str, dict[str, tuple[RankRecord, RankBeat | None, Worker]]]
        self._worker_cache = {}
        self._run_records: dict[str, RunAttempts] = {}  # run_id → the RunProbe's record
        self._run_versions: dict[str, int] = {}
        self._started_at: float | None = None
        self._last_published: float | None = None
        self._restarted: tuple[float, float] | None = None  # (restarted_at, gap_s)
        # run id → (what its TrainRun was made from, that TrainRun)
        self._made: dict[str, tuple[tuple, TrainRun]] = {}
        # run id → (its RunProbe record, its attempts, retry budgets and hang detector): a
        # run whose ranks beat is made again with the record it had, the same objects
        self._of_record: dict[str, tuple[RunAttempts, tuple]] = {}

    def read(self, now: float | None = None) -> tuple[tuple[TrainRun, ...], LedgerStatus]:
        """(latest attempt of every run, ledger status). Raises ClusterUnreachable."""
        now = time.time() if now is None else now
        raw = self._kv.get(INDEX_KEY)
        if raw is None:
            status = LedgerStatus(False, error="no ledger yet: no instrumented Train run reported")
            return (), status
        try:
            index = untrusted_kv.ledger_index(_parse(raw, untrusted.MAX_LEDGER_INDEX_BYTES))
        except ValueError as exc:
            # The runs as last read; marked unavailable so the view says its counts are frozen.
            problem = untrusted.problem(INDEX_KEY, exc)
            status = LedgerStatus(
                False, self._started_at, self._last_published,
                error=f"{problem}; counts are frozen", warnings=(problem,),
            )  # fmt: skip
            return self._latest_attempts(), status
        if self._started_at is not None and index["started_at"] != self._started_at:
            gap = index["started_at"] - (self._last_published or index["started_at"])
            self._restarted = (index["started_at"], max(0.0, gap))
            # A new ledger numbers its versions from 1 again: nothing cached is comparable.
            self._pages.clear()
            self._versions.clear()
            self._beats.clear()
            self._beat_versions.clear()
            self._beats_read_at = -math.inf
            self._run_records.clear()
            self._run_versions.clear()
            self._made.clear()
            self._of_record.clear()
        self._started_at = index["started_at"]
        self._last_published = index["published_at"]
        pages, beats = index["pages"], index.get("beats", {})
        # (prefix, listed versions, check, last good values, their versions) of each kind
        kinds = (
            (PAGE_PREFIX, pages, _checked_page, self._pages, self._versions),
            (BEAT_PREFIX, beats, _checked_beats, self._beats, self._beat_versions),
        )
        # Every changed page; beats at a new second, else those of the ranks that
        # reported and those never read (``ledger_beat_reads``).
        new_pages = [k for k, v in pages.items() if self._versions.get(k) != v]
        due = not same_second(now, self._beats_read_at)
        reported = {k: self._pages.get(k) for k in new_pages}
        new_beats = beats_to_read(beats, self._beat_versions, self._beats, reported, due)
        if due:  # the second's read, changed chunks or none: the next is a second on
            self._beats_read_at = now
        changed = [PAGE_PREFIX + k for k in new_pages] + [BEAT_PREFIX + k for k in new_beats]
        blobs = self._kv.multi_get(changed) if changed else {}
        warnings = []
        for prefix, listed, check, kept, held in kinds:
            for key, blob in blobs.items():
                name = key[len(prefix) :]
                if not key.startswith(prefix) or name not in listed:
                    continue  # not asked for
                try:
                    value = check(
                        name, _parse(blob, untrusted.MAX_LEDGER_PAGE_BYTES), kept.get(name)
                    )
                except ValueError as exc:
                    # Its last good copy (if any) stays; it is fetched again next time.
                    warnings.append(untrusted.problem(key, exc))
                    continue
                kept[name], held[name] = value, listed[name]
            for gone in set(kept) - set(listed):
                kept.pop(gone, None)
                held.pop(gone, None)
        self._attempts = {}
        for page in self._pages.values():
            key = page_key(page["run_id"], page["attempt_id"])
            self._attempts.setdefault(key, []).append(page)
        for gone in set(self._worker_cache) - set(self._attempts):
            del self._worker_cache[gone]
        warnings += self._read_run_records(index["runs"])
        stale = now - index["published_at"] > STALE_AFTER_S
        status = LedgerStatus(
            available=not stale,
            started_at=index["started_at"],
            published_at=index["published_at"],
            restarted_at=self._restarted[0] if self._restarted else None,
            gap_s=self._restarted[1] if self._restarted else None,
            error=(
                f"the ledger has not published for {now - index['published_at']:.0f}s "
                "(actor gone?); counts are frozen"
                if stale
                else None
            ),
            warnings=tuple(warnings),
        )
        return self._latest_attempts(), status

    def _read_run_records(self, versions: dict[str, int]) -> list[str]:
        """Fetch the run records (RunProbe) whose version changed; a bad one is a warning
        naming its key and its last good copy stays."""
        warnings = []
        changed = [k for k, v in versions.items() if self._run_versions.get(k) != v]
        blobs = self._kv.multi_get([RUN_PREFIX + k for k in changed]) if changed else {}
        for key, blob in blobs.items():
            run_id = key[len(RUN_PREFIX) :]
            if run_id not in versions:
                continue
            try:
                data = _parse(blob, untrusted.MAX_KV_VALUE_BYTES)
                record = untrusted_kv.run_attempts(data)
            except ValueError as exc:
                warnings.append(untrusted.problem(key, exc))
                continue
            try:  # apart: a bad detector record is its own warning, the attempts still show
                record["hang_detector"] = untrusted_kv.run_hang_detector(data)
            except ValueError as exc:
                warnings.append(untrusted.problem(key, exc))
            self._run_records[run_id] = record
            self._run_versions[run_id] = versions[run_id]
        for gone in set(self._run_records) - set(versions):
            self._run_records.pop(gone, None)
            self._run_versions.pop(gone, None)
        return warnings

    def _latest_attempts(self) -> tuple[TrainRun, ...]:
        """The latest attempt of every run. A run of which nothing new was read is the
        very ``TrainRun`` made before: it carries times, not ages (the pipeline makes
        those, ``pipeline.derive``), and every stage after the reader keeps its result per
        run object (``pipeline.kept_runs``). At 250 runs a refresh made each run again:
        ~40 % of one where nothing changed; and moving every run's ages on at each second
        here made each of them again once a second (docs/PERFORMANCE.md, issue 25)."""
        by_run: dict[str, list[tuple[str, list[LedgerPage]]]] = {}
        for key, chunks in self._attempts.items():
            by_run.setdefault(chunks[0]["run_id"], []).append((key, chunks))
        runs = []
        beats = self._beat_chunks()
        began: dict[str, float] = {}  # run id → when it was first seen
        made: dict[str, tuple[tuple, TrainRun]] = {}
        of_record: dict[str, tuple[RunAttempts, tuple]] = {}
        for attempts in by_run.values():
            attempts.sort(key=lambda a: a[1][0]["first_seen_at"])
            key, chunks = attempts[-1]
            page = chunks[0]
            began[page["run_id"]] = attempts[0][1][0]["first_seen_at"]
            record = self._run_records.get(page["run_id"])
            # Everything its TrainRun is made of: the very objects the reader holds, each
            # replaced only when its version moved.
            parts = (*(c for _, cs in attempts for c in cs), *beats.get(key, ()), record)
            kept = self._made.get(page["run_id"])
            if kept is not None and same_items(kept[0], parts):
                made[page["run_id"]] = kept
                runs.append(kept[1])
                continue
            ranks = self._ranks_of(key)
            workers = self._workers(key, ranks, _merged(beats.get(key, [])))
            history, budget, detector = self._record_parts(page["run_id"], record, of_record)
            run = TrainRun(
                run_id=page["run_id"],
                run_name=page["run_name"],
                attempt_id=page["attempt_id"],
                world_size=page["world_size"],
                attempt_index=_attempt_index(history, page["attempt_id"], len(attempts)),
                workers=tuple(workers),
                placement_group_id=page.get("placement_group_id"),
                run_path=next((r["run_path"] for r in ranks.values()), None),
                attempts=history,
                retry_budget=budget,
                ray_detector=detector,
                controller_poll_s=record.get("controller_poll_s") if record else None,
            )
            made[page["run_id"]] = (parts, run)
            runs.append(run)
        for run_id, record in self._run_records.items():
            if run_id in by_run:
                continue
            kept = self._made.get(run_id)  # its workers never reported
            if kept is not None and kept[0][0] is record:
                run = kept[1]
            else:
                run = _run_of_record(run_id, record)
            made[run_id] = ((record,), run)
            began[run_id] = run.attempts[0].started_at if run.attempts else 0.0
            runs.append(run)
        self._made, self._of_record = made, of_record
        # By name, and the runs of one name (each controller that ran it: a resumed run has
        # the same name, a new run id) oldest first: ``attach_runs`` keeps the newest.
        return tuple(sorted(runs, key=lambda r: (r.run_name, began[r.run_id])))

    def _record_parts(
        self, run_id: str, record: RunAttempts | None, of_record: dict[str, tuple]
    ) -> tuple:
        """The run's attempts, retry budgets and hang detector from its record, or what was
        made of the very same record before (at 250 runs whose ranks all beat, ~5 ms a
        refresh made them again)."""
        if record is None:
            return (), {}, None
        kept = self._of_record.get(run_id)
        if kept is not None and kept[0] is record:
            parts = kept[1]
        else:
            history, budget = attempts_from_record(record)
            parts = (history, budget, detector_from_record(record))
        of_record[run_id] = (record, parts)
        return parts

    def _workers(
        self, key: str, ranks: dict[str, RankRecord], beats: dict[str, RankBeat]
    ) -> list[Worker]:
        """The attempt's ``Worker``s by rank. A rank whose record and beat are the very
        ones read last time keeps its ``Worker``, the very object (what is made of it is
        then kept too, ``pipeline.kept_runs``). At 2,000 ranks, building each afresh was
        most of a refresh where nothing changed."""
        cache = self._worker_cache.setdefault(key, {})
        workers = []
        for rank, record in ranks.items():
            beat = beats.get(rank)
            kept = cache.get(rank)
            if kept is not None and kept[0] is record and kept[1] is beat:
                worker = kept[2]
            elif kept is not None and kept[0] is record and beat is not None:
                worker = with_beat(kept[2], beat)  # a heartbeat: its figures moved
                cache[rank] = (record, beat, worker)
            else:
                worker = worker_from_record(record, beat)
                cache[rank] = (record, beat, worker)
            workers.append(worker)
        workers.sort(key=lambda w: w.rank)
        return workers

    def _beat_chunks(self) -> dict[str, list[dict[str, RankBeat]]]:
        """Every attempt's (page key's) beat chunks as read (or the one whole beat of a
        Ledger before beats came in chunks): the very objects, until one is read again."""
        chunks: dict[str, list[dict[str, RankBeat]]] = {}
        for name, beats in self._beats.items():
            chunks.setdefault(split_chunk_key(name)[0], []).append(beats)
        return chunks

    def _ranks_of(self, key: str) -> dict[str, RankRecord]:
        """Every rank of the attempt ``key`` (a page key), from all its chunks."""
        chunks = self._attempts.get(key, [])
        if len(chunks) == 1:
            return chunks[0]["ranks"]
        return {rank: r for chunk in chunks for rank, r in chunk["ranks"].items()}

    def pages_of(self, run_id: str, attempt_id: str) -> tuple[LedgerPage, ...]:
        """The pages (chunks) of one attempt as last read: the same objects until one of
        them changes, so a reader can tell that nothing did."""
        return tuple(self._attempts.get(page_key(run_id, attempt_id), ()))

    def _ranks(self, run_id: str, attempt_id: str) -> dict[str, RankRecord]:
        return self._ranks_of(page_key(run_id, attempt_id))

    def uploads(self, run_id: str, attempt_id: str) -> dict[int, list[CheckpointUpload]]:
        """The probes' checkpoint upload records of one attempt, per rank."""
        return {int(r): rec["checkpoints"] for r, rec in self._ranks(run_id, attempt_id).items()}

    def syncs(self, run_id: str, attempt_id: str) -> dict[int, tuple[Wait, ...]]:
        """The probes' recent report-barrier waits, per rank."""
        return {int(r): rec["syncs"] for r, rec in self._ranks(run_id, attempt_id).items()}
