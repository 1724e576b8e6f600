"""Train V2's own state of a run raytop did not start, on a real cluster: a plain script
(no probe) runs a TorchTrainer with ``RAY_TRAIN_ENABLE_STATE_TRACKING=1`` in its own
environment only (Train reads it in the driver that calls ``fit()``, whose controller
creates Train's state actor: the cluster needs nothing), rank 1 fails the first attempt
and Train retries. ``raytop status --json`` shows the run with Train's name, both attempts
and the world ranks of the running one, marked ``instrumented: false`` and
``source: "train_state"``. The same script without the variable (and without the failure)
stays the actor table's: its Train workers found with their pids, marked as having no
probe, and no rank finding raised for counts it cannot have."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from tests.conftest import status_json, wait_for

pytestmark = pytest.mark.ray

SCRIPT = """
import os, time, ray, ray.train
from ray.train.torch import TorchTrainer

def loop(config):
    rank = ray.train.get_context().get_world_rank()
    marker = os.path.join(config["folder"], "failed-once")
    i = 0
    while not os.path.exists(os.path.join(config["folder"], "stop")):  # the test ends it
        time.sleep(0.5)
        if config["fail"] and rank == 1 and i == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError(f"injected failure at step {{i}}")
        ray.train.report({{"i": i}})
        i += 1

ray.init(address="{address}", logging_level="ERROR")
TorchTrainer(loop, train_loop_config={{"folder": "{folder}", "fail": {fail}}},
             scaling_config=ray.train.ScalingConfig(num_workers=2),
             run_config=ray.train.RunConfig(
                 name="{name}", storage_path="{folder}",
                 failure_config=ray.train.FailureConfig(max_failures=1))).fit()
"""


def start(address: str, folder, name: str, tracking: bool) -> subprocess.Popen:
    """The script, its rank 1 failing once only when Train tracks the run (the untracked
    run's ranks keep the pids they are first seen with)."""
    script = folder / "tracked.py"
    script.write_text(textwrap.dedent(SCRIPT.format(address=address, folder=folder, name=name,
                                                    fail=tracking)))  # fmt: skip
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_TRAIN_CALLBACKS", "RAY_TRAIN_ENABLE_STATE_TRACKING")}  # fmt: skip
    if tracking:
        env["RAY_TRAIN_ENABLE_STATE_TRACKING"] = "1"
    with open(folder / "tracked.out", "wb") as out:  # what a failing test shows (``said``)
        return subprocess.Popen([sys.executable, str(script)], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def said(folder, user: subprocess.Popen) -> str:
    """The script's exit code (None: running) and the last lines it printed."""
    lines = (folder / "tracked.out").read_text(errors="replace").splitlines()
    return f"script exit {user.poll()}, its last lines:\n" + "\n".join(lines[-15:])


def stop(user: subprocess.Popen) -> None:
    os.killpg(user.pid, signal.SIGKILL)
    user.wait(timeout=30)


def foreign_runs(address: str) -> list[dict]:
    """The uninstrumented runs of ``raytop status --json`` (polled in this process)."""
    return [r for r in status_json(address)["runs"] if not r["instrumented"]]


def test_a_tracked_run_without_a_probe_shows_trains_name_and_attempts(ray_cluster, tmp_path):
    user = start(ray_cluster.address, tmp_path, "state-tracked-run", tracking=True)

    seen: list = []  # the run's attempts as last polled: the failure says where it stopped
    listed: list = []  # every uninstrumented run as last polled: (name, source, workers)

    def retried():
        found = foreign_runs(ray_cluster.address)
        listed[:] = [(r["run_name"], r["source"], len(r["workers"])) for r in found]
        runs = [r for r in found if r["run_name"] == "state-tracked-run"]
        seen[:] = [(a["status"], a.get("error")) for a in runs[0]["attempts"]] if runs else []
        if runs and [a["status"] for a in runs[0]["attempts"]] == ["errored", "running"]:
            return runs[0] if len(runs[0]["workers"]) == 2 else None
        return None

    try:
        run = wait_for(
            retried,
            240,
            lambda: (
                "the tracked run's second attempt in raytop status"
                f" --json (attempts last seen: {seen}; runs listed: {listed})\n"
                + said(tmp_path, user)
            ),
        )
        assert (run["instrumented"], run["source"]) == (False, "train_state")
        assert run["run_id"].startswith("actor-")
        assert (run["world_size"], run["attempt_index"]) == (2, 2)
        first, second = run["attempts"]
        assert (first["index"], first["error_class"], first["error"]) == (
            1, "RuntimeError", "injected failure at step 1"
        )  # fmt: skip
        assert first["ended_at"] >= first["started_at"] and first["duration_s"] >= 0
        assert (second["index"], second["ended_at"]) == (2, None)
        assert run["attempt_id"] == second["attempt_id"] != first["attempt_id"]
        ranks = [(w["rank"], w["local_rank"], w["node_rank"]) for w in run["workers"]]
        assert ranks == [(0, 0, 0), (1, 1, 0)]
        pids = [w["pid"] for w in run["workers"]]
        assert all(psutil.pid_exists(pid) for pid in pids)
        assert all(w["reports_entered"] == 0 and w["state"] == "" for w in run["workers"])
        assert all(w["declared_resources"] == {"CPU": 1.0} for w in run["workers"])
    finally:
        stop(user)


def test_the_same_run_without_tracking_stays_the_actor_tables(ray_cluster, tmp_path):
    """Whether Train's state actor is there (the test above made it) or not, it knows
    nothing of this run: the run is what the actor table says, as before (its Train
    controller and the 2 worker actors it owns, with their pids), marked as having no
    probe (no ``RAY_TRAIN_CALLBACKS``), and no rank finding is raised for counts it
    cannot have."""
    user = start(ray_cluster.address, tmp_path, "untracked-run", tracking=False)

    def shown():
        snapshot = status_json(ray_cluster.address)
        runs = [r for r in snapshot["runs"] if not r["instrumented"] and len(r["workers"]) == 2]
        return (snapshot, runs[0]) if runs else None

    try:
        snapshot, run = wait_for(shown, 240, lambda: "the untracked run in raytop status --json\n"
                                 + said(tmp_path, user))  # fmt: skip
        assert (run["source"], run["attempts"]) == ("actor_table", [])
        assert run["run_name"].endswith("(no probe)")
        assert run["world_size"] == 2
        pids = [w["pid"] for w in run["workers"]]
        assert all(psutil.pid_exists(pid) for pid in pids) and pids == sorted(pids)
        assert all(w["reports_entered"] == 0 and w["state"] == "" for w in run["workers"])
        kinds = {f["kind"] for f in snapshot["findings"]}
        assert not kinds & {"barrier_stall", "rank_dead", "rank_silent", "report_mispaired"}
    finally:
        stop(user)
