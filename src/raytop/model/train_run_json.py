"""A ``TrainRun``'s JSON form (``Snapshot.to_json`` writes it, ``from_json`` reads it):
the model carries times, and its JSON the ages said from them too (``docs/schema.md``)."""

from __future__ import annotations

from typing import Any

from raytop.model.nccl_ras import CommLag, RayHangDetector, RayHangVerdict
from raytop.model.no_probe import NoProbe
from raytop.model.time_shares import shares
from raytop.model.train_run import (
    Activity,
    Attempt,
    CheckpointRecord,
    RetryBudget,
    TrainRun,
    Worker,
    seconds_since,
)

# What a rank's JSON carries beside what the model holds (``docs/schema.md``): its ages
# as of the snapshot's ``ages_at`` and its time shares (the model says them from its times
# and its Activity: ``Worker.since_report``, ``time_shares``). Written by
# ``with_json_said``, left by ``run_from_json``.
WORKER_SAID = ("last_report_age_s", "heartbeat_age_s", "time_shares", "recent_time_shares")


def with_json_said(run: dict[str, Any], now: float) -> dict[str, Any]:
    """A run's JSON form (``Snapshot.to_json``) with its ranks' ages and time shares and
    its running attempts' durations, as of ``now``, in place."""
    for w in run.get("workers", ()):
        w["last_report_age_s"] = seconds_since(now, w.get("last_enter_at"))
        w["heartbeat_age_s"] = seconds_since(now, w.get("heartbeat_at"))
        activity = w.get("activity") or {}
        w["time_shares"] = shares(activity["time_s"]) if activity else None
        w["recent_time_shares"] = shares(activity["recent_time_s"]) if activity else None
    for a in run.get("attempts", ()):
        if _running(a):
            a["duration_s"] = seconds_since(now, a.get("started_at"))
    return run


def _running(attempt: dict[str, Any]) -> bool:
    return attempt.get("status") == "running" and attempt.get("ended_at") is None


def run_from_json(data: dict[str, Any]) -> TrainRun:
    """A ``TrainRun`` from its JSON form (``Snapshot.from_json``)."""
    workers = tuple(
        Worker(**{**{k: v for k, v in w.items() if k not in WORKER_SAID},
                  "gpu_ids": tuple(w.get("gpu_ids", ())),
                  "activity": Activity(**w["activity"]) if w.get("activity") else None})
        for w in data.get("workers", ())
    )  # fmt: skip
    checkpoints = tuple(
        CheckpointRecord(**{
            **c,
            "ranks": tuple(c.get("ranks", ())),
            **{key: {k: tuple(v) for k, v in c.get(key, {}).items()}
               for key in ("collisions", "replicated", "uncompared")},
        })
        for c in data.get("checkpoints", ())
    )  # fmt: skip
    attempts = tuple(  # a running one's duration is said as of the snapshot, not kept
        Attempt(**{**a, "duration_s": None if _running(a) else a.get("duration_s")})
        for a in data.get("attempts", ())
    )
    budget = {k: RetryBudget(**b) for k, b in data.get("retry_budget", {}).items()}
    no_probe = NoProbe(**data["no_probe"]) if data.get("no_probe") else None
    hang = data.get("ray_hang")
    ray_hang = RayHangVerdict(**{
        **hang, "stack_ranks": tuple(hang.get("stack_ranks", ())),
        "lagging": tuple(CommLag(**{**c, "behind": tuple(c["behind"])}) for c in hang["lagging"]),
    }) if hang else None  # fmt: skip
    detector = RayHangDetector(**data["ray_detector"]) if data.get("ray_detector") else None
    return TrainRun(**{**data, "workers": workers, "checkpoints": checkpoints,
                       "attempts": attempts, "retry_budget": budget,
                       "no_probe": no_probe, "ray_hang": ray_hang,
                       "ray_detector": detector})  # fmt: skip
