"""For tests of reads that must not block: a call that hangs (a FIFO opened blocking)
fails its test instead of hanging the suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def answered_within(seconds: float, call: Callable[[], Any]) -> tuple[str, Any]:
    """``("value", result)`` or ``("raised", exception)`` of ``call()``; an assertion
    error when it has not returned within ``seconds`` (the thread is left behind, as a
    daemon, blocked where it is)."""
    box: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            box.append(("value", call()))
        except BaseException as exc:  # handed back to the test
            box.append(("raised", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"no answer within {seconds} s (blocked?)"
    return box[0]


def raised_within(seconds: float, call: Callable[[], Any], kind: type[BaseException]) -> Any:
    """The ``kind`` exception ``call()`` raised within ``seconds``."""
    outcome, value = answered_within(seconds, call)
    assert outcome == "raised" and isinstance(value, kind), (outcome, value)
    return value
