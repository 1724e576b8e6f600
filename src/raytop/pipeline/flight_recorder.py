"""``status --flight-recorder``: ask the ranks of the runs raytop launched to make PyTorch's
Flight Recorder dump, wait for the dumps, and say who is missing from which collective.

1. The request goes through the KV store (``LedgerCommands.request_flight_recorder``); each
   rank's probe writes to its own dump pipe, if raytop created it at launch
   (``probe.flight_recorder``), and answers in one line. Read-only makes no request and
   only reads the dumps already on storage (say, from a timeout).
2. Ranks that said "dump requested" get until the deadline for their ``rank_<N>`` file to
   be newer than the request (torch's monitor thread polls the pipe, then writes).
3. Every trial folder under each launched experiment's ``.raytop/flight_recorder`` is read
   (``sources.flight_recorder``: restricted unpickler, size caps, one warning per bad
   file) and summarised per process group (``diagnose.collectives``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from raytop.diagnose.collectives import group_progress
from raytop.model import Snapshot, TrainRun
from raytop.model.collectives import FlightRecorderReport, FlightRecorderRun, RankAnswer
from raytop.pipeline.ledger_commands import LedgerCommands
from raytop.sources.flight_recorder import dump_files, dump_folder, read_dumps, trial_folders

ANSWER_TIMEOUT_S = 5.0  # a probe reads the request within a second
POLL_S = 0.5
REQUESTED = "dump requested"
READ_ONLY_NOTE = (
    "flight recorder: no dump requested (read-only: writing to the ranks' pipes is a "
    "change); the dumps already on storage follow"
)
NO_CLUSTER_NOTE = "flight recorder: no cluster to ask; the dumps already on storage follow"


def _wanted(runs: tuple[TrainRun, ...], run_id: str | None) -> list[TrainRun]:
    return [r for r in runs if run_id in (None, r.run_id) and r.instrumented and not r.finished]


def request_dumps(
    commands: LedgerCommands | None,
    collect: Callable[[], Snapshot],
    experiment_dirs: Callable[[], list[Path | None]],
    *,
    run_id: str | None = None,
    timeout_s: float = 20.0,
    read_only: bool = False,
) -> tuple[Snapshot, FlightRecorderReport]:
    """Ask (unless ``read_only`` or no cluster), wait, read, summarise. ``experiment_dirs``:
    the raytop dir of each experiment of the snapshots ``collect`` makes, in their order."""
    if read_only or commands is None:
        snapshot = collect()
        note = READ_ONLY_NOTE if read_only else NO_CLUSTER_NOTE
        return snapshot, report(snapshot, experiment_dirs(), None, None, note)
    request, requested_at = commands.request_flight_recorder(run_id)
    deadline = time.monotonic() + timeout_s
    answer_deadline = time.monotonic() + min(ANSWER_TIMEOUT_S, timeout_s)
    while True:
        snapshot = collect()
        raytop_dirs = experiment_dirs()
        # Live ranks must answer; a finished rank whose probe still answered counts too.
        workers = [
            w
            for r in _wanted(snapshot.all_runs(), run_id)
            for w in r.workers
            if not w.done or w.flight_recorder_request == request
        ]
        answers = [w for w in workers if w.flight_recorder_request == request]
        waiting_dumps = [
            (run, w)
            for run in _wanted(snapshot.all_runs(), run_id)
            for w in run.workers
            if w.flight_recorder_request == request
            and (w.flight_recorder or "").startswith(REQUESTED)
            and not _fresh_dump(raytop_dirs, snapshot, run, w.rank, requested_at)
        ]
        now = time.monotonic()
        all_answered = len(answers) == len(workers)
        if ((all_answered or now > answer_deadline) and not waiting_dumps) or now > deadline:
            break
        time.sleep(POLL_S)
    asked = len(answers)
    requested = sum(1 for w in answers if (w.flight_recorder or "").startswith(REQUESTED))
    note = (
        f"flight recorder: {asked} of {len(workers)} ranks answered; {requested} dump(s) "
        "requested through the ranks' pipes"
    )
    return snapshot, report(snapshot, raytop_dirs, request, requested_at, note)


def _dump_folder(raytop_dirs: list[Path | None], snapshot: Snapshot, run: TrainRun) -> Path | None:
    for exp, rdir in zip(snapshot.experiments, raytop_dirs, strict=False):
        if rdir is not None and run.trial_id and any(r.run_id == run.run_id for r in exp.runs):
            return dump_folder(rdir, run.trial_id)
    return None


def _fresh_dump(raytop_dirs, snapshot, run, rank: int, since: float) -> bool:
    folder = _dump_folder(raytop_dirs, snapshot, run)
    if folder is None:
        return True  # nowhere raytop reads: nothing to wait for
    return any(f.rank == rank and f.mtime >= since for f in dump_files(folder))


def report(
    snapshot: Snapshot,
    raytop_dirs: list[Path | None],
    request: str | None,
    requested_at: float | None,
    note: str,
) -> FlightRecorderReport:
    """Each launched experiment's trial folders (dumps), joined with the runs' answers."""
    runs: dict[tuple[str | None, str | None], FlightRecorderRun] = {}
    for exp, rdir in zip(snapshot.experiments, raytop_dirs, strict=False):
        by_trial = {r.trial_id: r for r in exp.runs if r.trial_id}
        for trial_id, folder in trial_folders(rdir) if rdir is not None else []:
            run = by_trial.get(trial_id)
            dumps, warnings = read_dumps(folder)
            fresh = tuple(
                f.rank for f in dump_files(folder)
                if requested_at is not None and f.mtime >= requested_at
            )  # fmt: skip
            runs[(exp.name, trial_id)] = FlightRecorderRun(
                trial_id=trial_id,
                run_name=run.run_name if run else None,
                folder=str(folder),
                answers=_answers(run, request),
                dumped_ranks=tuple(d.rank for d in dumps),
                fresh_ranks=fresh,
                groups=group_progress(dumps),
                warnings=tuple(warnings),
            )
        for run in exp.runs:
            if (exp.name, run.trial_id) not in runs and _answers(run, request):
                runs[(exp.name, run.trial_id)] = FlightRecorderRun(
                    trial_id=run.trial_id, run_name=run.run_name, folder=None,
                    answers=_answers(run, request),
                )  # fmt: skip
    for run in snapshot.runs:  # runs raytop did not launch: only their answers
        if _answers(run, request):
            runs[(None, run.run_id)] = FlightRecorderRun(
                trial_id=None, run_name=run.run_name, folder=None, answers=_answers(run, request)
            )
    return FlightRecorderReport(note=note, requested_at=requested_at, runs=tuple(runs.values()))


def _answers(run: TrainRun | None, request: str | None) -> tuple[RankAnswer, ...]:
    if run is None or request is None:
        return ()
    return tuple(
        RankAnswer(w.rank, w.flight_recorder or "")
        for w in sorted(run.workers, key=lambda w: w.rank)
        if w.flight_recorder_request == request
    )
