"""A run raytop did not launch, stalled at the barrier: a plain ``DataParallelTrainer``
script whose rank 1 stops before a report, submitted with ``ray job submit`` to a cluster
whose processes carry the probe (``probed_cluster``). ``raytop check`` exits 10 naming
rank 1 within seconds of the stall threshold.

Code 10 outranks every code the earlier tests on that cluster leave in its ledger (a
collision's 14, a stopped run's dead ranks' 11), so this module runs last there (its
name sorts last) and still judges only its own run's stall.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import RAY_CLI, check_in_process, run_raytop, submit_job

pytestmark = pytest.mark.ray

STALL_AFTER_S = 5
HERE = Path(__file__).parent


def test_a_plain_script_whose_rank_1_stops_before_a_report_is_a_barrier_stall(probed_cluster):
    script = shlex.quote(str(HERE / "stall_job.py"))
    job = submit_job(probed_cluster, f"{shlex.quote(sys.executable)} {script} --stuck-at 5")
    home = {"HOME": str(probed_cluster.home)}
    try:
        deadline = time.monotonic() + 120
        args = ("--stall-after", str(STALL_AFTER_S), "--address", probed_cluster.address)
        while True:
            code, text = check_in_process(*args, env=home)
            stalls = [ln for ln in text.splitlines()
                      if ln.startswith("barrier_stall run stall-job")]  # fmt: skip
            if code == 10 and stalls:
                break
            assert time.monotonic() < deadline, (code, text)
            time.sleep(1)
        result = run_raytop("check", *args, env=home)  # as a user runs it
        assert result.returncode == 10, result.stdout
        stalls = [ln for ln in result.stdout.splitlines()
                  if ln.startswith("barrier_stall run stall-job")]  # fmt: skip
        (line,) = stalls
        assert "rank 1 is 1 report behind" in line, line
    finally:
        subprocess.run([RAY_CLI, "job", "stop", "--address", probed_cluster.dashboard, job],
                       capture_output=True, timeout=120)  # fmt: skip
