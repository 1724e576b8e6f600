"""Sum up a test run's per-worker timeline (``RAYTOP_TIMELINE=FILE make test``, written by
``tests/timeline.py``): for each xdist worker when it started and finished and how long
it was busy, then the seconds per test file on each worker, most first. The suite's wall
time is its slowest worker's; the gap between the two workers' ends is what balancing
can win, and the per-file sums say what to move or share.

    .venv/bin/python benchmarks/timeline.py FILE [--top N]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(path: Path) -> list[dict]:
    """The timeline's lines that parse (a run cut short may end in half a line)."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def summary(rows: list[dict], top: int) -> str:
    """The workers' spans and each worker's busiest test files."""
    if not rows:
        return "no tests in the timeline"
    origin = min(r["start"] for r in rows)
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_worker[row["worker"]].append(row)
    out = []
    for worker, mine in sorted(by_worker.items()):
        first = min(r["start"] for r in mine) - origin
        last = max(r["end"] for r in mine) - origin
        busy = sum(r["end"] - r["start"] for r in mine)
        out.append(f"{worker}: {len(mine)} tests, {first:.0f}-{last:.0f} s, busy {busy:.0f} s")
        files: dict[str, float] = defaultdict(float)
        for row in mine:
            files[row["test"].split("::")[0]] += row["end"] - row["start"]
        for name, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:top]:
            out.append(f"  {seconds:7.1f} s  {name}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(summary(load(args.timeline), args.top))


if __name__ == "__main__":
    main()
