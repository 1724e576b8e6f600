"""The records the probes send through the Ledger, typed once for the writer and the readers.

A ReportProbe builds a ``RankReport`` (with its ``CheckpointUpload`` and ``BarrierWait``
sub-records) on every flush; the Ledger files it under its attempt's page and publishes the
page to the GCS KV store as JSON; ``model.untrusted_kv`` validates what raytop reads back into
``LedgerIndex`` / ``LedgerPage`` / ``RankRecord``; ``sources.ledger_source`` and
``diagnose.checkpoints`` consume those. The JSON on the wire is these dicts and lists as
they are (TypedDicts are dicts, a NamedTuple is a JSON list), so a page written by any
raytop version reads with any other.

Stdlib only (``model`` layer).
"""

from __future__ import annotations

from typing import NamedTuple, TypedDict

from raytop.model.stdlib import NotRequired

MAX_REPORT_HISTORY = 32  # report times a probe keeps (and sends) per rank; readers keep as many
# A rank's report history as read: (entered times, exit times or None), oldest first.
ReportTimes = tuple[tuple[float, ...], tuple[float | None, ...]]

# What a probe hashes of the files a rank puts into an uploaded checkpoint (blake2b, 16-byte
# digest, hex): files up to HASH_MAX_FILE_BYTES each, at most HASH_MAX_CHECKPOINT_BYTES and
# HASH_MAX_FILES per rank per checkpoint, in the order listed; the rest go unhashed. Two
# ranks' files of one name are then compared by content, not by size alone
# (``diagnose.checkpoints``). Hashing the cap costs about a tenth of a second per
# checkpoint on one core, beside the upload of the same bytes (docs/PERFORMANCE.md).
HASH_MAX_FILE_BYTES = 16 * 1024 * 1024
HASH_MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
HASH_MAX_FILES = 64
HASH_HEX_CHARS = 32


class CheckpointUpload(TypedDict):
    """One checkpoint a rank took part in (``ReportProbe.upload_started``; a NO_UPLOAD
    report is recorded when its barrier ends, finished at once)."""

    dir_name: str  # the checkpoint's folder in the run's storage
    report: int | None  # the report (1-based count of this rank's reports) it belongs to
    mode: str | None  # SYNC, ASYNC (Train's upload thread) or NO_UPLOAD
    custom_upload: bool  # the user's upload function does the upload
    files: dict[str, int]  # relative path → size of what this rank put in it (bounded)
    # Relative path → blake2b-128 hex of its content, for the files under the hash caps
    # (``HASH_MAX_*``) of an uploaded checkpoint; none for NO_UPLOAD (written in place, the
    # file read back is whichever rank's copy survived). Older probes do not send it (the
    # validator leaves it out: readers take it as {}).
    hashes: NotRequired[dict[str, str]]
    # This rank's wait in that report's barrier; probes older than barrier timing do not
    # send it (the validator then sets None).
    sync_s: NotRequired[float | None]
    start: float
    end: float | None  # None: still uploading
    error: str | None  # the upload's exception, one line


class BarrierWait(NamedTuple):
    """One rank's wait in the barrier of one report (Train's checkpoint-name sync, done on
    every report). On the wire it is the list ``[report, start, end]``."""

    report: int
    start: float
    end: float | None  # None: still waiting


# A ``BarrierWait`` as a reader keeps it, a plain ``(report, start, end)``: Python's
# collector stops tracking a plain tuple of numbers, never a NamedTuple, and 2,000 ranks
# hold 32,000 of them (a fifth of what each full collection walked, docs/PERFORMANCE.md).
Wait = tuple[int | None, float | None, float | None]


# Where a rank's wall time goes once it trains (``probe.time_shares``; its start-up, until
# its first optimizer step or report, is counted apart): its own code and the backward
# pass, data loading, collectives, other I/O, and train.report's parts (the barrier, the
# checkpoint upload, the wait for Train's controller, the rest).
SHARE_KINDS = ("compute", "data_loader", "collective", "io", "report_barrier",
               "report_upload", "report_wait", "report_other")  # fmt: skip


class Activity(TypedDict):
    """Where a rank's train loop is (``probe.activity``): ``kind`` one of collective,
    backward, data_loader, io, report, user; ``where`` the call and the user's line;
    ``since`` when it got there (unix s); ``waiting`` the fraction of its last ``samples``
    seconds of training it spent waiting (collective, backward, report; time-weighted, ten
    samples a second; a probe before 2026-12-06: of its last one-second samples). ``time_s`` and
    ``recent_time_s``: seconds per ``SHARE_KINDS`` kind over the attempt and over the last
    minute, once it trains; ``startup_s``: its start-up before that (absent from a probe
    older than them)."""

    kind: str
    where: str
    since: float
    sampled_at: float
    samples: int
    waiting: float
    time_s: NotRequired[dict[str, float]]
    recent_time_s: NotRequired[dict[str, float]]
    startup_s: NotRequired[float]  # from its train function's start to its first step or report


class RankReport(TypedDict):
    """What a ReportProbe sends the Ledger on every flush: the whole cumulative state of
    its rank, so a recreated ledger is whole again after one flush. The identity fields
    (run, attempt, world size, group) also name the page the Ledger files it under."""

    run_id: str
    run_name: str
    attempt_id: str
    world_size: int
    rank: int  # the world rank
    local_rank: int
    node_rank: int
    node_id: str
    gpu_ids: list[str]
    placement_group_id: str | None
    pid: int
    entered: int  # reports entered (before the barrier)
    exited: int  # reports returned from (after it)
    last_enter_at: float | None
    last_exit_at: float | None
    usual_interval_s: float | None  # median gap between its recent report entries
    done: bool  # the train loop returned or raised
    dropped: int  # events lost to errors (a dead ledger, a failed flush)
    sent_at: float
    cpu_percent: float
    rss_bytes: int
    gpu_memory_bytes: int | None
    gpu_util_percent: NotRequired[float | None]  # its GPU as NVML sees it (``probe.gpu_use``)
    gpu_memory_used_bytes: NotRequired[int | None]
    optimizer_steps: NotRequired[int | None]  # ``probe.step_counter``
    step_rate: NotRequired[float | None]
    run_path: str | None
    checkpoints: list[CheckpointUpload]
    # Its recent barrier waits, each a ``BarrierWait`` as its plain list: the message is
    # pickled to the Ledger, which then needs no raytop class to read it.
    syncs: list[list[float | None]]
    # Once raytop asked (``StackRequest``): the request answered, and the stack text.
    stack_request: NotRequired[str]
    stack: NotRequired[str]
    # Once raytop asked for native stacks too (``StackRequest.native``): the request the
    # py-spy dump answers, and its text (or one line saying why there is none). Probes
    # older than native stacks never send them.
    native_stack_request: NotRequired[str]
    native_stack: NotRequired[str]
    # Once raytop asked for a Flight Recorder dump (``FlightRecorderRequest``): the request
    # answered, and one line of what the probe did (wrote to the dump pipe, or why not).
    flight_recorder_request: NotRequired[str]
    flight_recorder: NotRequired[str]
    # Its last reports (at most ``MAX_REPORT_HISTORY``), oldest first, each the list
    # ``[entered_at, exited_at]`` (exited_at None: still inside that report). Probes older
    # than the report history do not send it.
    report_times: NotRequired[list[list[float | None]]]
    # The logical resources Ray assigned the worker (``{"CPU": 1.0}``); older probes omit it.
    declared: NotRequired[dict[str, float]]
    # The folder name of the checkpoint its worker group started from; older probes omit it.
    restored_from: NotRequired[str | None]
    # Where its train loop is, sampled once a second (``Activity``); absent before the
    # first sample and from older probes.
    activity: NotRequired[Activity]


class RankRecord(TypedDict):
    """One rank's record as raytop reads it back from a ledger page: every field a reader
    uses, typed (absent counters are 0, absent optional fields None), from this raytop's
    probe or any other's."""

    rank: int
    entered: int
    exited: int
    dropped: int
    local_rank: int | None
    node_rank: int | None
    pid: int | None
    rss_bytes: int | None
    gpu_memory_bytes: int | None
    last_enter_at: float | None
    last_exit_at: float | None
    received_at: float | None  # stamped by the Ledger: the rank's heartbeat
    cpu_percent: float | None
    usual_interval_s: float | None
    node_id: str | None
    stack: str | None
    stack_request: str | None
    # py-spy's native stack and the request it answers; None when not sent (older probe)
    # or not a string (the field is dropped, never the rank).
    native_stack: str | None
    native_stack_request: str | None
    flight_recorder: str | None  # the probe's answer to a Flight Recorder request
    flight_recorder_request: str | None
    run_path: str | None
    done: bool
    gpu_ids: list[str]
    checkpoints: list[CheckpointUpload]
    syncs: tuple[Wait, ...]
    # Its last reports, oldest first, finite, as two columns of the same length: when it
    # entered each, and when it returned (None: still inside); empty when the probe sent
    # none or sent them in a bad shape.
    report_times: ReportTimes
    # Its logical resources (resource → amount); empty when not sent or in a bad shape.
    declared: dict[str, float]
    # The checkpoint folder it started from; None when fresh, not sent, or not a plain name.
    restored_from: str | None
    # Where its train loop is; None before the first sample, from older probes, or sent in
    # a bad shape.
    activity: Activity | None


# The fields of a rank's record that move on every heartbeat: the Ledger keeps them apart
# from the rest (``probe.ledger``), so a heartbeat changes no page. ``sent_at`` is not
# published at all (no reader uses it); ``received_at`` is the Ledger's stamp.
BEAT_FIELDS = ("sent_at", "received_at", "cpu_percent", "rss_bytes", "gpu_memory_bytes",
               "gpu_util_percent", "gpu_memory_used_bytes", "optimizer_steps", "step_rate",
               "activity")  # fmt: skip


class RankBeat(TypedDict):
    """One rank's heartbeat figures as read back from ``ledger/beat/<key>``."""

    received_at: float | None
    cpu_percent: float | None
    rss_bytes: int | None
    gpu_memory_bytes: int | None
    activity: Activity | None
    # Its GPU as NVML sees it (``probe.gpu_use``): utilisation % and the device's memory in
    # use; None without a GPU, NVML's binding, or from an older probe.
    gpu_util_percent: NotRequired[float | None]
    gpu_memory_used_bytes: NotRequired[int | None]
    # Its optimizer steps (``probe.step_counter``) and their rate a second over the last
    # minute; None without torch, before a step, or from an older probe.
    optimizer_steps: NotRequired[int | None]
    step_rate: NotRequired[float | None]


class LedgerPage(TypedDict):
    """``ledger/page/<run_id>.<attempt_id>[~<chunk>]`` as read: one attempt of a Train run,
    and the record of each of its ranks (of that chunk) by rank number (a string: it is a
    JSON object key). Ledgers before beats (``RankBeat``) keep them in the records."""

    run_id: str
    run_name: str
    attempt_id: str
    world_size: int
    first_seen_at: float
    placement_group_id: str | None
    ranks: dict[str, RankRecord]
    # rank → the Ledger's version when that rank's record last changed (empty from a Ledger
    # before them): what lets a reader keep an unchanged rank's record
    rank_versions: NotRequired[dict[str, int]]


class LedgerIndex(TypedDict):
    """``ledger/index``: when the Ledger started (a new start time: it was recreated and
    numbers its versions afresh), when it last published, and each page's version."""

    started_at: float
    published_at: float
    pages: dict[str, int]
    # Each run record's version (``ledger/run/<run_id>``, from the RunProbe); ledgers older
    # than the RunProbe publish none (the validator then gives {}).
    runs: NotRequired[dict[str, int]]
    # Each beat chunk's version (``ledger/beat/<key>[~<chunk>]``; a ledger before
    # 2026-12-05: each attempt's whole beats, ``ledger/beat/<key>``); ledgers older than
    # beats publish none (the validator then gives {}).
    beats: NotRequired[dict[str, int]]


class StackRequest(TypedDict):
    """``cmd/stacks``: raytop asks every rank (of ``run_id``; None: of every run) for its
    stack; each rank answers once per ``request_id``. ``native``: also its native stack
    (py-spy); probes older than native stacks ignore the key and send the Python one."""

    request_id: str
    run_id: str | None
    requested_at: float
    native: NotRequired[bool]


class FlightRecorderRequest(TypedDict):
    """``cmd/flight_recorder``: raytop asks every rank (of ``run_id``; None: of every run)
    to make PyTorch's Flight Recorder dump, through the dump pipe raytop set at launch;
    each rank answers once per ``request_id``."""

    request_id: str
    run_id: str | None
    requested_at: float


# -- the RunProbe (controller side): a run's failure config and attempts --------------------

MAX_ATTEMPTS = 64  # attempts a RunProbe keeps (and sends) per run: the newest
MAX_ERROR_CHARS = 300  # an attempt's error snippet
MAX_REPORT_METRICS = 16  # scalar metrics kept of one report (first report, restored checkpoint)
MAX_METRIC_KEY_CHARS = 64

# Which retry budget (``ray.train.FailureConfig`` field) a failed attempt counts against
# (Train's failure policy, docs/RAY_FACTS.md#failure-policy); None: not retryable, the run
# ends.
FAILURE_CLASSES = {
    "worker": "max_failures",
    "controller": "controller_failure_limit",
    "preemption": "max_preemption_failures",
}
FAILURE_DEFAULTS = {"max_failures": 0, "controller_failure_limit": -1,
                    "max_preemption_failures": -1}  # fmt: skip


class AttemptRecord(TypedDict):
    """One attempt of a Train run (one worker group, from scheduling to its end) as the
    RunProbe saw it in the controller's state changes."""

    index: int  # 1-based, in this controller
    attempt_id: str | None  # the worker group's id (its ledger page), once it started
    status: str  # running, errored, finished, aborted, resized
    started_at: float
    ended_at: float | None
    error_class: str | None  # the (first failing rank's) exception class
    error: str | None  # one line of its message, at most MAX_ERROR_CHARS
    failure_class: str | None  # worker, controller, preemption (FAILURE_CLASSES); None
    # The scalar metrics (rank 0's) of its first completed report, and of the checkpoint it
    # restored from (the last checkpointed report of earlier attempts); None: none yet.
    first_report: dict[str, float] | None
    restored: dict[str, float] | None
    # Reports the controller has taken in this attempt (its ``after_report``): ranks far
    # ahead of it while it takes none are waiting on a stuck controller. Older probes omit
    # it (the validator sets None).
    reports_taken: NotRequired[int | None]
    # The attempt failed because the controller could not load what a rank sent (a
    # metric it cannot deserialize); older probes omit it (False).
    undeliverable: NotRequired[bool]


# ``HangDetectorRecord.state``: Ray's NCCL hang detector is among the run's callbacks; Ray
# has it and did not add it; this Ray has no such detector (before 2.60).
DETECTOR_ON, DETECTOR_OFF, DETECTOR_UNAVAILABLE = "on", "off", "unavailable"
DETECTOR_STATES = (DETECTOR_ON, DETECTOR_OFF, DETECTOR_UNAVAILABLE)
DETECTOR_ACTIONS = ("observe", "fail")  # Ray's NCCL_RAS_ACTION_OBSERVE / _FAIL


class HangDetectorRecord(TypedDict):
    """Ray's NCCL hang detector on one run, as the RunProbe found it among the callbacks of
    the run's worker group (``wire.train_hooks.nccl_hang_detector``): the settings Ray
    itself parsed, where the trainer was built. ``action``, ``poll_s``, ``confirm_s``
    are None unless ``state`` is on; ``disabled``: Ray stopped it for the rest of the run
    (``ncclras`` missing or too old, or an error of its own); ``ray``: the controller's
    Ray version."""

    state: str  # one of DETECTOR_STATES
    ray: str
    action: str | None  # one of DETECTOR_ACTIONS
    poll_s: float | None
    confirm_s: float | None
    disabled: bool


class RunAttempts(TypedDict):
    """``ledger/run/<run_id>``: what a RunProbe sends the Ledger on every change, whole
    (so a recreated ledger is whole again after the next change)."""

    run_id: str
    run_name: str
    failure_config: dict[str, int]  # the three FailureConfig fields (-1: unlimited)
    attempts: list[AttemptRecord]  # oldest first, at most MAX_ATTEMPTS
    sent_at: float
    # Ray's NCCL hang detector, once a worker group started; older probes omit it (None:
    # not known).
    hang_detector: NotRequired[HangDetectorRecord | None]
    # How often Train's controller polls the ranks for results (seconds), as it read its
    # setting; older probes omit it.
    controller_poll_s: NotRequired[float | None]


MAX_PROBE_PROBLEM = 300  # characters of a probe's one-line problem


class ProbeProblem(TypedDict):
    """``probe/problem/<job id>``: filed by a ReportProbe that cannot count in this job's
    Train runs on this Ray (its hooks are not Ray's, or a worker's identity does not read);
    ``model.no_probe`` turns it into the run's reason. ``ray`` is the Ray version it ran on."""

    ray: str
    problem: str
    sent_at: float
