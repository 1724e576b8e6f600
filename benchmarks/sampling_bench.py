"""What the probe's stack sampling costs the training it watches (issue 12; PERFORMANCE.md).

The sampler (``probe.activity``) runs on the probe's own thread once a second: one
``sys._current_frames()`` read and a walk of at most 64 frames, under the GIL, which the
training thread then waits for. Measured here as the training thread sees it: a
CPU-bound loop (torch matmuls and Python work, releasing and taking the GIL as real
steps do) runs for ``--seconds`` with no sampler, then with the sampler at its real
rate (1 Hz) and at 100 Hz (a stress, 100× the real rate), alternated over ``--rounds`` in
the same process: steps per second, and the ratio plain / sampled (≤ 1.01 is the goal).
The loop's stack is 20 frames deep inside a fake ``torch/distributed`` call site, so each
sample classifies it fully. ``shares 10 Hz`` is the time-share sampler
(``probe.time_shares``: a frame walk and a count, no source line) at its real rate.

    .venv/bin/python benchmarks/sampling_bench.py [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import torch

from raytop.probe.activity import ActivitySampler
from raytop.probe.time_shares import TimeShares, classify_share
from raytop.wire.train_frames import report_parts

PARTS = report_parts()  # Train's report frames, as the probe reads them


def step(a: torch.Tensor, depth: int) -> float:
    """One training step, ``depth`` frames down (a realistic stack to walk)."""
    if depth:
        return step(a, depth - 1)
    b = a @ a
    return float(sum(i * 0.5 for i in range(200))) + float(b[0, 0])


def run(seconds: float, hz: float, sample: bool, shares: bool = False
        ) -> tuple[float, list[float]]:  # fmt: skip
    """Steps per second of the loop over ``seconds``, with the bench's thread waking at
    ``hz`` and sampling the loop each time (``sample``) or not: the same wake-ups either
    way, so the ratio is the sampling alone. Also each sample's own duration: the time the
    sampler holds the GIL, which bounds what it can take from the loop."""
    a = torch.randn(96, 96)
    done = threading.Event()
    steps = [0]

    def loop() -> None:
        while not done.is_set():
            step(a, 20)
            steps[0] += 1

    worker = threading.Thread(target=loop)
    worker.start()
    sampler = ActivitySampler(worker.ident)
    counted = TimeShares()

    def share_sample(now: float) -> None:
        frame = sys._current_frames().get(worker.ident)
        share, waiting = classify_share(frame, *PARTS)
        counted.add(share, now, waiting)

    take = share_sample if shares else sampler.sample
    took: list[float] = []
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        if sample:
            began = time.perf_counter()
            take(time.time())
            took.append(time.perf_counter() - began)
        time.sleep(1.0 / hz)
    done.set()
    worker.join()
    return steps[0] / (time.perf_counter() - start), took


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    variants = {"1 Hz": 1.0, "100 Hz": 100.0, "shares 10 Hz": 10.0}
    rates: dict[tuple[str, bool], list[float]] = {}
    took: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):  # alternated: drift hits every variant alike
        for name, hz in variants.items():
            for sample in (False, True):
                rate, durations = run(args.seconds, hz, sample, name.startswith("shares"))
                rates.setdefault((name, sample), []).append(rate)
                took[name] += durations
    result = {}
    for name, hz in variants.items():
        plain = statistics.median(rates[(name, False)])
        sampled = statistics.median(rates[(name, True)])
        per_sample = statistics.median(took[name])
        p99 = sorted(took[name])[int(0.99 * (len(took[name]) - 1))]
        result[name] = {"plain_steps_per_s": plain, "sampled_steps_per_s": sampled,
                        "ratio": plain / sampled, "samples": len(took[name]),
                        "sample_us_median": per_sample * 1e6, "sample_us_p99": p99 * 1e6,
                        "gil_share": per_sample * hz}  # fmt: skip
        print(
            f"sampling at {name:>6}: plain {plain:8.1f} steps/s, sampled {sampled:8.1f} "
            f"steps/s, plain/sampled {plain / sampled:.4f} ({len(took[name])} samples); "
            f"a sample takes {per_sample * 1e6:.0f} µs (p99 {p99 * 1e6:.0f}): at most "
            f"{per_sample * hz:.4%} of the loop's time"
        )
    return result


if __name__ == "__main__":
    main()
