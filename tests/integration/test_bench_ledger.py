"""The report ledger's benchmark (issue 13, items 1 and 2: the probe's cost, a report's
freshness in ``status --json`` and on the TUI) runs, in small, on the shared cluster: no
timing asserted (its figures are in docs/PERFORMANCE.md, measured by its own command), so
it never rots."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "ledger_bench.py"


def test_the_ledger_benchmark_measures_the_probe_and_freshness(ray_cluster):
    done = subprocess.run(
        [sys.executable, str(BENCH), "--address", ray_cluster.address,
         "--reports", "12", "--rounds", "1", "--fresh", "10"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"probe on_report\+on_checkpoint_sync enter\+exit: median [\d.]+ us", out)
    assert re.search(r"instrumented / plain \(median\): [\d.]+", out)
    for face in ("status --json (20 ms poll)", "TUI (0.25 s refresh)"):
        assert re.search(rf"freshness {re.escape(face)}: p50 [\d.]+ s, p95 [\d.]+ s", out), out
