"""How fresh is what raytop shows? From a Train worker calling ``ray.train.report`` to that
result being visible in a raytop snapshot (what ``status --json`` prints and the TUI draws).

Launches a 2-worker torch trial whose loop reports ``time.time()`` every ``--interval`` s,
collects snapshots every ``--poll`` s and records, per result, ``seen - reported_at``. The
TUI adds at most its refresh period (0.5 s by default) on top of the figure at ``--poll``.
Report less often than Train's controller polls (0.5 s in launched runs): faster reports
queue inside the worker (a queue of one) and the figure then measures that back-pressure.

    .venv/bin/python benchmarks/freshness_bench.py [--address HOST:PORT]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from raytop.launch.cluster import resolve, start_embedded, stop_embedded
from raytop.launch.launcher import launch
from raytop.launch.spec import ClusterSection, load_spec
from raytop.pipeline.collect import SnapshotCollector

SPEC = """
[experiment]
name = "freshness"
storage_path = "results"
[trainable]
kind = "torch"
entrypoint = "freshness_loop:train_loop"
[param_space]
steps = {steps}
interval_s = {interval}
[tune]
metric = "step"
mode = "max"
[scaling]
num_workers = 2
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--unwatched", action="store_true", help="re-read storage every time")
    parser.add_argument("--poll", type=float, default=0.05)
    args = parser.parse_args()

    target = resolve(args.address)
    started_cluster = target is None
    if started_cluster:
        target = start_embedded(ClusterSection(num_cpus=4))
    folder = Path(tempfile.mkdtemp(prefix="raytop-freshness-"))
    (folder / "freshness_loop.py").write_text(
        (Path(__file__).parent / "freshness_loop.py").read_text()
    )
    (folder / "spec.toml").write_text(SPEC.format(steps=args.steps, interval=args.interval))
    spec = load_spec(folder / "spec.toml")
    launched = launch(spec, target)
    collector = SnapshotCollector(  # watching storage, as the TUI does (unless --unwatched)
        target.address, experiments=[(spec.experiment_path, launched.raytop_dir)],
        watch=not args.unwatched,
    )  # fmt: skip
    seen: dict[int, float] = {}
    latencies: list[float] = []
    collect_s: list[float] = []
    while True:
        before = time.time()
        snapshot = collector.collect()
        collect_s.append(time.time() - before)
        (exp,) = snapshot.experiments
        for trial in exp.trials:
            it, reported = trial.iterations, trial.metrics.get("reported_at")
            if reported is not None and it not in seen:
                seen[it] = time.time()
                latencies.append(seen[it] - reported)
        if exp.status.value not in ("RUNNING", "STARTING"):
            break
        time.sleep(args.poll)
    if started_cluster:
        stop_embedded()
    print(f"results seen: {len(latencies)} of {args.steps} (a faster report is overwritten)")
    print(
        "report -> snapshot latency s: "
        f"p50 {statistics.median(latencies):.3f}  p95 {percentile(latencies, 0.95):.3f}  "
        f"max {max(latencies):.3f}"
    )
    print(f"collect() s: p50 {statistics.median(collect_s):.4f}  max {max(collect_s):.4f}")


if __name__ == "__main__":
    main()
