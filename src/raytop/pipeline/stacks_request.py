"""One stacks request (``status --stacks``, the Run screen's ``s``): every rank's Python
stack, from whichever side can give it.

- **Ranks with raytop's probe** answer a request written to the cluster's KV store
  (``pipeline.ledger_commands``) in their next report: the collector is polled until
  every live rank of such a run answered, or the timeout. The request is written only
  when such a run is on view.
- **Ranks with no probe** cannot answer, so their stacks are read from outside, by
  py-spy (``sources.pyspy``): run by raytop itself for workers on raytop's own node, or
  by Ray's dashboard (its node's agent runs py-spy) for workers elsewhere, when the
  cluster enabled profiling. These run in threads beside the probes' wait, each with a
  timeout within the request's.

Either way the answer lands where a probe's does (``Worker.stack``, ``native_stack``, the
request they answer), with ``Worker.stack_by`` saying who took it and, for a rank with
no probe whose stack could not be taken, ``Worker.stack_problem`` saying why in one line.
Stacks left over from an earlier request are dropped: a stale stack would mislead.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable

from raytop.model import Node, Snapshot, TrainRun, Worker
from raytop.model.stacks import STACK_BY_DASHBOARD, STACK_BY_PROBE, STACK_BY_PY_SPY, StackAnswer
from raytop.pipeline.ledger_commands import LedgerCommands
from raytop.sources.pyspy import (
    DUMP_TIMEOUT_S,
    NOT_HERE,
    PROFILING_DISABLED,
    Tracebacks,
    local_dump,
    remote_dump,
)

STACK_POLL_S = 0.25
MAX_PARALLEL_DUMPS = 4  # py-spy processes (or dashboard asks) at once
MIN_DUMP_S = 0.1  # less time than this left: no dump is started
DUMP_GRACE_S = 0.5  # a py-spy stopped at the deadline: its answer says so, not "no answer"
OUT_OF_TIME = "the stacks request ran out of time before this rank's turn"
DISABLED = NOT_HERE + PROFILING_DISABLED  # the dashboard's 403, as a rank's one line
# (run id, pid) → (its Python stack, its native one when asked)
Answers = dict[tuple[str, int], tuple[StackAnswer, StackAnswer | None]]


@dataclasses.dataclass(frozen=True)
class Readers:
    """What a stacks request goes through: the collector's ``collect``, the writer of the
    probes' commands (None: no cluster), whether a node address is this host's, and
    Ray's dashboard (None: none)."""

    collect: Callable[[], Snapshot]
    commands: LedgerCommands | None
    is_local: Callable[[str], bool]
    dashboard: Tracebacks | None


def wanted_runs(snapshot: Snapshot, run_id: str | None, instrumented: bool) -> list[TrainRun]:
    """The live runs of the request (``run_id``, or every one) with or without the probe."""
    return [
        r
        for r in snapshot.all_runs()
        if run_id in (None, r.run_id) and r.instrumented == instrumented and not r.finished
    ]


def ask_stacks(
    readers: Readers, run_id: str | None, timeout_s: float, native: bool
) -> tuple[Snapshot, str]:
    """The snapshot with every rank's answer (ranks that did not answer in ``timeout_s``
    have no stack) and the request id it answers."""
    deadline = time.monotonic() + timeout_s
    first = readers.collect()
    jobs = [(r.run_id, w) for r in wanted_runs(first, run_id, False) for w in r.workers]
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=MAX_PARALLEL_DUMPS, thread_name_prefix="raytop-py-spy"
    )
    try:
        taker = _Taker(readers, {n.node_id: n for n in first.cluster.nodes}, native, deadline)
        futures = {(run, w.pid): pool.submit(taker.take, w) for run, w in jobs if w.pid is not None}
        if readers.commands is not None and wanted_runs(first, run_id, True):
            snapshot, request = _ask_probes(readers, run_id, deadline, native)
        else:
            snapshot, request = first, uuid.uuid4().hex[:12]
        left = max(0.0, deadline - time.monotonic())
        concurrent.futures.wait(futures.values(), timeout=left + DUMP_GRACE_S)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    answers = {key: _result(f, timeout_s) for key, f in futures.items()}
    return with_answers(_only_answers(snapshot, request), answers, request), request


def _result(future, timeout_s: float) -> tuple[StackAnswer, StackAnswer | None]:
    """A worker's answers, or one line: none in time, or what went wrong taking them."""
    if not future.done() or future.cancelled():
        late = StackAnswer(STACK_BY_PY_SPY, problem=f"no answer within {timeout_s:g} s")
        return late, None
    if (exc := future.exception()) is not None:
        return StackAnswer(STACK_BY_PY_SPY, problem=f"{type(exc).__name__}: {exc}"), None
    return future.result()


class _Taker:
    """Takes one worker's stacks: py-spy here for a worker on raytop's node, else Ray's
    dashboard. The dashboard's first answer says whether it takes stacks at all: the other
    asks wait for it, and are not made once it said profiling is disabled."""

    def __init__(self, readers: Readers, nodes: dict[str, Node], native: bool,
                 deadline: float) -> None:  # fmt: skip
        self._readers = readers
        self._nodes = nodes
        self._native = native
        self._deadline = deadline
        self._gate = threading.Lock()
        self._takes_stacks: bool | None = None  # None: the dashboard not asked yet

    def take(self, worker: Worker) -> tuple[StackAnswer, StackAnswer | None]:
        python = self._one(worker, native=False)
        if not self._native:
            return python, None
        if python.text is None:  # the same refusal would answer: said once, not twice
            return python, StackAnswer(python.by, problem=python.problem)
        return python, self._one(worker, native=True)

    def _left(self) -> float:
        return min(DUMP_TIMEOUT_S, self._deadline - time.monotonic())

    def _one(self, worker: Worker, native: bool) -> StackAnswer:
        assert worker.pid is not None
        node = self._nodes.get(worker.node_id or "")
        if node is None or not node.alive:
            return StackAnswer(STACK_BY_PY_SPY, problem="its node is not alive in the cluster")
        if self._left() <= MIN_DUMP_S:
            return StackAnswer(STACK_BY_PY_SPY, problem=OUT_OF_TIME)
        if self._readers.is_local(node.address):
            return local_dump(worker.pid, native=native, timeout_s=self._left())
        with self._gate:
            if self._takes_stacks is None:
                answer = self._remote(worker.pid, node.node_id, native)
                self._takes_stacks = answer.problem != DISABLED
                return answer
        if not self._takes_stacks:
            return StackAnswer(STACK_BY_DASHBOARD, problem=DISABLED)
        return self._remote(worker.pid, node.node_id, native)

    def _remote(self, pid: int, node_id: str, native: bool) -> StackAnswer:
        left = self._left()  # after the wait for the dashboard's first answer
        if left <= MIN_DUMP_S:
            return StackAnswer(STACK_BY_DASHBOARD, problem=OUT_OF_TIME)
        return remote_dump(self._readers.dashboard, pid, node_id, native=native, deadline_s=left)


def _ask_probes(
    readers: Readers, run_id: str | None, deadline: float, native: bool
) -> tuple[Snapshot, str]:
    """Write the request for the probes and poll until every live rank of a probed run
    answered, or the deadline; the last snapshot and the request id."""
    assert readers.commands is not None
    request = readers.commands.request_stacks(run_id, native=native)
    while True:
        snapshot = readers.collect()
        asked = [w for r in wanted_runs(snapshot, run_id, True) for w in r.workers if not w.done]
        answered = all(
            w.stack_request == request and (not native or w.native_stack_request == request)
            for w in asked
        )
        if answered or time.monotonic() > deadline:
            return snapshot, request
        time.sleep(STACK_POLL_S)


def _workers(snapshot: Snapshot, fix: Callable[[TrainRun, Worker], Worker]) -> Snapshot:
    """``snapshot`` with each run's workers passed through ``fix``."""

    def fixed(run: TrainRun) -> TrainRun:
        return dataclasses.replace(run, workers=tuple(fix(run, w) for w in run.workers))

    return dataclasses.replace(
        snapshot,
        experiments=tuple(
            dataclasses.replace(e, runs=tuple(fixed(r) for r in e.runs))
            for e in snapshot.experiments
        ),
        runs=tuple(fixed(r) for r in snapshot.runs),
    )


def _only_answers(snapshot: Snapshot, request: str) -> Snapshot:
    """Drop stacks left over from earlier requests; the probes' answers say who took them."""

    def clean(run: TrainRun, w: Worker) -> Worker:
        if w.stack_request != request:
            w = dataclasses.replace(w, stack=None)
        if w.native_stack_request != request:
            w = dataclasses.replace(w, native_stack=None)
        if w.stack is not None or w.native_stack is not None:
            w = dataclasses.replace(w, stack_by=STACK_BY_PROBE)
        return w

    return _workers(snapshot, clean)


def with_answers(snapshot: Snapshot, answers: Answers, request: str) -> Snapshot:
    """The ranks with no probe get what py-spy (here or through the dashboard) answered,
    matched by run and pid, as answers to ``request``."""

    def fill(run: TrainRun, w: Worker) -> Worker:
        found = answers.get((run.run_id, w.pid)) if w.pid is not None else None
        if run.instrumented or found is None:
            return w
        python, native = found
        return dataclasses.replace(
            w,
            stack=python.text,
            stack_request=request,
            stack_by=python.by,
            stack_problem=python.problem,
            native_stack=None if native is None else native.text or native.problem,
            native_stack_request=None if native is None else request,
        )

    return _workers(snapshot, fill)
