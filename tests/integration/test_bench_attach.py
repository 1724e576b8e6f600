"""The attach benchmark runs, in small, on the shared cluster (no timing asserted: its
figures are in docs/PERFORMANCE.md, measured by its own command), so it never rots."""

from __future__ import annotations

import shutil

import pytest

from tests.unit.test_bench_smoke import load

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def test_the_attach_benchmark_times_both_commands_and_a_first_frame(ray_cluster, tmp_path):
    out = tmp_path / "attach.json"
    result = load("attach_bench").main(
        ["--address", ray_cluster.address, "--no-run", "--rounds", "1", "--json", str(out)]
    )
    assert out.exists()
    assert set(result["times_s"]) == {"ray_status", "raytop_status", "first_frame"}
    assert all(len(v) == 1 and v[0] > 0 for v in result["times_s"].values())


def test_a_full_frame_needs_the_whole_cluster_line_and_every_rank():
    bench = load("attach_bench")
    line = "127.0.0.1:1 embedded · 1 node alive · CPU 2/4 · … updated 0s ago"
    assert not bench.full_frame("connecting to 127.0.0.1:1 …", 0)
    assert bench.full_frame(line, 0)
    assert not bench.full_frame(line + "\n r0 3 1s", 2)
    assert bench.full_frame(line + "\n r0 3 1s  r1 3 1s", 2)
