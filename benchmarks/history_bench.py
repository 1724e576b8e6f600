"""History from storage at scale (``raytop status --storage``; docs/PERFORMANCE.md).

Writes a Tune experiment as Tune leaves it, ``--trials`` trials: an
``experiment_state-*.json`` whose ``trial_data`` rows are pairs of JSON strings (the
trial, its runtime), one trial folder per trial named as Tune names them
(``<trainable>_<trial id>_<n>_<params>_<time>``) holding a ``result.json`` of JSON lines,
every tenth trial failed with an ``error.txt``. Then reads it the way ``raytop status
--storage DIR`` does (a ``SnapshotCollector`` with no cluster, storage unwatched) for
each size in ``--sizes``, and prints each read's time and the files and folders it read:
a linear reader reads each folder once, so ``per trial`` stays flat as the size grows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raytop.pipeline.collect import SnapshotCollector

TRAINABLE = "train_fn"
SESSION = "2026-12-05_10-00-00"


def trial_id(i: int) -> str:
    return f"a1b2c_{i:05d}"


def trial_folder_name(i: int) -> str:
    return f"{TRAINABLE}_{trial_id(i)}_{i}_lr={0.001 * (i % 97 + 1):.4f}_{SESSION}"


def _rows(trials: int) -> list[list[str]]:
    rows = []
    for i in range(trials):
        failed = i % 10 == 9
        trial = {
            "stub": False, "trainable_name": TRAINABLE, "trial_id": trial_id(i),
            "config": {"lr": 0.001 * (i % 97 + 1), "seed": i},
            "evaluated_params": {"lr": 0.001 * (i % 97 + 1)},
            "experiment_tag": f"{i}_lr={0.001 * (i % 97 + 1):.4f}",
            "status": "ERROR" if failed else "TERMINATED", "max_failures": 0,
            "relative_logdir": trial_folder_name(i),
        }  # fmt: skip
        runtime = {
            "start_time": 1796365413.6, "num_failures": int(failed),
            "num_failures_after_restore": 0,
            "error_filename": "error.txt" if failed else None,
            "last_result": {"loss": 1.0 / (i + 1), "training_iteration": 3,
                            "trial_id": trial_id(i), "done": not failed},
            "last_result_time": 1796365440.8,
        }  # fmt: skip
        rows.append([json.dumps(trial), json.dumps(runtime)])
    return rows


def make_experiment(folder: Path, trials: int) -> Path:
    """``folder`` made a Tune experiment of ``trials`` finished trials (every tenth
    failed), as Tune writes it; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "trial_data": _rows(trials),
        "runner_data": {"_metric": "loss", "_session_str": SESSION},
        "stats": {"start_time": 1796365410.0},
    }
    (folder / f"experiment_state-{SESSION}.json").write_text(json.dumps(state))
    for i in range(trials):
        trial = folder / trial_folder_name(i)
        trial.mkdir()
        results = (
            json.dumps({"loss": 3.0 / (i + 1) / step, "training_iteration": step}) + "\n"
            for step in range(1, 4)
        )
        (trial / "result.json").write_text("".join(results))
        (trial / "params.json").write_text(json.dumps({"lr": 0.001 * (i % 97 + 1)}))
        if i % 10 == 9:
            (trial / "error.txt").write_text(
                f"Failure # 1 (occurred at {SESSION})\nValueError: trial {i} diverged\n"
            )
    return folder


def read_history(storage_root: Path) -> tuple[float, Any, SnapshotCollector]:
    """One ``status --storage`` read: (seconds, snapshot, the collector, closed)."""
    collector = SnapshotCollector(
        None, experiments=[], storage_roots=[str(storage_root)], watch=False,
        unreachable_reason="no cluster at 127.0.0.1:1",
    )  # fmt: skip
    try:
        start = time.perf_counter()
        snapshot = collector.collect()
        return time.perf_counter() - start, snapshot, collector
    finally:
        collector.close()


@contextlib.contextmanager
def os_calls() -> Iterator[dict[str, int]]:
    """Counts the files opened and the folders listed meanwhile, by whatever reader (the
    same on any tree: the "before" figures of docs/PERFORMANCE.md were made with it)."""
    seen = {"opened": 0, "listed": 0}
    real_open, real_scandir = os.open, os.scandir

    def counted_open(*args, **kwargs):
        seen["opened"] += 1
        return real_open(*args, **kwargs)

    def counted_scandir(*args, **kwargs):
        seen["listed"] += 1
        return real_scandir(*args, **kwargs)

    os.open, os.scandir = counted_open, counted_scandir
    try:
        yield seen
    finally:
        os.open, os.scandir = real_open, real_scandir


def measure(sizes: list[int], root: Path) -> list[dict[str, Any]]:
    results = []
    for size in sizes:
        storage_root = root / f"results-{size}"
        make_experiment(storage_root / "sweep", size)
        with os_calls() as calls:
            seconds, snapshot, _collector = read_history(storage_root)
        (exp,) = snapshot.experiments
        with_history = sum(1 for t in exp.trials if t.metric_history)
        with_error = sum(1 for t in exp.trials if t.error)
        results.append({
            "trials": size, "seconds": seconds, **calls,
            "with_history": with_history, "with_error": with_error,
        })  # fmt: skip
        shutil.rmtree(storage_root)
    return results


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,5000")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="raytop-history-bench-"))
    try:
        results = measure(sizes, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for r in results:
        print(f"{r['trials']:>6} trials: {r['seconds']:7.3f} s "
              f"({r['seconds'] / r['trials'] * 1e3:.3f} ms per trial), "
              f"{r['opened']} files opened, {r['listed']} folders listed, "
              f"{r['with_history']} histories, {r['with_error']} errors")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
