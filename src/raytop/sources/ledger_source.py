"""Reads the report ledger from the GCS KV store into ``model.TrainRun`` pages.

One ``get`` of the index and one ``multi_get`` of the pages whose version changed per
refresh (the protocol in ``raytop.wire.kv_keys``). Notices when the ledger was recreated
(its start time changed) and when it stopped publishing.

Every value is untrusted input (``model.untrusted``): an index or page over its size cap
or of the wrong shape is a one-line warning naming its key (``LedgerStatus.warnings``);
the last good copy of that page is kept and ``read`` goes on, so one bad page can neither
end a command nor stop the TUI's poller.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from raytop.model import (
    Activity,
    Attempt,
    LedgerStatus,
    RetryBudget,
    TrainRun,
    Worker,
    untrusted,
    untrusted_kv,
)
from raytop.model.records import (
    FAILURE_CLASSES,
    BarrierWait,
    CheckpointUpload,
    FlightRecorderRequest,
    LedgerPage,
    RankRecord,
    RunAttempts,
    StackRequest,
)
from raytop.model.records import (
    Activity as ActivityRecord,
)
from raytop.wire.gcs import GcsKv
from raytop.wire.kv_keys import (
    FLIGHT_RECORDER_COMMAND_KEY,
    INDEX_KEY,
    PAGE_PREFIX,
    RUN_PREFIX,
    STACKS_COMMAND_KEY,
    page_key,
)

STALE_AFTER_S = 5.0  # the ledger republishes its index every second


def _age(now: float, at: float | None) -> float | None:
    return None if at is None else max(0.0, now - at)


def worker_from_record(record: RankRecord, now: float) -> Worker:
    """One rank of a validated page as the ``Worker`` the faces show (ages as of ``now``)."""
    return Worker(
        rank=record["rank"],
        reports_entered=record["entered"],
        reports_exited=record["exited"],
        local_rank=record["local_rank"],
        node_rank=record["node_rank"],
        node_id=record["node_id"],
        pid=record["pid"],
        last_enter_at=record["last_enter_at"],
        last_exit_at=record["last_exit_at"],
        last_report_age_s=_age(now, record["last_enter_at"]),
        heartbeat_at=record["received_at"],
        heartbeat_age_s=_age(now, record["received_at"]),
        cpu_percent=record["cpu_percent"],
        rss_bytes=record["rss_bytes"],
        gpu_memory_bytes=record["gpu_memory_bytes"],
        gpu_ids=tuple(record["gpu_ids"]),
        usual_interval_s=record["usual_interval_s"],
        done=record["done"],
        dropped_events=record["dropped"],
        stack=record["stack"],
        stack_request=record["stack_request"],
        native_stack=record["native_stack"],
        native_stack_request=record["native_stack_request"],
        flight_recorder=record["flight_recorder"],
        flight_recorder_request=record["flight_recorder_request"],
        report_times=tuple(entered for entered, _ in record["report_times"]),
        report_exits=tuple(exited for _, exited in record["report_times"]),
        declared_resources=record["declared"],
        restored_from=record["restored_from"],
        activity=_activity(record["activity"]),
    )


def _activity(record: ActivityRecord | None) -> Activity | None:
    return Activity(**record) if record is not None else None


def attempts_from_record(
    record: RunAttempts, now: float
) -> tuple[tuple[Attempt, ...], dict[str, RetryBudget]]:
    """A validated run record as the run's attempts (durations as of ``now``) and its
    retry budget per failure class."""
    attempts = tuple(
        Attempt(
            index=a["index"], status=a["status"], started_at=a["started_at"],
            attempt_id=a["attempt_id"], ended_at=a["ended_at"],
            duration_s=max(0.0, (a["ended_at"] if a["ended_at"] is not None else now)
                           - a["started_at"]),
            error_class=a["error_class"], error=a["error"], failure_class=a["failure_class"],
            first_report=a["first_report"], restored=a["restored"],
            reports_taken=a.get("reports_taken"), undeliverable=a.get("undeliverable", False),
        )
        for a in record["attempts"]
    )  # fmt: skip
    config = record["failure_config"]
    budget = {
        cls: RetryBudget.of(
            setting,
            config[setting],
            sum(1 for a in attempts if a.status == "errored" and a.failure_class == cls),
        )
        for cls, setting in FAILURE_CLASSES.items()
    }
    return attempts, budget


def _parse(raw: Any, max_bytes: int) -> Any:
    if not isinstance(raw, (bytes, str)):
        raise untrusted.Invalid(f"expected bytes, got {type(raw).__name__}")
    return untrusted.parse(raw, max_bytes)


def _attempt_index(history: tuple[Attempt, ...], attempt_id: str, pages: int) -> int:
    """The page's attempt number: the RunProbe's for that worker group when it has one,
    else the count of the run's pages the ledger holds."""
    for attempt in history:
        if attempt.attempt_id == attempt_id:
            return attempt.index
    return pages


class LedgerReader:
    def __init__(self, kv: GcsKv) -> None:
        self._kv = kv
        self._pages: dict[str, LedgerPage] = {}
        self._versions: dict[str, int] = {}
        self._run_records: dict[str, RunAttempts] = {}  # run_id → the RunProbe's record
        self._run_versions: dict[str, int] = {}
        self._started_at: float | None = None
        self._last_published: float | None = None
        self._restarted: tuple[float, float] | None = None  # (restarted_at, gap_s)

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
            return self._latest_attempts(now), status
        if self._started_at is not None and index["started_at"] != self._started_at:
            gap = index["started_at"] - (self._last_published or index["started_at"])
            self._restarted = (index["started_at"], max(0.0, gap))
            # A new ledger numbers its versions from 1 again: nothing cached is comparable.
            self._pages.clear()
            self._versions.clear()
            self._run_records.clear()
            self._run_versions.clear()
        self._started_at = index["started_at"]
        self._last_published = index["published_at"]
        pages = index["pages"]
        changed = [k for k, v in pages.items() if self._versions.get(k) != v]
        warnings = []
        for key, blob in self._kv.multi_get([PAGE_PREFIX + k for k in changed]).items():
            page_key = key[len(PAGE_PREFIX) :]
            if page_key not in pages:
                continue  # not asked for
            try:
                page = untrusted_kv.ledger_page(_parse(blob, untrusted.MAX_LEDGER_PAGE_BYTES))
            except ValueError as exc:
                # Its last good copy (if any) stays; the page is fetched again next time.
                warnings.append(untrusted.problem(key, exc))
                continue
            self._pages[page_key] = page
            self._versions[page_key] = pages[page_key]
        for gone in set(self._pages) - set(pages):
            self._pages.pop(gone, None)
            self._versions.pop(gone, None)
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
        return self._latest_attempts(now), status

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
                record = untrusted_kv.run_attempts(_parse(blob, untrusted.MAX_KV_VALUE_BYTES))
            except ValueError as exc:
                warnings.append(untrusted.problem(key, exc))
                continue
            self._run_records[run_id] = record
            self._run_versions[run_id] = versions[run_id]
        for gone in set(self._run_records) - set(versions):
            self._run_records.pop(gone, None)
            self._run_versions.pop(gone, None)
        return warnings

    def _latest_attempts(self, now: float) -> tuple[TrainRun, ...]:
        by_run: dict[str, list[LedgerPage]] = {}
        for page in self._pages.values():
            by_run.setdefault(page["run_id"], []).append(page)
        runs = []
        began: dict[str, float] = {}  # run id → when it was first seen
        for attempts in by_run.values():
            attempts.sort(key=lambda p: p["first_seen_at"])
            page = attempts[-1]
            began[page["run_id"]] = attempts[0]["first_seen_at"]
            workers = sorted(
                (worker_from_record(r, now) for r in page["ranks"].values()), key=lambda w: w.rank
            )
            record = self._run_records.get(page["run_id"])
            history, budget = attempts_from_record(record, now) if record else ((), {})
            runs.append(
                TrainRun(
                    run_id=page["run_id"],
                    run_name=page["run_name"],
                    attempt_id=page["attempt_id"],
                    world_size=page["world_size"],
                    attempt_index=_attempt_index(history, page["attempt_id"], len(attempts)),
                    workers=tuple(workers),
                    placement_group_id=page.get("placement_group_id"),
                    run_path=next((r["run_path"] for r in page["ranks"].values()), None),
                    attempts=history,
                    retry_budget=budget,
                )
            )
        for run_id, record in self._run_records.items():
            if run_id in by_run:
                continue
            # A run whose workers never reported (every attempt failed before its probes
            # flushed): its attempts alone.
            history, budget = attempts_from_record(record, now)
            last = history[-1] if history else None
            began[run_id] = history[0].started_at if history else 0.0
            runs.append(
                TrainRun(
                    run_id=run_id, run_name=record["run_name"],
                    attempt_id=(last.attempt_id or "") if last else "", world_size=0,
                    attempt_index=last.index if last else 1,
                    attempts=history, retry_budget=budget,
                )
            )  # fmt: skip
        # By name, and the runs of one name (each controller that ran it: a resumed run has
        # the same name, a new run id) oldest first: ``attach_runs`` keeps the newest.
        return tuple(sorted(runs, key=lambda r: (r.run_name, began[r.run_id])))

    def _ranks(self, run_id: str, attempt_id: str) -> dict[str, RankRecord]:
        page = self._pages.get(page_key(run_id, attempt_id))
        return page["ranks"] if page is not None else {}

    def uploads(self, run_id: str, attempt_id: str) -> dict[int, list[CheckpointUpload]]:
        """The probes' checkpoint upload records of one attempt, per rank."""
        return {int(r): rec["checkpoints"] for r, rec in self._ranks(run_id, attempt_id).items()}

    def syncs(self, run_id: str, attempt_id: str) -> dict[int, list[BarrierWait]]:
        """The probes' recent report-barrier waits, per rank."""
        return {int(r): rec["syncs"] for r, rec in self._ranks(run_id, attempt_id).items()}

    def request_stacks(self, run_id: str | None = None, native: bool = False) -> str:
        """Ask every rank (of ``run_id``, or of every run) for its stack (``native``: its
        native one too, by py-spy); the answers arrive in the pages within a couple of
        probe heartbeats (native ones up to py-spy's timeout later). Returns the request
        id. ``native`` is only written when asked: the command stays what older probes
        read."""
        request_id = uuid.uuid4().hex[:12]
        command = StackRequest(request_id=request_id, run_id=run_id, requested_at=time.time())
        if native:
            command["native"] = True
        self._kv.put(STACKS_COMMAND_KEY, json.dumps(command).encode())
        return request_id

    def request_flight_recorder(self, run_id: str | None = None) -> tuple[str, float]:
        """Ask every rank (of ``run_id``, or of every run) to make PyTorch's Flight
        Recorder dump through its pipe; the answers arrive in the pages within a couple of
        probe heartbeats. Returns the request id and when it was made."""
        request_id = uuid.uuid4().hex[:12]
        now = time.time()
        command = FlightRecorderRequest(request_id=request_id, run_id=run_id, requested_at=now)
        self._kv.put(FLIGHT_RECORDER_COMMAND_KEY, json.dumps(command).encode())
        return request_id, now
