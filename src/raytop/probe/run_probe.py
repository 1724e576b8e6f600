"""RunProbe: a Train run's failure settings and attempts, from inside its controller.

Train V2 runs it in the controller actor (internal DeveloperAPI hooks, reached through
``wire.train_hooks``). Every controller state change is one step of an
attempt: entering ``SCHEDULING`` opens one, a restart (``RESTARTING``/``RESCHEDULING``)
closes it as errored with the error that caused it and the retry budget Train charges it
to, ``ERRORED``/``FINISHED``/``ABORTED``/``RESIZING`` close it for good. ``after_report``
keeps the first report's scalar metrics of each attempt and the metrics of the last
checkpointed report (what the next attempt restores from). Each worker group's start also
notes whether Ray 2.60's NCCL hang detector is among the run's callbacks, with the settings
Ray parsed for it (``wire.train_hooks.nccl_hang_detector``).

After each change the whole record (``model.records.RunAttempts``) goes fire-and-forget
to the Ledger, which publishes it as ``ledger/run/<run_id>``. Bounded (the newest
``MAX_ATTEMPTS`` attempts, capped snippets and metrics), and it never raises into Train:
any error is counted and dropped.

One RunProbe records a run, whoever registered it: named in ``RAY_TRAIN_CALLBACKS`` and
added by raytop's trainable, Train runs both in the controller; the first to see the
controller start records, any other stays inert (two would each send the run's record and
count its reports).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections import deque
from typing import Any

from raytop.model.records import (
    MAX_ATTEMPTS,
    MAX_ERROR_CHARS,
    MAX_METRIC_KEY_CHARS,
    MAX_REPORT_METRICS,
    AttemptRecord,
    HangDetectorRecord,
    RunAttempts,
)
from raytop.probe.ledger import call_failed, get_or_create_ledger
from raytop.wire.train_frames import controller_poll_s
from raytop.wire.train_hooks import (
    controller_state,
    failure_details,
    nccl_hang_detector,
    nccl_hang_detector_disabled,
    report_has_checkpoint,
    train_controller_callback_bases,
    train_run_identity,
    worker_group_attempt_id,
)

ControllerCallback, WorkerGroupCallback, ReportCallback = train_controller_callback_bases()

_log = logging.getLogger(__name__)

# Controller states that end the open attempt, and the status they give it.
_ENDS = {
    "RESTARTING": "errored",
    "RESCHEDULING": "errored",
    "ERRORED": "errored",
    "FINISHED": "finished",
    "ABORTED": "aborted",
    "RESIZING": "resized",
}


def error_snippet(message: str) -> str:
    """One line of an error message: its last non-empty line (a traceback's ends with
    ``Class: message``), at most ``MAX_ERROR_CHARS``."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:MAX_ERROR_CHARS]


def scalar_metrics(metrics: Any) -> dict[str, float]:
    """The finite number-valued entries of a report's metrics, the first
    ``MAX_REPORT_METRICS`` (keys cut to ``MAX_METRIC_KEY_CHARS``)."""
    kept: dict[str, float] = {}
    if not isinstance(metrics, dict):
        return kept
    for key, value in metrics.items():
        if len(kept) >= MAX_REPORT_METRICS:
            break
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(key, str) and math.isfinite(value):
            kept[key[:MAX_METRIC_KEY_CHARS]] = float(value)
    return kept


class RunRecorder:
    """The attempts of one run (no Ray here: the hooks below feed it)."""

    def __init__(self, run_id: str, run_name: str, failure_config: dict[str, int]) -> None:
        self.run_id = run_id
        self.run_name = run_name
        self.failure_config = dict(failure_config)
        self.attempts: deque[AttemptRecord] = deque(maxlen=MAX_ATTEMPTS)
        self.count = 0
        self.last_checkpoint: dict[str, float] | None = None
        self.hang_detector: HangDetectorRecord | None = None
        self.controller_poll_s = controller_poll_s()  # this process is the controller

    @property
    def open(self) -> AttemptRecord | None:
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last["status"] == "running" else None

    def state(self, name: str, error: BaseException | None, now: float) -> bool:
        """A controller state change; whether the record changed."""
        if name == "SCHEDULING" and self.open is None:
            self.count += 1
            self.attempts.append(AttemptRecord(
                index=self.count, attempt_id=None, status="running", started_at=now,
                ended_at=None, error_class=None, error=None, failure_class=None,
                first_report=None,
                restored=dict(self.last_checkpoint) if self.last_checkpoint else None,
                reports_taken=0, undeliverable=False,
            ))  # fmt: skip
            return True
        status = _ENDS.get(name)
        attempt = self.open
        if status is None or attempt is None:
            return False
        attempt["status"] = status
        attempt["ended_at"] = now
        if error is not None and status == "errored":
            details = failure_details(error)
            attempt["error_class"] = details.error_class[:MAX_METRIC_KEY_CHARS]
            attempt["error"] = error_snippet(details.message)
            attempt["failure_class"] = details.failure_class
            attempt["undeliverable"] = details.undeliverable
        return True

    def started(self, attempt_id: str | None) -> bool:
        attempt = self.open
        if attempt is None or attempt_id is None:
            return False
        attempt["attempt_id"] = attempt_id
        return True

    def detector(self, record: HangDetectorRecord | None) -> bool:
        """Ray's NCCL hang detector as a worker group's callbacks show it (None: they
        could not be read, and what was known stays); whether the record changed."""
        if record is None or record == self.hang_detector:
            return False
        self.hang_detector = record
        return True

    def detector_disabled(self) -> bool:
        """Ray stopped its detector for the rest of the run; whether the record changed."""
        if self.hang_detector is None or self.hang_detector["disabled"]:
            return False
        self.hang_detector = HangDetectorRecord(**{**self.hang_detector, "disabled": True})
        return True

    def report(self, metrics: list[dict[str, Any]], checkpoint: bool) -> bool:
        """One report taken by the controller: always a change (its count), so that a
        controller that stops taking reports is seen stopping at the right one."""
        first = scalar_metrics(metrics[0]) if metrics else {}
        if checkpoint:
            self.last_checkpoint = first
        attempt = self.open
        if attempt is None:
            return False
        attempt["reports_taken"] = (attempt.get("reports_taken") or 0) + 1
        if attempt["first_report"] is None:
            attempt["first_report"] = first
        return True

    def message(self) -> RunAttempts:
        return RunAttempts(
            run_id=self.run_id,
            run_name=self.run_name,
            failure_config=dict(self.failure_config),
            # Copies: the hooks go on changing the originals while this one is sent.
            attempts=[AttemptRecord(**a) for a in self.attempts],
            sent_at=time.time(),
            hang_detector=self.hang_detector,
            controller_poll_s=self.controller_poll_s,
        )


_LOCK = threading.Lock()
# run id → the RunProbe that records it in this process (weak: it goes with its controller)
_RECORDING: weakref.WeakValueDictionary[str, RunProbe] = weakref.WeakValueDictionary()


class RunProbe(ControllerCallback, WorkerGroupCallback, ReportCallback):
    """Add to ``ray.train.RunConfig(callbacks=[...])`` (the raytop trainable does), or
    name it in ``RAY_TRAIN_CALLBACKS=raytop.probe.RunProbe``; needs no arguments."""

    def __init__(self) -> None:
        self._recorder: RunRecorder | None = None
        self._ledger: Any = None
        self._last_ref: Any = None  # the last send's (``_send``)
        self._detector: Any = None  # Ray's NCCL hang detector among the run's callbacks
        self.dropped = 0

    def _guard(self, change: Any) -> None:
        try:
            if change():
                self._send()
        except Exception:  # no record is better than a broken run
            self.dropped += 1
            if self.dropped == 1:
                _log.exception("raytop RunProbe dropped an event")

    def _send(self) -> None:
        """The whole record to the Ledger, fire-and-forget. A call to a dead actor does not
        raise here: its ref fails later. So the last send's ref is looked at first, and a
        failed one means the Ledger died (a ``ray.kill``, its node lost): a new one is got
        by name (the ranks' probes may have made it already) and this whole record goes to
        it. Without that, every later change went to the dead handle, and the run's
        attempts, retry budget and reports taken were gone from the view for good."""
        if self._recorder is None:
            return
        message = self._recorder.message()
        try:
            if self._last_ref is not None and call_failed(self._last_ref):
                self._ledger = None
                self.dropped += 1
            if self._ledger is None:
                self._ledger = get_or_create_ledger()
            self._last_ref = self._ledger.update_run.remote(message)
        except Exception:  # the ledger died: recreate it on the next change
            self._ledger = self._last_ref = None
            self.dropped += 1

    # -- ControllerCallback --------------------------------------------------------------

    def after_controller_start(self, train_run_context: Any) -> None:
        def start() -> bool:
            ident = train_run_identity(train_run_context)
            with _LOCK:
                if _RECORDING.setdefault(ident.run_id, self) is not self:
                    _log.info("raytop RunProbe: another RunProbe records this run already; "
                              "this one stays inert")  # fmt: skip
                    return False
            self._recorder = RunRecorder(ident.run_id, ident.run_name, ident.failure_config)
            return True

        self._guard(start)

    def after_controller_state_update(self, previous_state: Any, current_state: Any) -> None:
        def change() -> bool:
            if self._recorder is None:
                return False
            state = controller_state(current_state)
            return self._recorder.state(state.name, state.error, time.time())

        self._guard(change)

    # -- WorkerGroupCallback ---------------------------------------------------------------

    def after_worker_group_start(self, worker_group: Any) -> None:
        self._guard(
            lambda: (
                self._recorder is not None
                and self._recorder.started(worker_group_attempt_id(worker_group))
            )
        )

        def detector() -> bool:
            if self._recorder is None:
                return False
            record, self._detector = nccl_hang_detector(worker_group)
            return self._recorder.detector(record)

        self._guard(detector)

    def after_worker_group_poll_status(self, worker_group_status: Any) -> None:
        """Every controller poll: one attribute read, a send only when Ray has just
        stopped its NCCL hang detector (it says so once, in the controller's log)."""
        if self._detector is None or not nccl_hang_detector_disabled(self._detector):
            return
        self._guard(lambda: self._recorder is not None and self._recorder.detector_disabled())

    # -- ReportCallback --------------------------------------------------------------------

    def after_report(self, training_report: Any, metrics: list[dict[str, Any]]) -> None:
        self._guard(
            lambda: (
                self._recorder is not None
                and self._recorder.report(metrics, report_has_checkpoint(training_report))
            )
        )


__all__ = ["RunProbe", "RunRecorder", "error_snippet", "scalar_metrics"]
