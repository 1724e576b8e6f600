"""The commands raytop writes to the ranks' probes through the cluster's KV store: a
stacks request and a Flight Recorder dump request (the protocol in ``wire.kv_keys``).

A write to the cluster, apart from ``sources.ledger_source``, which only reads the
ledger: whoever issues a command holds a ``LedgerCommands`` (``pipeline.stacks_request``,
``pipeline.flight_recorder``), and ``--read-only`` keeps it from being written: a stacks
request is refused (``faces.read_only.READ_ONLY_REFUSES``), ``request_dumps`` asks nothing.
The probes read each command within about a second and answer in their ledger pages.
"""

from __future__ import annotations

import json
import time
import uuid

from raytop.model.records import FlightRecorderRequest, StackRequest
from raytop.wire.gcs import GcsKv
from raytop.wire.kv_keys import FLIGHT_RECORDER_COMMAND_KEY, STACKS_COMMAND_KEY


class LedgerCommands:
    """Writes one command at a time to the KV store; each has a fresh request id, which
    the probes' answers carry (``Worker.stack_request``, ``flight_recorder_request``)."""

    def __init__(self, kv: GcsKv) -> None:
        self._kv = kv

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
