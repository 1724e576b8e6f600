"""Stacks captures on disk: what the ranks answered to a stacks request outlives the
cluster, the terminal and the run.

A hang is often found, then the cluster is torn down to try again, and the stacks that
said where each rank was are gone. So each answered request is written, by raytop's own
process (never by the workers, which may be wedged), to:

    <raytop dir>/captures/<UTC time>/     an experiment raytop launched (``.raytop`` inside
                                          the experiment folder for local storage)
    $RAYTOP_HOME/captures/<UTC time>/     ranks of runs of no raytop experiment

holding one text file per answering rank (``<run name>.rank<N>.txt``: who, who took its
stack (its probe, or py-spy for a rank with no probe), then its Python stack, then its
native one) and ``index.json`` (when, which request, every rank with its file and who
took it). Read by people, not by raytop. Under read-only nothing is written and the
capture says so. A folder that cannot be written is one line, never an error: the stacks
are still shown.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from raytop.home import raytop_home
from raytop.jsonfile import write_json_atomic
from raytop.model import Snapshot, StacksCapture, TrainRun, Worker
from raytop.model.format import one_line
from raytop.rundir import CAPTURES_DIR

READ_ONLY_NOTE = "stacks not saved: read-only (nothing is written)"
NOTHING_NOTE = "stacks not saved: no rank answered"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME_CHARS = 100


def capture_folder_name(taken_at: float) -> str:
    """``20260412T093015Z``: UTC, sortable, no characters a filesystem refuses."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(taken_at))


def rank_file_name(run_name: str, rank: int) -> str:
    """A run name comes from the cluster (untrusted): only ``[A-Za-z0-9._-]`` of it, cut."""
    return f"{_UNSAFE.sub('_', run_name)[:MAX_NAME_CHARS] or 'run'}.rank{rank}.txt"


def rank_text(run: TrainRun, worker: Worker, request: str | None) -> str:
    """One rank's file: who it is, then its Python stack, then its native stack."""
    lines = [
        f"run {run.run_name} (id {run.run_id}) attempt {run.attempt_index}",
        f"rank {worker.rank} of {run.world_size}  pid {worker.pid}  node {worker.node_id}",
        f"state {worker.state or '?'}  reports {worker.reports_entered} entered, "
        f"{worker.reports_exited} returned",
        f"request {request}  taken by {worker.stack_by or '?'}",
        "",
        "== Python stack ==",
        worker.stack or worker.stack_problem or "(no answer)",
    ]
    if worker.native_stack is not None:
        lines += ["", "== native stack (py-spy) ==", worker.native_stack]
    return "\n".join(lines) + "\n"


def answered(worker: Worker) -> bool:
    return bool(worker.stack) or worker.native_stack is not None


def save_capture(
    snapshot: Snapshot,
    targets: Iterable[tuple[Path, tuple[TrainRun, ...]]],
    *,
    request: str | None,
    native: bool,
    read_only: bool,
) -> StacksCapture:
    """Write one capture folder per ``(captures parent, runs)`` target whose runs have a
    rank that answered; say where (or why not) in one line."""
    if read_only:
        return StacksCapture((), READ_ONLY_NOTE)
    saved: list[str] = []
    problems: list[str] = []
    for parent, runs in targets:
        ranks = [(run, w) for run in runs for w in run.workers if answered(w)]
        if not ranks:
            continue
        try:
            folder = _new_folder(parent / CAPTURES_DIR, capture_folder_name(snapshot.taken_at))
            entries: list[dict] = []
            for run, worker in ranks:
                name = rank_file_name(run.run_name, worker.rank)
                if any(e["file"] == name for e in entries):  # two names that clean alike
                    name = rank_file_name(f"{run.run_name}-{run.run_id[:12]}", worker.rank)
                with open(folder / name, "x") as f:
                    f.write(rank_text(run, worker, request))
                entries.append({
                    "run_id": run.run_id, "run_name": run.run_name,
                    "attempt": run.attempt_index, "rank": worker.rank, "pid": worker.pid,
                    "node_id": worker.node_id, "state": worker.state, "file": name,
                    "python": bool(worker.stack), "native": worker.native_stack is not None,
                    "by": worker.stack_by,
                })  # fmt: skip
            write_json_atomic(folder / "index.json", {
                "taken_at": snapshot.taken_at, "request": request, "native": native,
                "ranks": entries,
            })  # fmt: skip
        except OSError as exc:
            where = exc.filename if exc.filename is not None else parent
            problems.append(f"cannot write {os.fsdecode(where)}: {exc.strerror or exc}")
            continue
        saved.append(str(folder))
    if not saved and not problems:
        return StacksCapture((), NOTHING_NOTE)
    parts = [f"stacks saved to {', '.join(saved)}"] if saved else []
    parts += [f"stacks not saved: {one_line(p, joined_by='; ')}" for p in problems]
    return StacksCapture(tuple(saved), "; ".join(parts))


def _new_folder(parent: Path, name: str) -> Path:
    """A folder no earlier capture has: ``name``, else ``name-2``, ``name-3``…"""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 100):
        folder = parent / (name if n == 1 else f"{name}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(17, "too many captures in the same second", str(parent / name))


def capture_targets(
    snapshot: Snapshot, raytop_dirs: list[Path | None], run_id: str | None
) -> list[tuple[Path, tuple[TrainRun, ...]]]:
    """Where each answering run's capture goes: its experiment's raytop dir (``raytop_dirs``
    are the collector's experiments' own, in the snapshot's order), else ``$RAYTOP_HOME``."""

    def wanted(run: TrainRun) -> bool:
        return run_id in (None, run.run_id)

    targets: list[tuple[Path, tuple[TrainRun, ...]]] = []
    homeless: list[TrainRun] = []
    for exp, rdir in zip(snapshot.experiments, raytop_dirs, strict=False):
        runs = tuple(r for r in exp.runs if wanted(r))
        if rdir is None:
            homeless += runs
        elif runs:
            targets.append((rdir, runs))
    homeless += [r for r in snapshot.runs if wanted(r)]
    if homeless:
        targets.append((raytop_home(), tuple(homeless)))
    return targets
