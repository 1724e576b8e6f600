"""The smoke of one Ray line on one Python (``make test-compat``: Python 3.12, Ray 2.60
by default), in a venv of its own that has that Ray before raytop is installed into it.

- raytop's install kept the venv's Ray and brought no torch (``test_install_kept_ray``);
- on a cluster whose processes carry the probe (``RAY_TRAIN_CALLBACKS``, as a KubeRay
  cluster's containers would), a plain ``DataParallelTrainer`` job whose rank 1 stops
  before a report, submitted with ``ray job submit``: per-rank counts in the ledger, and
  ``raytop check`` exits 10 naming rank 1; the job asks for Ray's NCCL hang detector
  (``RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR=1`` in its runtime env, with raytop's RunProbe
  named beside the cluster's ReportProbe), which raytop shows "on"
  before any verdict on a Ray that has it (2.60 on), "unavailable" on one that has not;
- ``raytop run examples/scalar.toml --no-tui`` on that cluster exits 0, every trial
  TERMINATED.

Torch-free: on this machine torch exists only for Python 3.11, and anything else would
download a multi-GB CUDA build. Run with ``--confcutdir compat`` (the suite's
conftest needs the test extras this venv does not have).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
EXPECTED_RAY = os.environ.get("RAYTOP_COMPAT_RAY", "")


def raytop(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "raytop"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """An embedded cluster of 4 logical CPUs with the probe in its processes' environment,
    its own raytop home, Ray temp dir and HOME; stopped by raytop at the end."""
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "HOME": str(home), "RAYTOP_HOME": str(home / ".raytop"),
           "RAY_TMPDIR": f"/tmp/raytop-compat-{os.getpid()}",
           "RAY_TRAIN_CALLBACKS": "raytop.probe.ReportProbe"}  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    script = ("from raytop.launch.cluster import start_embedded\n"
              "from raytop.launch.spec import ClusterSection\n"
              "print(start_embedded(ClusterSection(num_cpus=4)).address)")  # fmt: skip
    started = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, timeout=180)  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    address = started.stdout.strip().splitlines()[-1]
    yield address, env
    raytop("down", env=env, timeout=120)


def test_install_kept_ray():
    import ray

    if EXPECTED_RAY:
        assert ray.__version__ == EXPECTED_RAY
    listed = subprocess.run([sys.executable, "-m", "pip", "list", "--format=json"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "torch" not in names and not [n for n in names if n.startswith("nvidia-")]


def test_a_plain_job_whose_rank_1_stops_is_a_barrier_stall(cluster):
    address, env = cluster
    dashboard = subprocess.run(
        [sys.executable, "-c", "from raytop.wire.gcs import GcsKv; import sys; "
         f"print(GcsKv({address!r}).get_from('dashboard', 'dashboard').decode())"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    job = ROOT / "tests" / "integration" / "stall_job.py"
    # The job's owner names raytop's controller callback too (its attempts, and whether
    # Ray's NCCL hang detector watches the run) and asks for that detector.
    detector = json.dumps({"env_vars": {
        "RAY_TRAIN_CALLBACKS": "raytop.probe.ReportProbe,raytop.probe.RunProbe",
        "RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR": "1"}})  # fmt: skip
    submit = [str(BIN / "ray"), "job", "submit", "--address", f"http://{dashboard}",
              "--runtime-env-json", detector,
              "--no-wait", "--", str(sys.executable), str(job), "--stuck-at", "5"]  # fmt: skip
    submitted = subprocess.run(submit, capture_output=True, text=True, env=env, timeout=120)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    deadline = time.monotonic() + 180
    while True:
        result = raytop("check", "--stall-after", "5", "--address", address, env=env)
        stalls = [ln for ln in result.stdout.splitlines()
                  if ln.startswith("barrier_stall run stall-job")]  # fmt: skip
        if result.returncode == 10 and stalls:
            break
        assert time.monotonic() < deadline, (result.returncode, result.stdout, result.stderr)
        time.sleep(1)
    assert "rank 1 is 1 report behind" in stalls[0], stalls
    status = raytop("status", "--json", "--address", address, env=env)
    assert status.returncode == 0, status.stderr[-3000:]  # `raytop status` exits 0 on this line
    shown = json.loads(status.stdout)
    (run,) = [r for r in shown["runs"] if r["run_name"] == "stall-job"]
    assert run["instrumented"] is True
    assert [(w["rank"], w["reports_exited"]) for w in run["workers"]] == [(0, 5), (1, 5)]
    # Ray's NCCL hang detector, asked for by the job: on (no verdict: no NCCL here; Ray may
    # then stop it, finding no ncclras) where this Ray has it, else unavailable.
    import ray

    has_detector = tuple(int(p) for p in ray.__version__.split(".")[:2]) >= (2, 60)
    assert run["attempts"], run  # the RunProbe recorded the run
    detector = run["ray_detector"]
    assert detector is not None, run
    if has_detector:
        assert (detector["state"], detector["action"]) == ("on", "observe"), detector
        assert (detector["poll_s"], detector["confirm_s"]) == (15, 600), detector
        assert detector["line"].startswith("Ray's NCCL hang detector: on"), detector
    else:
        assert detector["state"] == "unavailable", detector


def test_the_scalar_example_through_raytop_run(cluster, tmp_path):
    address, env = cluster
    for name in ("scalar.toml", "scalar_objective.py"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    result = raytop("run", str(tmp_path / "scalar.toml"), "--no-tui", "--address", address,
                    env=env, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shown = json.loads(raytop("status", "--json", "--address", address, "--experiment",
                              str(tmp_path / "results" / "scalar"), env=env).stdout)  # fmt: skip
    (experiment,) = shown["experiments"]
    # every trial of the example's grid (x = 1, 2, 3, 4) ran to its end
    assert [t["status"] for t in experiment["trials"]] == ["TERMINATED"] * 4, experiment
