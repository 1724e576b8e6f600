"""What one refresh's table reads cost against a live GCS: ``GcsReader.nodes()``,
``actors()`` and ``placement_groups()`` in a loop, wall and CPU time per round (p50, p95).

Usage: ``python benchmarks/gcs_read_bench.py ADDRESS [--rounds N]``. Only the reader's
public calls are used, so two code trees can be compared against the same cluster, side
by side (``PYTHONPATH=<other tree>/src``), as docs/PERFORMANCE.md does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from raytop.wire.gcs import GcsReader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address")
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    reader = GcsReader(args.address)
    sizes = (len(reader.nodes()), len(reader.actors()), len(reader.placement_groups()))
    walls, cpus = [], []
    for _ in range(args.rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        reader.nodes()
        reader.actors()
        reader.placement_groups()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)

    def ms(values: list[float], q: int) -> float:
        return round(statistics.quantiles(values, n=100)[q - 1] * 1000, 2)

    print(json.dumps({"nodes, actors, groups": sizes, "rounds": args.rounds,
                      "wall_p50_ms": ms(walls, 50), "wall_p95_ms": ms(walls, 95),
                      "cpu_p50_ms": ms(cpus, 50), "cpu_p95_ms": ms(cpus, 95)}))  # fmt: skip


if __name__ == "__main__":
    main()
