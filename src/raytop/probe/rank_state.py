"""One Train worker's probe state: its report counts (the hot path, in the training
thread), its checkpoint uploads and barrier waits, and the flush thread that sends the
whole cumulative state to the Ledger.

The hot path only bumps two counters and stamps a time (microseconds). The daemon thread
sends a ``model.records.RankReport`` every ``flush_interval_s`` when something changed and
at least every second as a heartbeat (pid, CPU %, RSS, CUDA memory, where the train loop
is: ``probe.activity``), answers raytop's commands (``probe.rank_commands``), and never
raises into training: a dead ledger or any error is counted in ``dropped`` and the ledger
is recreated on the next flush.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections import deque
from typing import Any

import psutil

from raytop.model.records import MAX_REPORT_HISTORY, BarrierWait, CheckpointUpload, RankReport
from raytop.probe.activity import ActivitySampler
from raytop.probe.checkpoint_files import UploadInFlight, list_files, start_upload
from raytop.probe.gpu_use import gpu_use
from raytop.probe.ledger import call_failed, get_or_create_ledger
from raytop.probe.rank_commands import RankCommands
from raytop.probe.step_counter import StepCounter
from raytop.probe.time_shares import TimeShares, rank_share
from raytop.wire.train_frames import report_parts
from raytop.wire.train_hooks import WorkerIdentity, training_thread_id, upload_call_details

HEARTBEAT_S = 1.0
MAX_CHECKPOINTS = 16  # upload records kept (and sent) per rank


class RankState:
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
        self._shares = TimeShares()  # where its wall time goes (``probe.time_shares``)
        self._steps = StepCounter()  # its optimizer steps (``probe.step_counter``)
        self._report_parts: tuple[str, dict[str, str]] | None = None  # read on first use
        self.commands = RankCommands(self)  # raytop's stack / Flight Recorder requests
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
            files=list_files(local_path),
            sync_s=self._sync_s(self.entered),
            start=now,
            end=now,
            error=None,
        ))  # fmt: skip

    def upload_started(self) -> UploadInFlight | None:
        """Record one checkpoint upload (SYNC: in the training thread; ASYNC: in Train's
        upload thread), with the files this rank put in it, and start hashing them."""
        call = upload_call_details()
        if call is None:
            return None
        record = CheckpointUpload(
            dir_name=call.dir_name,
            report=self.entered,
            mode="SYNC" if threading.get_ident() == self.train_thread else "ASYNC",
            custom_upload=call.custom_upload,
            files=list_files(call.local_path),
            sync_s=self._sync_s(self.entered),
            start=time.time(),
            end=None,
            error=None,
        )
        self.checkpoints.append(record)
        return start_upload(record, call.local_path)

    # -- flush thread --------------------------------------------------------------

    def finish(self) -> None:
        self.done = True
        self._wake.set()
        self._thread.join(timeout=2.0)
        self._steps.close()

    def _run(self) -> None:
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
                self._sample_shares(now)
                if now - last_command_check >= HEARTBEAT_S:
                    last_command_check = now
                    self.commands.answer()
                    self._sample_activity()
                    self._steps.sample(now)
                uploads = tuple((c["dir_name"], c["end"], c["error"], len(c.get("hashes", ())))
                                for c in self.checkpoints)  # fmt: skip
                key = (
                    self.entered,
                    self.exited,
                    self.done,
                    self.commands.stack and self.commands.stack[0],
                    self.commands.native and self.commands.native[0],
                    self.commands.flight_recorder and self.commands.flight_recorder[0],
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

    def _sample_shares(self, now: float) -> None:
        """On every wake (ten times a second): the share the train loop is in now."""
        if self.done:
            return
        thread = self.train_thread or training_thread_id()
        frame = sys._current_frames().get(thread) if thread is not None else None
        if frame is None:
            return
        if self._report_parts is None:
            self._report_parts = report_parts()
        started = bool(self.entered or self._steps.steps)
        kind, waiting = rank_share(frame, *self._report_parts, started)
        del frame  # no frame kept alive past the sample
        self._shares.add(kind, now, waiting)

    def _message(self, process: Any) -> RankReport:
        ident = self.identity
        gpu_util, gpu_used = gpu_use()
        steps, step_rate = self._steps.record()
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
            gpu_util_percent=gpu_util,
            gpu_memory_used_bytes=gpu_used,
            optimizer_steps=steps,
            step_rate=step_rate,
            run_path=ident.run_path,
            # Copies: the hooks go on updating the originals while this one is sent.
            checkpoints=[CheckpointUpload(**c) for c in self.checkpoints],
            syncs=[list(wait) for wait in self.syncs],
            # Copies (``list(deque)`` is one step under the GIL): exit stamps the originals.
            report_times=[list(entry) for entry in list(self.history)],
            declared=ident.declared,
            restored_from=ident.restored_from,
        )
        commands = self.commands
        if commands.stack is not None:
            message["stack_request"], message["stack"] = commands.stack
        activity = self._sampler.record() if self._sampler is not None else None
        if activity is not None:
            activity["waiting"], activity["samples"] = self._shares.waiting()
            activity["time_s"], activity["recent_time_s"], activity["startup_s"] = (
                self._shares.record()
            )
            message["activity"] = activity
        if commands.native is not None:
            message["native_stack_request"], message["native_stack"] = commands.native
        if commands.flight_recorder is not None:
            message["flight_recorder_request"], message["flight_recorder"] = (
                commands.flight_recorder
            )
        return message

    def _send(self, message: RankReport) -> None:
        if self._last_ref is not None and call_failed(self._last_ref):
            self.dropped += 1  # the ledger died: count it and recreate it
            self._ledger = None
        if self._ledger is None:
            self._ledger = get_or_create_ledger()
        self._last_ref = self._ledger.update.remote(message)


def _cuda_memory() -> int | None:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.memory_allocated())
    except Exception:
        pass
    return None
