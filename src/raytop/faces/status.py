"""What ``raytop status`` prints: the snapshot the TUI shows, once, as text or JSON
(docs/schema.md); on request with every rank's stack (``--stacks``) or the Flight
Recorder's verdict (``--flight-recorder``), each of which asks the ranks first."""

from __future__ import annotations

from raytop.faces.command_line import (
    collector_for,
    experiment_paths,
    fail,
    storage_roots,
    target_with_history,
)
from raytop.faces.output import echo_json, echo_text, say
from raytop.faces.text import flight_recorder_text, stacks_text, status_text
from raytop.model.ports import NATIVE_STACKS_TIMEOUT_S, STACKS_TIMEOUT_S
from raytop.model.thresholds import Thresholds


def print_status(
    as_json: bool, stacks: bool, native: bool, flight_recorder: bool,
    experiments: tuple[str, ...], address: str | None, stall_after: float | None,
    storage: tuple[str, ...], read_only: bool,
) -> None:  # fmt: skip
    """``raytop status``: collect once (or ask the ranks, then collect) and print."""
    if native and not stacks:
        fail("--native: give it with --stacks (`raytop status --stacks --native`)")
    if flight_recorder and stacks:
        fail("--flight-recorder and --stacks: one at a time (each asks the ranks)")
    roots = storage_roots(storage)
    target, why_none = target_with_history(address, roots)
    collector = collector_for(target, experiment_paths(experiments), Thresholds.given(stall_after),
                              storage=roots, unreachable_reason=why_none)  # fmt: skip
    note = None
    if stacks:
        timeout_s = NATIVE_STACKS_TIMEOUT_S if native else STACKS_TIMEOUT_S
        snapshot = collector.request_stacks(timeout_s=timeout_s, native=native,
                                            read_only=read_only)  # fmt: skip
        note = snapshot.stacks_capture.note if snapshot.stacks_capture else None
    elif flight_recorder:
        snapshot = collector.request_flight_recorder(read_only=read_only)
        note = snapshot.flight_recorder.note if snapshot.flight_recorder else None
    else:
        snapshot = collector.collect()
    if as_json:
        if note:
            say(note)  # stdout stays JSON
        echo_json(snapshot.to_json())
        return
    echo_text(status_text(snapshot))
    if stacks:
        echo_text(stacks_text(snapshot))
    if flight_recorder and snapshot.flight_recorder is not None:
        echo_text(flight_recorder_text(snapshot.flight_recorder))
