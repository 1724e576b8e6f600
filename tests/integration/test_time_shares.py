"""Where the ranks' time goes, on jobs raytop did not launch (issue 24): plain Train
scripts submitted with ``ray job submit`` to a cluster that carries the probe in its
environment (``probed_cluster``), each spending its time on one kind of work. Within 60 s
of its ranks' first heartbeat, the run's largest share in ``status --json`` is that kind,
and each rank's shares sum to 1. (Ray's ``torch_linear_example``, whose ranks wait in
``train.report``, is checked in ``test_foreign_checkpoints``, on the run it already makes.)
"""

from __future__ import annotations

import math
import shlex
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import largest_share, submit_job, wait_for
from tests.integration.test_foreign_checkpoints import cluster_status, run_ids

pytestmark = pytest.mark.ray

JOB = Path(__file__).with_name("share_job.py")
PYTHON = shlex.quote(sys.executable)
WITHIN_S = 60.0


def test_each_jobs_largest_share_is_the_work_it_does(probed_cluster):
    from ray.job_submission import JobSubmissionClient

    before = run_ids(probed_cluster)
    kinds = ("data_loader", "compute")
    jobs = {kind: submit_job(probed_cluster, f"{PYTHON} share_job.py {kind}", cwd=JOB.parent)
            for kind in kinds}  # fmt: skip
    client = JobSubmissionClient(probed_cluster.dashboard)
    first_seen: dict[str, float] = {}  # run id → when its ranks first beat
    found: dict[str, tuple[float, dict]] = {}  # kind → (seconds after first beat, run)

    def each_kind_shown():
        for run in cluster_status(probed_cluster)["runs"]:
            if run["run_id"] in before or not run["instrumented"] or not run["workers"]:
                continue
            first_seen.setdefault(run["run_id"], time.monotonic())
            shares = run["time_shares"]
            world = run["world_size"]
            kind = "data_loader" if world == 2 else "compute"
            ranked = all(w["time_shares"] for w in run["workers"])  # each rank's own, too
            if kind not in found and shares and ranked and largest_share(shares) == kind:
                found[kind] = (time.monotonic() - first_seen[run["run_id"]], run)
        return found if len(found) == len(kinds) else None

    def steps_counted():  # torch's step hook in each rank of the data loader's run (SGD)
        (run,) = [r for r in cluster_status(probed_cluster)["runs"]
                  if r["run_id"] == found["data_loader"][1]["run_id"]]  # fmt: skip
        return all((w["optimizer_steps"] or 0) > 0 for w in run["workers"])

    try:
        wait_for(each_kind_shown, 240, lambda: f"each job's share: {found}, "
                 f"{ {k: client.get_job_status(j) for k, j in jobs.items()} }")  # fmt: skip
        wait_for(steps_counted, 30, "the data loader's optimizer steps")
    finally:
        for submission in jobs.values():
            client.stop_job(submission)
    for kind, (after_s, run) in found.items():
        assert after_s <= WITHIN_S, (kind, after_s, run["time_shares"])
        assert run["goodput"] == run["time_shares"]["compute"]
        for w in run["workers"]:
            assert math.isclose(sum(w["time_shares"].values()), 1.0, abs_tol=0.02), w
    assert found["compute"][1]["goodput"] > 0.5

    stopped = {k: wait_for(lambda j=j: client.get_job_status(j).is_terminal(), 60, k)
               for k, j in jobs.items()}  # fmt: skip
    assert all(stopped.values())
