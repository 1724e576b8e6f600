"""The benchmarks run, in small (no timing asserted: their figures are in
docs/PERFORMANCE.md, measured by their own command), so they never rot."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sampling_benchmark_runs_and_samples():
    result = load("sampling_bench").main(["--seconds", "0.3", "--rounds", "1"])
    assert set(result) == {"1 Hz", "100 Hz"}
    assert result["100 Hz"]["samples"] >= 5  # the sampler really ran against the loop
    assert all(r["plain_steps_per_s"] > 0 and r["sampled_steps_per_s"] > 0
               for r in result.values())  # fmt: skip
