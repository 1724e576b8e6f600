"""raytop's commands to a rank, answered by its probe: "send your stack" (and its native
stack: py-spy, ``probe.native_stack``) and "make a Flight Recorder dump"
(``probe.flight_recorder``).

raytop writes a command to the GCS KV store (``wire.kv_keys``); the probe's flush thread
reads it once a second and answers each request once, in its next message to the Ledger. A
native capture takes up to a few seconds, so it runs in a thread of its own while the flush
thread goes on sending heartbeats.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from typing import Protocol

from raytop.probe.flight_recorder import trigger_dump
from raytop.probe.native_stack import native_stack
from raytop.wire.cluster_kv import kv_get_in_cluster
from raytop.wire.kv_keys import FLIGHT_RECORDER_COMMAND_KEY, STACKS_COMMAND_KEY
from raytop.wire.train_hooks import WorkerIdentity

MAX_STACK_CHARS = 20_000


class TrainLoop(Protocol):
    """What the commands read of the rank's state (``probe.rank_state.RankState``)."""

    identity: WorkerIdentity
    pid: int
    done: bool
    train_thread: int | None
    train_native_id: int | None


class RankCommands:
    """The answers of one rank: ``stack``, ``native`` and ``flight_recorder`` are
    (request id, text) once a request was answered, else None."""

    def __init__(self, rank: TrainLoop) -> None:
        self.rank = rank
        self.stack: tuple[str, str] | None = None
        self.native: tuple[str, str] | None = None
        self.native_thread: threading.Thread | None = None
        self.flight_recorder: tuple[str, str] | None = None
        self._answered: str | None = None
        self._fr_answered: str | None = None

    def answer(self) -> None:
        """Read raytop's commands and answer the new ones (the flush thread, once a second)."""
        self._answer_stacks()
        self._answer_flight_recorder()

    def _answer_flight_recorder(self) -> None:
        """A Flight Recorder request: one non-blocking write to this rank's dump pipe
        (``probe.flight_recorder``), once per request."""
        command = self._new_command(FLIGHT_RECORDER_COMMAND_KEY, self._fr_answered)
        if command is None:
            return
        request = self._fr_answered = command.get("request_id")
        self.flight_recorder = (str(request), trigger_dump(self.rank.identity.world_rank))

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
        if command.get("request_id") == answered or (
            wanted and wanted != self.rank.identity.run_id
        ):
            return None
        return command

    def _answer_stacks(self) -> None:
        command = self._new_command(STACKS_COMMAND_KEY, self._answered)
        if command is None:
            return
        request = self._answered = command.get("request_id")
        self.stack = (request, self.stack_text())
        if command.get("native") is True:  # raytop's older than native stacks never ask
            self._start_native(str(request))

    def _start_native(self, request: str) -> None:
        """py-spy on this process, in its own thread: it takes up to a few seconds, and
        the flush thread goes on sending heartbeats meanwhile. One at a time."""
        if self.rank.done:
            self.native = (request, "(the train loop has returned: no native stack taken)")
            return
        if self.native_thread is not None and self.native_thread.is_alive():
            self.native = (request, "the previous native stack capture is still running; "
                                    "ask again in a few seconds")  # fmt: skip
            return

        def capture() -> None:
            try:
                text = native_stack(self.rank.pid, train_native_id=self.rank.train_native_id)
            except Exception as exc:  # native_stack never raises; this is belt and braces
                text = f"native stack: {type(exc).__name__}"
            self.native = (request, text)

        self.native_thread = threading.Thread(
            target=capture, name="raytop-native-stack", daemon=True
        )
        self.native_thread.start()

    def stack_text(self) -> str:
        """The train loop thread's stack (all other threads' if it never reported)."""
        if self.rank.done:
            return "(the train loop has returned: this rank runs no training code)"
        frames = sys._current_frames()
        names = {t.ident: t.name for t in threading.enumerate()}
        train_thread = self.rank.train_thread
        if train_thread in frames:
            chosen = [train_thread]
        else:
            skip = {threading.get_ident()}
            chosen = [i for i in frames if i not in skip]
        parts = []
        for ident in chosen:
            label = "train loop" if ident == train_thread else names.get(ident, str(ident))
            parts.append(
                f"--- thread {label} ---\n" + "".join(traceback.format_stack(frames[ident]))
            )
        return "\n".join(parts)[-MAX_STACK_CHARS:]
