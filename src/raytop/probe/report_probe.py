"""ReportProbe: counts every rank's ``ray.train.report`` calls, from inside the workers.

Train V2 hooks (DeveloperAPI, RAY_NOTES h) run it in every worker: ``on_report`` wraps
each report call, entry before the barrier, exit after it. The hot path only bumps two
counters and stamps a time (microseconds); a daemon thread sends the whole cumulative
state to the Ledger every ``RAYTOP_PROBE_FLUSH_S`` (0.1 s) when it changed and at least
every second as a heartbeat (pid, CPU %, RSS, CUDA memory). It never raises into training
and never blocks a report: a dead ledger or any error is counted in ``dropped`` and the
ledger is recreated on the next flush. The same thread answers raytop's "send your
stack" command, read from the GCS KV store; when the command asks for native stacks too
(``native``), a second thread runs py-spy on this process (``probe.native_stack``) and
the answer goes out with the next flush.

Launched runs get it automatically; any other Train run opts in with
``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe`` (raytop installed on the image).
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import threading
import time
import traceback
from collections import deque
from contextlib import contextmanager, suppress
from typing import Any

from raytop.model.records import MAX_REPORT_HISTORY, BarrierWait, CheckpointUpload, RankReport
from raytop.probe.activity import ActivitySampler
from raytop.probe.flight_recorder import trigger_dump
from raytop.probe.ledger import get_or_create_ledger
from raytop.probe.native_stack import native_stack
from raytop.wire.cluster_kv import kv_get_in_cluster
from raytop.wire.kv_keys import FLIGHT_RECORDER_COMMAND_KEY, STACKS_COMMAND_KEY
from raytop.wire.train_hooks import (
    WorkerIdentity,
    report_call_details,
    train_worker_callback_bases,
    train_worker_identity,
    training_thread_id,
    upload_call_details,
)

WorkerCallback, TrainContextCallback = train_worker_callback_bases()

FLUSH_INTERVAL_S = 0.1
HEARTBEAT_S = 1.0
MAX_STACK_CHARS = 20_000
MAX_CHECKPOINTS = 16  # upload records kept (and sent) per rank
MAX_FILES = 200  # files listed per checkpoint (enough to spot a collision)


class _RankState:
    """The per-process probe state and its flush thread."""

    def __init__(self, identity: WorkerIdentity, flush_interval_s: float) -> None:
        self.identity = identity
        self.flush_interval_s = flush_interval_s
        self.pid = os.getpid()
        self.entered = 0
        self.exited = 0
        self.last_enter_at: float | None = None
        self.last_exit_at: float | None = None
        self.enter_times: deque[float] = deque(maxlen=9)
        # [entered_at, exited_at] of its last reports; exit stamps the newest in place.
        self.history: deque[list[float | None]] = deque(maxlen=MAX_REPORT_HISTORY)
        self.train_thread: int | None = None
        self.train_native_id: int | None = None  # its OS thread id (py-spy names that)
        self.done = False
        self.dropped = 0
        self.checkpoints: deque[CheckpointUpload] = deque(maxlen=MAX_CHECKPOINTS)
        # This rank's waits in the report barrier (Train's checkpoint-name sync, done on
        # every report), the last few.
        self.syncs: deque[BarrierWait] = deque(maxlen=MAX_CHECKPOINTS)
        self._sampler: ActivitySampler | None = None  # once the train loop's thread is known
        self._stack: tuple[str, str] | None = None  # (request id, stack text)
        self._native: tuple[str, str] | None = None  # (request id, native stack text)
        self._native_thread: threading.Thread | None = None
        self._flight_recorder: tuple[str, str] | None = None  # (request id, what it did)
        self._fr_answered: str | None = None
        self._answered: str | None = None
        self._ledger: Any = None
        self._last_ref: Any = None
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="raytop-probe", daemon=True)
        self._thread.start()

    # -- hot path (training thread) ---------------------------------------------------

    def enter(self) -> None:
        now = time.time()
        ident = threading.get_ident()
        if ident != self.train_thread:
            self.train_thread = ident
            self.train_native_id = threading.get_native_id()
        self.entered += 1
        self.last_enter_at = now
        self.enter_times.append(now)
        self.history.append([now, None])

    def exit(self) -> None:
        now = time.time()
        self.exited += 1
        self.last_exit_at = now
        if self.history:
            self.history[-1][1] = now

    def sync_started(self) -> BarrierWait:
        wait = BarrierWait(self.entered, time.time(), None)
        self.syncs.append(wait)
        return wait

    def sync_ended(self, wait: BarrierWait) -> None:
        """Stamp the end of ``wait`` where it sits in ``syncs`` (a record is immutable, so
        it is replaced: the newest, unless ``MAX_CHECKPOINTS`` newer ones pushed it out)."""
        for i in range(len(self.syncs) - 1, -1, -1):
            if self.syncs[i] is wait:
                self.syncs[i] = wait._replace(end=time.time())
                return

    def _sync_s(self, report: int) -> float | None:
        for wait in reversed(self.syncs):
            if wait.report == report:
                return wait.end - wait.start if wait.end is not None else None
        return None

    def no_upload_checkpoint(self, local_path: str) -> None:
        """A NO_UPLOAD report: the checkpoint already sits in the run's storage folder
        (no transfer hook runs); record it as a finished, upload-less checkpoint."""
        now = time.time()
        self.checkpoints.append(CheckpointUpload(
            dir_name=os.path.basename(local_path.rstrip("/")),
            report=self.entered,
            mode="NO_UPLOAD",
            custom_upload=False,
            files=_list_files(local_path),
            sync_s=self._sync_s(self.entered),
            start=now,
            end=now,
            error=None,
        ))  # fmt: skip

    def upload_started(self) -> CheckpointUpload | None:
        """Record one checkpoint upload (SYNC: in the training thread; ASYNC: in Train's
        upload thread), with the files this rank put in it."""
        call = upload_call_details()
        if call is None:
            return None
        record = CheckpointUpload(
            dir_name=call.dir_name,
            report=self.entered,
            mode="SYNC" if threading.get_ident() == self.train_thread else "ASYNC",
            custom_upload=call.custom_upload,
            files=_list_files(call.local_path),
            sync_s=self._sync_s(self.entered),
            start=time.time(),
            end=None,
            error=None,
        )
        self.checkpoints.append(record)
        return record

    # -- flush thread --------------------------------------------------------------

    def finish(self) -> None:
        self.done = True
        self._wake.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        import psutil

        process = psutil.Process()
        process.cpu_percent(None)
        last_key: tuple | None = None
        last_sent = 0.0
        last_command_check = 0.0
        while True:
            woken = self._wake.wait(self.flush_interval_s)
            try:
                now = time.monotonic()
                if self.train_thread is not None and self.train_thread not in sys._current_frames():
                    self.done = True  # the train loop returned or raised
                if now - last_command_check >= HEARTBEAT_S:
                    last_command_check = now
                    self._answer_commands()
                    self._sample_activity()
                uploads = tuple((c["dir_name"], c["end"], c["error"]) for c in self.checkpoints)
                key = (
                    self.entered,
                    self.exited,
                    self.done,
                    self._stack and self._stack[0],
                    self._native and self._native[0],
                    self._flight_recorder and self._flight_recorder[0],
                    uploads,
                )
                if key != last_key or now - last_sent >= HEARTBEAT_S or woken:
                    self._send(self._message(process))
                    last_key, last_sent = key, now
            except Exception:
                self.dropped += 1
            if woken:
                return

    def _sample_activity(self) -> None:
        """Once a second: where the train loop is (``probe.activity``)."""
        if self.done:
            return
        thread = self.train_thread or training_thread_id()
        if thread is None:
            return
        if self._sampler is None or self._sampler.thread_id != thread:
            self._sampler = ActivitySampler(thread)
        self._sampler.sample(time.time())

    def _message(self, process: Any) -> RankReport:
        ident = self.identity
        gaps = [b - a for a, b in zip(self.enter_times, list(self.enter_times)[1:], strict=False)]
        message = RankReport(
            run_id=ident.run_id,
            run_name=ident.run_name,
            attempt_id=ident.attempt_id,
            world_size=ident.world_size,
            rank=ident.world_rank,
            local_rank=ident.local_rank,
            node_rank=ident.node_rank,
            node_id=ident.node_id,
            gpu_ids=ident.gpu_ids,
            placement_group_id=ident.placement_group_id,
            pid=self.pid,
            entered=self.entered,
            exited=self.exited,
            last_enter_at=self.last_enter_at,
            last_exit_at=self.last_exit_at,
            usual_interval_s=statistics.median(gaps) if gaps else None,
            done=self.done,
            dropped=self.dropped,
            sent_at=time.time(),
            cpu_percent=process.cpu_percent(None),
            rss_bytes=process.memory_info().rss,
            gpu_memory_bytes=_cuda_memory(),
            run_path=ident.run_path,
            # Copies: the hooks go on updating the originals while this one is sent.
            checkpoints=[CheckpointUpload(**c) for c in self.checkpoints],
            syncs=[list(wait) for wait in self.syncs],
            # Copies (``list(deque)`` is one step under the GIL): exit stamps the originals.
            report_times=[list(entry) for entry in list(self.history)],
            declared=ident.declared,
            restored_from=ident.restored_from,
        )
        if self._stack is not None:
            message["stack_request"], message["stack"] = self._stack
        activity = self._sampler.record() if self._sampler is not None else None
        if activity is not None:
            message["activity"] = activity
        if self._native is not None:
            message["native_stack_request"], message["native_stack"] = self._native
        if self._flight_recorder is not None:
            message["flight_recorder_request"], message["flight_recorder"] = self._flight_recorder
        return message

    def _send(self, message: RankReport) -> None:
        import ray

        if self._last_ref is not None:
            ready, _ = ray.wait([self._last_ref], timeout=0)
            if ready:
                try:
                    ray.get(ready[0])
                except Exception:  # the ledger died: count it and recreate it
                    self.dropped += 1
                    self._ledger = None
        if self._ledger is None:
            self._ledger = get_or_create_ledger()
        self._last_ref = self._ledger.update.remote(message)

    def _answer_commands(self) -> None:
        self._answer_stacks()
        self._answer_flight_recorder()

    def _answer_flight_recorder(self) -> None:
        """A Flight Recorder request: one non-blocking write to this rank's dump pipe
        (``probe.flight_recorder``), once per request."""
        command = self._new_command(FLIGHT_RECORDER_COMMAND_KEY, self._fr_answered)
        if command is None:
            return
        request = self._fr_answered = command.get("request_id")
        self._flight_recorder = (str(request), trigger_dump(self.identity.world_rank))

    def _new_command(self, key: str, answered: str | None) -> dict | None:
        """raytop's command under ``key`` when it is one this rank has not answered yet and
        it names this rank's run (or no run); None otherwise."""
        raw = kv_get_in_cluster(key)
        if not raw:
            return None
        command = json.loads(raw)
        if not isinstance(command, dict):
            return None
        wanted = command.get("run_id")
        if command.get("request_id") == answered or (wanted and wanted != self.identity.run_id):
            return None
        return command

    def _answer_stacks(self) -> None:
        command = self._new_command(STACKS_COMMAND_KEY, self._answered)
        if command is None:
            return
        request = self._answered = command.get("request_id")
        self._stack = (request, self.stack_text())
        if command.get("native") is True:  # raytop's older than native stacks never ask
            self._start_native(str(request))

    def _start_native(self, request: str) -> None:
        """py-spy on this process, in its own thread: it takes up to a few seconds, and
        the flush thread goes on sending heartbeats meanwhile. One at a time."""
        if self.done:
            self._native = (request, "(the train loop has returned: no native stack taken)")
            return
        if self._native_thread is not None and self._native_thread.is_alive():
            self._native = (request, "the previous native stack capture is still running; "
                                     "ask again in a few seconds")  # fmt: skip
            return

        def capture() -> None:
            try:
                text = native_stack(self.pid, train_native_id=self.train_native_id)
            except Exception as exc:  # native_stack never raises; this is belt and braces
                text = f"native stack: {type(exc).__name__}"
            self._native = (request, text)

        self._native_thread = threading.Thread(
            target=capture, name="raytop-native-stack", daemon=True
        )
        self._native_thread.start()

    def stack_text(self) -> str:
        """The train loop thread's stack (all other threads' if it never reported)."""
        if self.done:
            return "(the train loop has returned: this rank runs no training code)"
        frames = sys._current_frames()
        names = {t.ident: t.name for t in threading.enumerate()}
        if self.train_thread in frames:
            chosen = [self.train_thread]
        else:
            skip = {threading.get_ident()}
            chosen = [i for i in frames if i not in skip]
        parts = []
        for ident in chosen:
            label = "train loop" if ident == self.train_thread else names.get(ident, str(ident))
            parts.append(
                f"--- thread {label} ---\n" + "".join(traceback.format_stack(frames[ident]))
            )
        return "\n".join(parts)[-MAX_STACK_CHARS:]


def _list_files(path: str | None) -> dict[str, int]:
    """Relative path → size of a local checkpoint folder (bounded)."""
    files: dict[str, int] = {}
    if not path or not os.path.isdir(path):
        return files
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            try:
                files[os.path.relpath(full, path)] = os.path.getsize(full)
            except OSError:
                continue
            if len(files) >= MAX_FILES:
                return files
    return files


def _cuda_memory() -> int | None:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.memory_allocated())
    except Exception:
        pass
    return None


_STATE: _RankState | None = None


class ReportProbe(WorkerCallback, TrainContextCallback):
    """Add to ``ray.train.RunConfig(callbacks=[...])``, or set
    ``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe``; needs no arguments."""

    def __init__(self) -> None:
        self.flush_interval_s = float(os.environ.get("RAYTOP_PROBE_FLUSH_S", FLUSH_INTERVAL_S))

    def after_init_train_context(self) -> None:
        global _STATE
        try:
            _STATE = _RankState(train_worker_identity(), self.flush_interval_s)
        except Exception:  # no probe is better than a broken worker
            logging.getLogger(__name__).exception("raytop ReportProbe disabled in this worker")
            _STATE = None

    def before_worker_shutdown(self) -> None:
        if _STATE is not None:
            with suppress(Exception):
                _STATE.finish()

    @contextmanager
    def on_checkpoint_sync(self):
        state, wait, call = _STATE, None, None
        if state is not None:
            try:
                wait = state.sync_started()
                call = report_call_details()
            except Exception:
                wait = None
        try:
            yield
        finally:
            if wait is not None:
                with suppress(Exception):
                    state.sync_ended(wait)
                    if call and call.mode == "NO_UPLOAD" and call.local_path:
                        state.no_upload_checkpoint(call.local_path)

    @contextmanager
    def on_checkpoint_transfer(self):
        state, record = _STATE, None
        if state is not None:
            try:
                record = state.upload_started()
            except Exception:
                record = None
        try:
            yield
        except BaseException as exc:
            if record is not None:
                record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            raise
        finally:
            if record is not None:
                record["end"] = time.time()

    @contextmanager
    def on_report(self):
        state = _STATE
        if state is not None:
            with suppress(Exception):
                state.enter()
        try:
            yield
        finally:
            if state is not None:
                with suppress(Exception):
                    state.exit()
