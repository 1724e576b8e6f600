"""Messages from background threads to the UI thread.

``post_message`` is the only thread-safe way into the UI, so the poller says everything
it has to say with ``SnapshotReady`` and ``SourceFailed``. Both coalesce
(``can_replace``): when the UI falls behind, only the newest news is worth rendering.
The stacks fetch, the stop controls and the Resume screen's calls run through
``background.run_in_background`` and report back with their own messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from raytop.model import Snapshot
from raytop.model.resume import ResumePreview, StoredExperiment


@dataclass
class SnapshotReady(Message):
    """The collector returned a snapshot (connected or not). ``slow``: the collect took
    longer than the refresh asked, so the poller now waits longer
    (``model.refresh.paced_delay``); one line saying so, shown beside the data's age."""

    snapshot: Snapshot
    slow: str | None = None

    def can_replace(self, message: Message) -> bool:
        # A queued older snapshot is obsolete once a newer one is behind it.
        return isinstance(message, SnapshotReady)


@dataclass
class SourceFailed(Message):
    """``collect()`` raised; ``consecutive`` counts failures since the last success."""

    error: str
    consecutive: int

    def can_replace(self, message: Message) -> bool:
        # A newer failure or a newer snapshot both say more than this failure does.
        return isinstance(message, SourceFailed | SnapshotReady)


@dataclass
class StacksReady(Message):
    """``request_stacks(run_id)`` answered: ``snapshot`` carries ``Worker.stack``."""

    run_id: str
    snapshot: Snapshot


@dataclass
class StacksFailed(Message):
    """``request_stacks(run_id)`` raised."""

    run_id: str
    error: str


@dataclass
class StopDone(Message):
    """A stop control returned: the stop of ``target`` ("experiment torch_sweep",
    "trial …") is asked for; ``message`` says what happens next, for the user."""

    target: str
    message: str


@dataclass
class StopFailed(Message):
    """A stop control raised; ``error`` is its one-line message."""

    target: str
    error: str


@dataclass
class ExperimentsListed(Message):
    """``experiments_under(storage)`` answered, newest first."""

    storage: str
    experiments: tuple[StoredExperiment, ...]


@dataclass
class ListingFailed(Message):
    """``experiments_under(storage)`` raised; ``error`` is its one-line message."""

    storage: str
    error: str


@dataclass
class PreviewReady(Message):
    """``resume_preview(path, errored)`` answered (as asked: the preview may spell the
    path differently)."""

    path: str
    errored: str
    preview: ResumePreview


@dataclass
class PreviewFailed(Message):
    """``resume_preview(path, errored)`` raised: raytop cannot resume that one."""

    path: str
    errored: str
    error: str


@dataclass
class ResumeDone(Message):
    """``resume(path, …)`` returned: its driver is launched; ``message`` says which."""

    path: str
    message: str


@dataclass
class ResumeFailed(Message):
    """``resume(path, …)`` raised; ``error`` is its one-line message."""

    path: str
    error: str
