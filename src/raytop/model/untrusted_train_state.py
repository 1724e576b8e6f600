"""The validator of what Ray's dashboard says of Train V2's runs: its answer to
``GET /api/train/v2/runs/v1`` (``wire.dashboard``).

The answer comes from another process, maybe of another Ray version, over the network:
the validator returns only what raytop uses (``model.train_state``'s records), typed and in
range, or raises ``Invalid`` naming where (``train_runs[0].attempts[1].workers[0].pid``)
and what was wrong. Keys raytop does not use (the run's settings, its job's details, each
worker's process and GPU figures, keys a later Ray adds) are ignored. Built from
``untrusted``'s checks and caps.

The answer's shape (Ray 2.58: ``dashboard/modules/train/train_head.py`` ``get_train_v2_runs``,
the pydantic models ``TrainRunsResponse`` / ``DecoratedTrainRun`` /
``DecoratedTrainRunAttempt`` / ``DecoratedTrainWorker`` of
``ray/train/v2/_internal/state/schema.py``), newest run first::

    {"train_runs": [{"id": "<hex>", "name": "my-run", "job_id": "02000000",
                     "controller_actor_id": "<hex>", "status": "RUNNING",
                     "status_detail": null, "start_time_ns": 1796…, "end_time_ns": null,
                     "run_settings": {…}, "job_details": {…},
                     "attempts": [{"run_id": "<hex>", "attempt_id": "<hex>",
                                   "status": "ERRORED",
                                   "status_detail": "[Rank 1 Error Snippet]:\\nTraceback …",
                                   "start_time_ns": …, "end_time_ns": …,
                                   "resources": [{"resources": {"CPU": 1.0}}, …],
                                   "workers": [{"world_rank": 0, "local_rank": 0,
                                                "node_rank": 0, "actor_id": "<hex>",
                                                "node_id": "<hex>", "node_ip": "…",
                                                "pid": 796, "gpu_ids": [],
                                                "status": "DEAD", "resources": {…},
                                                "processStats": null, "gpus": []}, …]},
                                  …]}]}

``attempts`` are oldest first (the state actor keeps them in creation order); ``workers``
is empty while the attempt is PENDING, and is sorted by world rank.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from raytop.model.train_state import (
    ATTEMPT_STATUS,
    RUN_STATUSES,
    StateAttempt,
    StateRun,
    StateWorker,
)
from raytop.model.untrusted import (
    MAX_RANKS,
    Invalid,
    MiB,
    at,
    fail,
    integer,
    is_finite_number,
    obj,
    seq,
    text,
)

# One run with a finished 2-worker attempt is ~5 KB (most of it its settings and its job's
# details), a worker ~1 KB more. The state actor keeps every tracked run of the cluster's
# life, in memory: 32 MiB is thousands of runs. Above it the answer is refused unread.
MAX_TRAIN_STATE_BYTES = 32 * MiB
MAX_TRAIN_RUNS = 20_000
MAX_RUN_ATTEMPTS = 10_000  # a run that retries forever has as many as it failed
MAX_ID_CHARS = 128  # Ray's are hex: 32 (run, attempt, actor) or 56 (node) digits
MAX_NAME_CHARS = 1_000
MAX_GPUS = 1_024
MAX_RESOURCE_KINDS = 256
MAX_PID = 2**31 - 1
MAX_TIME_NS = 2**63 - 1  # Train's are time.time_ns(): int64

_HEX = re.compile(r"[0-9a-f]+")


def _ident(d: dict[str, Any], key: str, where: str) -> str:
    """A hex id of Ray's (lower case, as ``ActorID.hex()`` and uuid hex write them)."""
    value = text(d, key, where, nonempty=True)
    if len(value) > MAX_ID_CHARS or not _HEX.fullmatch(value):
        raise Invalid(f"{at(where, key)}: '{value[:40]}' is not a hex id")
    return value


def _status(d: dict[str, Any], where: str, known) -> str:
    value = text(d, "status", where)
    if value not in known:
        raise Invalid(
            f"{at(where, 'status')}: '{value[:40]}' is not one of {', '.join(sorted(known))}"
        )
    return value


def _times(d: dict[str, Any], where: str) -> tuple[float, float | None]:
    """``start_time_ns`` and ``end_time_ns`` (null: not ended) → unix seconds."""
    start = integer(d, "start_time_ns", where, maximum=MAX_TIME_NS)
    end = integer(d, "end_time_ns", where, optional=True, maximum=MAX_TIME_NS)
    if end is not None and end < start:
        raise Invalid(f"{at(where, 'end_time_ns')}: {end} is before start_time_ns {start}")
    return start / 1e9, None if end is None else end / 1e9


def _resources(raw: Any, where: str) -> dict[str, float]:
    """Train's ``TrainResources``: ``{"resources": {"CPU": 1.0, …}}`` (logical amounts)."""
    amounts = obj(obj(raw, where).get("resources"), at(where, "resources"))
    if len(amounts) > MAX_RESOURCE_KINDS:
        where = at(where, "resources")
        raise Invalid(f"{where}: {len(amounts)} entries, over the cap of {MAX_RESOURCE_KINDS}")
    kept: dict[str, float] = {}
    for name, value in amounts.items():
        spot = at(at(where, "resources"), name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(spot, "a finite number", value)
        if not is_finite_number(value) or value < 0:
            raise Invalid(f"{spot}: {value} is not a finite amount of 0 or more")
        kept[name] = float(value)
    return kept


def _gpu_ids(d: dict[str, Any], where: str) -> tuple[str, ...]:
    ids = seq(d.get("gpu_ids") or [], at(where, "gpu_ids"), MAX_GPUS)
    for i, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(at(at(where, "gpu_ids"), i), "a GPU index (an integer of 0 or more)", value)
    return tuple(str(value) for value in ids)


def train_worker(raw: Any, where: str) -> StateWorker:
    """One entry of an attempt's ``workers``."""
    worker = obj(raw, where)
    rank = integer(worker, "world_rank", where, maximum=MAX_RANKS - 1)
    return StateWorker(
        world_rank=rank,
        local_rank=integer(worker, "local_rank", where, maximum=MAX_RANKS - 1),
        node_rank=integer(worker, "node_rank", where, maximum=MAX_RANKS - 1),
        node_id=_ident(worker, "node_id", where),
        pid=integer(worker, "pid", where, minimum=1, maximum=MAX_PID),
        gpu_ids=_gpu_ids(worker, where),
        resources=(
            _resources(worker["resources"], at(where, "resources"))
            if worker.get("resources") is not None
            else {}
        ),
    )


def train_attempt(raw: Any, where: str, run_id: str) -> StateAttempt:
    """One entry of a run's ``attempts``; it must name ``run_id`` as its run."""
    attempt = obj(raw, where)
    if text(attempt, "run_id", where) != run_id:
        raise Invalid(f"{at(where, 'run_id')}: not the run it is listed under ({run_id[:40]})")
    started, ended = _times(attempt, where)
    sizes = seq(attempt.get("resources") or [], at(where, "resources"), MAX_RANKS)
    for i, bundle in enumerate(sizes):
        _resources(bundle, at(at(where, "resources"), i))
    listed = seq(attempt.get("workers") or [], at(where, "workers"), MAX_RANKS)
    workers = tuple(train_worker(w, at(at(where, "workers"), i)) for i, w in enumerate(listed))
    ranks = [w.world_rank for w in workers]
    if len(set(ranks)) != len(ranks):
        raise Invalid(f"{at(where, 'workers')}: a world rank is listed twice")
    return StateAttempt(
        attempt_id=_ident(attempt, "attempt_id", where),
        status=_status(attempt, where, ATTEMPT_STATUS),
        started_at=started,
        ended_at=ended,
        detail=text(attempt, "status_detail", where, optional=True),
        size=max(len(sizes), len(workers)),
        workers=tuple(sorted(workers, key=lambda w: w.world_rank)),
    )


def train_run(raw: Any, where: str) -> StateRun:
    """One entry of ``train_runs``."""
    run = obj(raw, where)
    run_id = _ident(run, "id", where)
    name = text(run, "name", where, nonempty=True)
    if len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise fail(at(where, "name"), f"one printable line of at most {MAX_NAME_CHARS} characters",
                   name[:80])  # fmt: skip
    started, ended = _times(run, where)
    listed = seq(run.get("attempts"), at(where, "attempts"), MAX_RUN_ATTEMPTS)
    attempts = tuple(
        train_attempt(a, at(at(where, "attempts"), i), run_id) for i, a in enumerate(listed)
    )
    return StateRun(
        run_id=run_id,
        name=name,
        controller_actor_id=_ident(run, "controller_actor_id", where),
        status=_status(run, where, RUN_STATUSES),
        started_at=started,
        ended_at=ended,
        attempts=attempts,
    )


def train_runs(data: Any) -> tuple[StateRun, ...]:
    """The answer to ``GET /api/train/v2/runs/v1`` → its runs, as listed. One bad entry
    makes the answer bad: the caller keeps its last good copy (the entries of one answer
    come from one Ray version)."""
    answer = obj(data)
    listed = seq(answer.get("train_runs"), "train_runs", MAX_TRAIN_RUNS)
    return tuple(train_run(r, at("train_runs", i)) for i, r in enumerate(listed))
