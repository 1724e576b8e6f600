"""Train V2's own record of a run, as raytop takes it, and its translation into raytop's
words.

With ``RAY_TRAIN_ENABLE_STATE_TRACKING=1`` in a driver, Train keeps its runs, their attempts
(one worker group each) and their workers in a detached state actor, which the dashboard
serves (``wire.dashboard``; docs/RAY_FACTS.md#train-state-actor). For a run raytop did not
start and whose workers have no probe, that is more than the actor table says: the run's
name, its attempts with their status and error, and each worker's world rank (the actor
table only gives pids). ``model.untrusted_train_state`` validates the answer into these
records; ``pipeline.uninstrumented`` joins them to the run's controller in the actor table.

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from raytop.model.records import MAX_ERROR_CHARS, MAX_METRIC_KEY_CHARS
from raytop.model.train_run import Attempt

# Train's RunStatus and RunAttemptStatus (ray/train/v2/_internal/state/schema.py).
RUN_STATUSES = frozenset(
    {"INITIALIZING", "SCHEDULING", "RUNNING", "RESTARTING", "RESIZING", "FINISHED", "ERRORED",
     "ABORTED"}
)  # fmt: skip
# An attempt's status in raytop's words (model.Attempt.status). PENDING is its worker group
# being scheduled: an attempt that has begun, as the RunProbe's opens at SCHEDULING.
ATTEMPT_STATUS = {
    "PENDING": "running",
    "RUNNING": "running",
    "FINISHED": "finished",
    "ERRORED": "errored",
    "ABORTED": "aborted",
}


@dataclass(frozen=True)
class StateWorker:
    """One worker of an attempt, as Train recorded it when the worker group started."""

    world_rank: int
    local_rank: int
    node_rank: int
    node_id: str
    pid: int
    gpu_ids: tuple[str, ...] = ()
    resources: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StateAttempt:
    """One attempt: ``status`` is Train's (a key of ``ATTEMPT_STATUS``); ``detail`` its
    ``status_detail`` (an errored attempt's error snippets, an aborted one's reason);
    ``size`` the workers it was scheduled with (its workers are listed once started)."""

    attempt_id: str
    status: str
    started_at: float  # unix seconds
    ended_at: float | None
    detail: str | None
    size: int
    workers: tuple[StateWorker, ...] = ()


@dataclass(frozen=True)
class StateRun:
    """One run: its attempts oldest first."""

    run_id: str
    name: str
    controller_actor_id: str
    status: str  # one of RUN_STATUSES
    started_at: float
    ended_at: float | None
    attempts: tuple[StateAttempt, ...] = ()


# Train's error string for a worker group (worker_group/poll.py get_error_string): one block
# per distinct error, "[Rank 0,2 Error Snippet]:" then the error (a traceback, for a train
# function that raised), lowest ranks first.
_SNIPPET_HEADER = re.compile(r"^\[Rank [0-9, ]+ Error Snippet\]:\s*$")
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*(?:\([\w.]*\))?)(?::\s?(?P<msg>.*))?$")


def _first_block(detail: str) -> list[str]:
    """The lines of the first error block (its header left out)."""
    lines = detail.strip().splitlines()
    block: list[str] = []
    for line in lines:
        if _SNIPPET_HEADER.match(line.strip()):
            if block:
                break
            continue
        block.append(line)
    return block


def error_of(detail: str | None) -> tuple[str | None, str | None]:
    """(exception class, one line of its message) of an attempt's ``status_detail``: the
    first block's exception (its lowest ranks'), as the RunProbe says an error: the
    message's last line, at most ``MAX_ERROR_CHARS``. With no traceback to read (an
    aborted attempt's reason) no class, and the last line."""
    if not detail or not detail.strip():
        return None, None
    block = _first_block(detail)
    starts = [i for i, line in enumerate(block) if line.strip() == _TRACEBACK]
    if starts:
        after = block[starts[-1] + 1 :]
        # The frames are indented; the exception's line is the first that is not, and
        # every line after it is its message's.
        at = next(
            (i for i, line in enumerate(after) if line.strip() and not line[0].isspace()), None
        )
        match = _EXCEPTION_LINE.match(after[at].strip()) if at is not None else None
        if match:
            said = [line.strip() for line in (match.group("msg") or "", *after[at + 1 :])]
            return match.group("cls")[:MAX_METRIC_KEY_CHARS], _last(said)
    return None, _last(line.strip() for line in block)


def _last(lines) -> str | None:
    """The last non-empty line, at most ``MAX_ERROR_CHARS``; None when there is none."""
    kept = [line for line in lines if line]
    return kept[-1][:MAX_ERROR_CHARS] if kept else None


def attempt_of(attempt: StateAttempt, index: int) -> Attempt:
    """``attempt`` as raytop's ``Attempt`` (``index``: 1-based, in its run); one still
    running has no duration (``Attempt.lasted`` says it, as of a snapshot)."""
    status = ATTEMPT_STATUS[attempt.status]
    error_class, error = (None, None)
    if status in ("errored", "aborted"):
        error_class, error = error_of(attempt.detail)
    return Attempt(
        index=index,
        status=status,
        started_at=attempt.started_at,
        attempt_id=attempt.attempt_id,
        ended_at=attempt.ended_at,
        duration_s=(
            None if attempt.ended_at is None else max(0.0, attempt.ended_at - attempt.started_at)
        ),
        error_class=error_class,
        error=error,
    )
