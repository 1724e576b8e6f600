"""A validated ledger record (``model.records``) as the model's objects: a rank's record
and its latest heartbeat as a ``Worker``, a run's record as its ``Attempt``s and retry
budgets, and Ray's NCCL hang detector on it. ``ledger_source`` reads the records from the
KV store.

They carry times, never ages: what was read is the same a second later, and is kept while
it is (``ledger_source``). Their ages (a rank's since its last report and heartbeat, a
running attempt's duration) are said from those times where they are shown or judged, as
of the ledger's publish (``Snapshot.ages_at``).
"""

from __future__ import annotations

from typing import Any

from raytop.model import Activity, Attempt, RetryBudget, Worker
from raytop.model.evolve import evolve
from raytop.model.nccl_ras import RayHangDetector
from raytop.model.records import FAILURE_CLASSES, RankBeat, RankRecord, RunAttempts
from raytop.model.records import Activity as ActivityRecord


def worker_from_record(record: RankRecord, beat: RankBeat | None = None) -> Worker:
    """One rank of a validated page as the ``Worker`` the faces show (its times: its ages
    are said where they are shown), with its heartbeat figures from ``beat`` (a ledger
    before beats kept them in the record)."""
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
        report_times=record["report_times"][0],
        report_exits=record["report_times"][1],
        declared_resources=record["declared"],
        restored_from=record["restored_from"],
        **_beat_fields(beat if beat is not None else record),
    )


def _beat_fields(beat: RankBeat | RankRecord) -> dict[str, Any]:
    """The ``Worker`` fields a heartbeat sets, from a beat (or the record itself, from a
    ledger before beats)."""
    return {
        "heartbeat_at": beat["received_at"],
        "cpu_percent": beat["cpu_percent"],
        "rss_bytes": beat["rss_bytes"],
        "gpu_memory_bytes": beat["gpu_memory_bytes"],
        "gpu_util_percent": beat.get("gpu_util_percent"),
        "gpu_memory_used_bytes": beat.get("gpu_memory_used_bytes"),
        "optimizer_steps": beat.get("optimizer_steps"),
        "step_rate": beat.get("step_rate"),
        "activity": _activity(beat["activity"]),
    }


def with_beat(worker: Worker, beat: RankBeat) -> Worker:
    """``worker`` with a newer heartbeat's figures (``worker_from_record``'s, from a beat)."""
    return evolve(worker, **_beat_fields(beat))


def _activity(record: ActivityRecord | None) -> Activity | None:
    return Activity(**record) if record is not None else None


def attempts_from_record(
    record: RunAttempts,
) -> tuple[tuple[Attempt, ...], dict[str, RetryBudget]]:
    """A validated run record as the run's attempts (an ended one's duration; a running
    one's is said as of a snapshot, ``Attempt.lasted``) and its retry budget per failure
    class."""
    attempts = tuple(
        Attempt(
            index=a["index"], status=a["status"], started_at=a["started_at"],
            attempt_id=a["attempt_id"], ended_at=a["ended_at"],
            duration_s=(None if a["ended_at"] is None
                        else max(0.0, a["ended_at"] - a["started_at"])),
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


def detector_from_record(record: RunAttempts) -> RayHangDetector | None:
    """Ray's NCCL hang detector as the run's validated record has it (None: not known).
    Its ``line`` is the pipeline's to make, with the run's verdict."""
    found = record.get("hang_detector")
    return RayHangDetector(**found) if found is not None else None
