"""What watching storage saves (issue: Checkpoint pipeline and resume; docs/PERFORMANCE.md).

A Tune experiment folder with a large ``experiment_state-*.json`` (``--trials`` trials, as a
big sweep leaves it) is read by a ``SnapshotCollector`` without a cluster, the way the TUI
polls it: ``collect()`` timed ``--rounds`` times with storage watched (re-read only after a
change) and unwatched (re-read every time), alternated in the same run; then the time from
rewriting the state file to the watched collector showing the change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from raytop.pipeline.collect import SnapshotCollector


def write_state(folder: Path, trials: int, iteration: int) -> None:
    rows = []
    for i in range(trials):
        trial = {"trial_id": f"t{i:05d}", "status": "RUNNING", "config": {"lr": 0.01, "i": i}}
        meta = {"num_failures": 0,
                "last_result": {"training_iteration": iteration, "loss": 1.0 / (i + 1),
                                "history": list(range(50))}}  # fmt: skip
        rows.append([json.dumps(trial), json.dumps(meta)])
    (folder / "experiment_state-2026-12-02_10-00-00.json").write_text(
        json.dumps({"trial_data": rows})
    )


def timed(collector: SnapshotCollector, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        collector.collect()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="raytop-storage-bench-")) / "sweep"
    folder.mkdir()
    write_state(folder, args.trials, 1)
    size = next(folder.glob("experiment_state-*.json")).stat().st_size
    watched = SnapshotCollector(None, experiments=[(str(folder), None)], watch=True)
    plain = SnapshotCollector(None, experiments=[(str(folder), None)], watch=False)
    watched.collect()
    time.sleep(1.5)  # the watcher is up (its first timeout yield)
    w_times, p_times = [], []
    for _ in range(2):
        p_times += timed(plain, args.rounds)
        w_times += timed(watched, args.rounds)
    w50, p50 = statistics.median(w_times), statistics.median(p_times)
    print(f"experiment_state: {args.trials} trials, {size / 2**20:.1f} MiB")
    print(f"collect() unwatched: median {p50 * 1e3:.2f} ms")
    print(f"collect() watched:   median {w50 * 1e3:.2f} ms")
    print(f"watched / unwatched (medians, same run): {w50 / p50:.4f}")
    lags = []
    for iteration in range(2, 12):
        write_state(folder, args.trials, iteration)
        written = time.perf_counter()
        while watched.collect().experiments[0].trials[0].iterations != iteration:
            time.sleep(0.01)
        lags.append(time.perf_counter() - written)
    print(f"rewrite → watched collector shows it: median {statistics.median(lags):.3f} s, "
          f"max {max(lags):.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
