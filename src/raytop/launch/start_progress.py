"""What a slow start reports to, and how a plain line callable stands in for it.

``launch`` starts things that take tens of seconds (the embedded cluster, the detached
driver, a run's first results); ``faces.progress.ProgressLine`` draws their waits on one
line, a plain ``print`` gets one line per phase. Both are accepted wherever a start takes
a ``progress``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    """What a slow start reports to (``faces.progress.ProgressLine`` draws it): lines;
    while waiting, the task and what it waits for, on every poll; the final line."""

    def __call__(self, line: str) -> None: ...

    def waiting(self, task: str, what: str) -> None: ...

    def finished(self, line: str) -> None: ...


def waiting_of(progress: Callable[[str], None]) -> Callable[[str, str], None]:
    """``progress.waiting``; for a plain line callable, one line per phase change."""
    step = getattr(progress, "waiting", None)
    if step is not None:
        return step
    last: list[tuple[str, str]] = []

    def lines(task: str, what: str) -> None:
        if last[-1:] != [(task, what)]:
            last[:] = [(task, what)]
            progress(f"{task}: {what}")

    return lines


def finished_of(progress: Callable[[str], None]) -> Callable[[str], None]:
    """``progress.finished``; for a plain line callable, the callable itself."""
    return getattr(progress, "finished", progress)
