"""Cost of the capacity planner on a large cluster (docs/PERFORMANCE.md, "Capacity planner").

Plans 500 trials on 1,000 nodes (500 × {CPU: 16, GPU: 4, memory: 64e9} and
500 × {CPU: 32, memory: 128e9}) for every placement strategy, both driver shapes
({CPU: 1}, the old default, and {CPU: 0, memory: 1}, the torch default), worker bundles
{GPU: 1, CPU: 2} and {CPU: 4}, and 4 or 8 workers: 32 plans. Each plan is timed as the
median of ``--repeat`` runs and compared with two baselines measured in the same run: the
time to build the node list, and one ``slots()`` loop over the nodes (the least any plan
must do). Target: every plan under 1 s.

``--at-cap``: the largest sweep a spec and a NODES.toml may describe (spec.MAX_TRIALS
trials on planning.MAX_NODES nodes), against the bound ``raytop plan`` promises: 2 s.

    .venv/bin/python benchmarks/plan_bench.py [--repeat 5] [--trials 500] [--nodes 1000]
    .venv/bin/python benchmarks/plan_bench.py --at-cap [--repeat 1]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable

from raytop.diagnose.plan import STRATEGIES, NodeShape, TrialShape, plan, slots
from raytop.launch.planning import MAX_NODES
from raytop.launch.spec import MAX_TRIALS

TARGET_S = 1.0
AT_CAP_TARGET_S = 2.0  # what `raytop plan` answers within, for any valid spec
GPU_NODE = {"CPU": 16.0, "GPU": 4.0, "memory": 64e9}
CPU_NODE = {"CPU": 32.0, "memory": 128e9}
DRIVERS = {"{CPU: 1}": {"CPU": 1.0}, "{CPU: 0, memory: 1}": {"CPU": 0.0, "memory": 1.0}}
WORKERS = {"{GPU: 1, CPU: 2}": {"GPU": 1.0, "CPU": 2.0}, "{CPU: 4}": {"CPU": 4.0}}
NUM_WORKERS = (4, 8)


def build_nodes(count: int) -> list[NodeShape]:
    half = count // 2
    return [NodeShape(f"gpu-{i}", dict(GPU_NODE)) for i in range(half)] + [
        NodeShape(f"cpu-{i}", dict(CPU_NODE)) for i in range(count - half)
    ]


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per plan (median)")
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument(
        "--at-cap", action="store_true",
        help=f"{MAX_TRIALS:,} trials on {MAX_NODES:,} nodes, target {AT_CAP_TARGET_S:g} s",
    )  # fmt: skip
    args = parser.parse_args()
    target_s = TARGET_S
    if args.at_cap:
        args.trials, args.nodes, target_s = MAX_TRIALS, MAX_NODES, AT_CAP_TARGET_S

    build_s, nodes = median_time(lambda: build_nodes(args.nodes), args.repeat)
    worker = WORKERS["{GPU: 1, CPU: 2}"]
    loop_s, _ = median_time(lambda: [slots(n.resources, worker) for n in nodes], args.repeat)
    print(
        f"{args.nodes} nodes, {args.trials} trials, median of {args.repeat} runs; "
        f"baselines: build the node list {fmt_s(build_s)}, one slots() loop {fmt_s(loop_s)}"
    )
    header = (
        f"{'strategy':<14}{'driver':<21}{'worker':<18}{'n':>2}  {'verdict':<16}"
        f"{'started':>8}{'running':>8}{'time':>10}{'× build':>9}{'× slots':>9}"
    )
    print(header)
    print("-" * len(header))

    worst = (0.0, "")
    cases = itertools.product(STRATEGIES, DRIVERS.items(), WORKERS.items(), NUM_WORKERS)
    for strategy, (driver_name, driver), (worker_name, bundle), n in cases:
        shape = TrialShape(driver, bundle, n, strategy)
        run = lambda shape=shape: plan(nodes, shape, args.trials, None)  # noqa: E731
        seconds, result = median_time(run, args.repeat)
        print(
            f"{strategy:<14}{driver_name:<21}{worker_name:<18}{n:>2}  {result.verdict:<16}"
            f"{result.concurrent:>8}{result.running:>8}{fmt_s(seconds):>10}"
            f"{seconds / build_s:>9.1f}{seconds / loop_s:>9.1f}"
        )
        if seconds > worst[0]:
            worst = (seconds, f"{strategy} {driver_name} {worker_name} × {n}")

    verdict = "OK" if worst[0] < target_s else "OVER TARGET"
    print(
        f"max {fmt_s(worst[0])} ({worst[1]}): {worst[0] / build_s:.1f} × build, "
        f"{worst[0] / loop_s:.1f} × slots loop; target < {target_s:g} s: {verdict}"
    )
    return 0 if worst[0] < target_s else 1


if __name__ == "__main__":
    sys.exit(main())
