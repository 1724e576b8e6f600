"""The one way a screen runs a blocking call (a stop, a storage read, a stacks request):
in a daemon thread that answers with a message.

``post_message`` is the only thread-safe way into the UI, so the thread makes the call,
wraps its result (or its failure) in a message and touches no widget; the screen's
handler does the rest on the UI thread. A daemon thread, not a Textual worker: a call
stuck on storage or an unreachable cluster must never keep raytop alive after quit
(threads cannot be killed, and the executor behind thread workers is joined at exit).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump


def run_in_background(
    target: MessagePump,
    call: Callable[[], Message],
    failed: Callable[[Exception], Message],
    *,
    name: str,
) -> None:
    """Run ``call`` (the blocking call, wrapped in its answer) in a daemon thread named
    ``name`` and post the answer to ``target``; if it raises, post ``failed(exc)``
    instead: whatever a source or a control raises becomes a notice, never a crash."""

    def run() -> None:
        try:
            answer = call()
        except Exception as exc:  # the UI stays up whatever the call does
            target.post_message(failed(exc))
            return
        target.post_message(answer)

    threading.Thread(target=run, name=name, daemon=True).start()
