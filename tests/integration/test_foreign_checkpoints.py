"""Checkpoints of runs raytop did not launch, on a cluster whose processes carry the probe
(``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe``, as a KubeRay RayCluster's containers
would), jobs submitted with ``ray job submit``:

- Ray's own ``torch_linear_example`` (every rank saves the same DDP ``model.pt``): its
  per-rank counts, no ERROR, ``check`` exits 0, one INFO naming the redundant uploads
  with its count, and train.report as where its ranks' time goes;
- a plain script whose ranks save different bytes under one name: one ERROR collision
  finding with its count, ``check`` exits 14;
- ``raytop run`` of a torch spec there (raytop's trainable adds the probe, and so does the
  cluster's variable): every rank counted once per report.

The ledger keeps every run of the cluster and ``check --address`` judges them all, so the
collision job runs last.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import run_raytop, status_json, submit_job, wait_for

pytestmark = pytest.mark.ray

EPOCHS = 3
JOB_TIMEOUT_S = 150
HERE = Path(__file__).parent


def cluster_status(cluster) -> dict:
    """``raytop status --json --address A`` in this process, with the cluster's HOME."""
    from raytop.cli import main

    result = CliRunner(env={"HOME": str(cluster.home)}).invoke(
        main, ["status", "--json", "--address", cluster.address]
    )
    assert result.exit_code == 0, (result.stderr, result.exception)
    return json.loads(result.stdout)


def run_job(cluster, entrypoint: str) -> None:
    """Submit ``entrypoint`` and wait for it to succeed (its log's tail if it does not)."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    submission = submit_job(cluster, entrypoint)
    client = JobSubmissionClient(cluster.dashboard)
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not (status := client.get_job_status(submission)).is_terminal():
        assert time.monotonic() < deadline, f"job still {status}"
        time.sleep(1)
    assert status == JobStatus.SUCCEEDED, client.get_job_logs(submission)[-3000:]


def new_run(cluster, before: set[str]) -> tuple[dict, dict]:
    """The snapshot and the one instrumented run not in ``before``, once every rank of it
    has said it is done (its last flush)."""

    def finished():
        snapshot = cluster_status(cluster)
        runs = [r for r in snapshot["runs"] if r["run_id"] not in before and r["instrumented"]]
        if len(runs) == 1 and runs[0]["workers"] and all(w["done"] for w in runs[0]["workers"]):
            return snapshot, runs[0]
        return None

    return wait_for(finished, 30, "the job's Train run in the ledger")


def report_part(shares: dict[str, float]) -> float:
    """The share of train.report, its parts (``report_*``) together."""
    return sum(v for k, v in shares.items() if k.startswith("report_"))


def run_ids(cluster) -> set[str]:
    return {r["run_id"] for r in cluster_status(cluster)["runs"]}


def counts(run: dict) -> list[tuple[int, int, int]]:
    return [(w["rank"], w["reports_entered"], w["reports_exited"]) for w in run["workers"]]


def of_run(snapshot: dict, run: dict, kind: str | None = None) -> list[dict]:
    return [f for f in snapshot["findings"] if f["evidence"].get("run_id") == run["run_id"]
            and (kind is None or f["kind"] == kind)]  # fmt: skip


def check(cluster):
    return run_raytop("check", "--address", cluster.address, env={"HOME": str(cluster.home)})


def test_rays_torch_linear_example_is_replicated_state_not_a_collision(probed_cluster):
    before = run_ids(probed_cluster)
    run_job(probed_cluster, f"{sys.executable} -m ray.train.examples.pytorch.torch_linear_example "
                            f"--epochs {EPOCHS}")  # fmt: skip
    snapshot, run = new_run(probed_cluster, before)
    assert counts(run) == [(0, EPOCHS, EPOCHS), (1, EPOCHS, EPOCHS)]
    # Each result waits for Train's controller: train.report takes a large share of the
    # time. The largest when the machine is quiet; under CI's load its tiny model's steps
    # stretch (compute 50 %, report 40 % seen; in a rehearsal of the whole suite, compute
    # 75 %, report 20 %). One rank alone stretches further (CI: a rank's recent window held
    # report 0.56 s of 3.5 s, 16 %). So of the run and of each rank a tenth or more: it
    # waits at every report, which a run whose report cost nothing would not show.
    assert report_part(run["time_shares"]) >= 0.1, run["time_shares"]
    shares = [w["time_shares"] for w in run["workers"]]
    assert all(report_part(s) >= 0.1 for s in shares), shares
    assert len(run["checkpoints"]) == EPOCHS
    for c in run["checkpoints"]:  # both ranks' model.pt hashed alike: no collision
        assert (c["collisions"], c["replicated"]) == ({}, {"model.pt": [0, 1]})
        assert c["redundant_bytes"] > 0
    assert [f for f in snapshot["findings"] if f["severity"] == "error"] == []
    (info,) = of_run(snapshot, run)
    assert (info["kind"], info["severity"], info["count"]) == (
        "checkpoint_replicated", "info", EPOCHS
    )  # fmt: skip
    assert info["message"].startswith("rank 1 uploaded the same model.pt as rank 0 into ")
    assert (info["first"], info["latest"]) == (run["checkpoints"][0]["dir_name"],
                                               run["checkpoints"][-1]["dir_name"])  # fmt: skip
    result = check(probed_cluster)
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [ln for ln in result.stdout.splitlines()
               if ln.startswith(f"checkpoint_replicated run {run['run_name']}:")]  # fmt: skip
    assert line.endswith(f"×{EPOCHS} (first {info['first']}, latest {info['latest']})")


def test_raytop_run_on_a_probed_cluster_counts_each_report_once(probed_cluster, example_copy):
    # The cluster's RAY_TRAIN_CALLBACKS adds a ReportProbe and raytop's trainable adds its
    # own: one counts, the other stays inert.
    one_trial = {
        "lr = { grid = [0.01, 0.05] }": "lr = 0.01",
        "hidden = { grid = [16, 32] }": "hidden = 16",
        "epochs = 8": f"epochs = {EPOCHS}",
        "epoch_seconds = 4": "epoch_seconds = 0",
    }
    spec = example_copy("torch_sweep.toml", "torch_sweep_loop.py", edit=one_trial)
    result = run_raytop("run", str(spec), "--no-tui", "--address", probed_cluster.address)
    assert result.returncode == 0, result.stdout + result.stderr
    (experiment,) = status_json(probed_cluster.address, spec.parent / "results" / "torch_sweep")[
        "experiments"
    ]
    (trial,) = experiment["trials"]
    assert trial["iterations"] == EPOCHS
    (run,) = experiment["runs"]
    assert counts(run) == [(0, EPOCHS, EPOCHS), (1, EPOCHS, EPOCHS)]  # not 2 × EPOCHS


def test_ranks_saving_different_bytes_under_one_name_are_one_collision(probed_cluster):
    before = run_ids(probed_cluster)
    # The script where it lies, as one already in the image: no working_dir to upload.
    run_job(probed_cluster, f"{sys.executable} {HERE / 'collide_job.py'} --epochs {EPOCHS}")
    snapshot, run = new_run(probed_cluster, before)
    assert counts(run) == [(0, EPOCHS, EPOCHS), (1, EPOCHS, EPOCHS)]
    (collision,) = of_run(snapshot, run, "checkpoint_collision")
    assert collision["severity"] == "error" and collision["count"] == EPOCHS >= 2
    assert collision["message"].startswith("ranks 0, 1 all wrote model.pt into ")
    assert of_run(snapshot, run, "checkpoint_replicated") == []
    result = check(probed_cluster)
    assert result.returncode == 14, result.stdout + result.stderr
    mine = f"checkpoint_collision run {run['run_name']}:"
    assert sum(ln.startswith(mine) for ln in result.stdout.splitlines()) == 1
