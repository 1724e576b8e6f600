"""A Train run with no probe, on a real cluster: all that Ray itself tells of it, and its
ranks' Python stacks by py-spy.

The cluster carries the probe's variable in its processes' environment, as a KubeRay
RayCluster's containers would (``probed_cluster``); this job empties it for itself
(``runtime_env`` ``env_vars``: ``RAY_TRAIN_CALLBACKS=""``), which Train reads as no
callback (``ray/train/v2/_internal/callbacks/env_callback.py``: an empty value returns
none), so its workers run with no probe: a plain script's ``DataParallelTrainer`` with 2
workers that sleep between reports, submitted with ``ray job submit``. raytop shows its
workers (pid, node), its job and the hint, and ``status --stacks`` takes each rank's
Python stack with py-spy on this node (the cluster's only one)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import ray
from click.testing import CliRunner

from raytop.cli import main
from raytop.pipeline.uninstrumented import DRIVER_HINT
from tests.conftest import RAY_CLI, job_status, submit_job, wait_for

# The venv's Python by its path: the cluster's processes have the test's PATH, which need
# not hold the venv's bin (``make test`` runs .venv/bin/pytest without activating it).
ENTRYPOINT = f"{shlex.quote(sys.executable)} no_probe_train.py"
LOOP = "train_loop_without_probe"
SCRIPT = f"""
import os
import threading
import time

import ray.train
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer


def file_a_problem_when_asked():
    # What a probe whose hooks do not fit this Ray files, from inside the job.
    while not os.path.exists(FLAG):
        time.sleep(0.2)
    from raytop.wire.train_hooks import file_probe_problem

    file_probe_problem("simulated: Ray's Train callbacks have no on_report")


threading.Thread(target=file_a_problem_when_asked, daemon=True).start()


def {LOOP}(config):
    for step in range(1000):
        time.sleep(0.5)
        ray.train.report({{"step": step}})


DataParallelTrainer({LOOP}, scaling_config=ray.train.ScalingConfig(num_workers=2),
                    run_config=ray.train.RunConfig(name="no-probe-run")).fit()
"""


@pytest.fixture(scope="module")
def no_probe_job(probed_cluster, tmp_path_factory):
    """The job (its submission id and raytop's home for it: the test's own, so that every
    run shown is the cluster's), while it runs; stopped at the end."""
    folder = tmp_path_factory.mktemp("no_probe_job")
    flag = tmp_path_factory.mktemp("no_probe_flag") / "file_a_problem"
    (folder / "no_probe_train.py").write_text(f"FLAG = {str(flag)!r}\n" + SCRIPT)
    for attempt in range(3):  # a just-started head's job agent may drop the first one (500)
        try:
            job = submit_job(probed_cluster, ENTRYPOINT, cwd=folder,
                             env={"RAY_TRAIN_CALLBACKS": ""})  # fmt: skip
            break
        except AssertionError:
            if attempt == 2:
                raise
            time.sleep(3)
    yield SimpleNamespace(id=job, home=tmp_path_factory.mktemp("no_probe_home"), flag=flag)
    subprocess.run([RAY_CLI, "job", "stop", "--address", probed_cluster.dashboard, job],
                   capture_output=True, timeout=120)  # fmt: skip


def status(address: str, home: Path, *extra: str) -> dict:
    """``raytop status --json`` with no experiment named: every run on the cluster."""
    result = CliRunner().invoke(main, ["status", "--json", "--address", address, *extra],
                                env={"RAYTOP_HOME": str(home)})  # fmt: skip
    assert result.exit_code == 0, (result.stderr, result.exception)
    return json.loads(result.stdout)


def the_run(address: str, home: Path) -> dict | None:
    """The job's run once both its workers are up, else None."""
    runs = [r for r in status(address, home)["runs"] if not r["instrumented"]]
    return runs[0] if runs and len(runs[0]["workers"]) == 2 else None


@pytest.fixture(scope="module")
def shown(probed_cluster, no_probe_job) -> dict:
    """The job's run in ``status --json``, once both its workers are up; when it does not
    come, the job's status and the end of its log say why."""
    address, home = probed_cluster.address, no_probe_job.home
    try:
        return wait_for(lambda: the_run(address, home), 90, "the job's run, 2 workers")
    except AssertionError:
        logs = subprocess.run(
            [RAY_CLI, "job", "logs", "--address", probed_cluster.dashboard, no_probe_job.id],
            capture_output=True,
            text=True,
            timeout=60,
        )
        state = job_status(probed_cluster, no_probe_job.id)
        why = f"job {state}:\n{logs.stdout[-3000:]}{logs.stderr[-1000:]}"
        raise AssertionError(why) from None


def test_a_run_with_no_probe_shows_workers_job_hint_and_stacks_by_py_spy(
    probed_cluster, no_probe_job, shown
):
    address, home = probed_cluster.address, no_probe_job.home
    (node,) = status(address, home)["cluster"]["nodes"]
    assert shown["source"] == "actor_table"
    assert all(w["pid"] and w["node_id"] == node["node_id"] for w in shown["workers"])
    assert shown["job_id"]
    assert shown["run_name"] == f"Train run of job {shown['job_id']} (no probe)"
    assert shown["probe_hint"] == DRIVER_HINT  # the job's driver built the trainer

    def in_the_loop() -> tuple[dict, dict] | None:
        """A stacks request's answer once both ranks are in the script's loop (they spend
        their first seconds setting up the worker group)."""
        answered = status(address, home, "--stacks")
        (run,) = [r for r in answered["runs"] if r["run_id"] == shown["run_id"]]
        for worker in run["workers"]:
            assert worker["stack_by"] == "py-spy", worker["stack_problem"]
        if all(f"{LOOP} (no_probe_train.py:" in w["stack"] for w in run["workers"]):
            return answered, run
        return None

    answered, run = wait_for(in_the_loop, 45, "both ranks' stacks in the script's loop")
    for worker in run["workers"]:  # Train's loop thread first: where the user's code is
        first = worker["stack"].split("\nThread ")[1]  # after py-spy's process lines
        assert '"TrainingThread(' in first.splitlines()[0], worker["stack"]
        assert f"{LOOP} (no_probe_train.py:" in first
    (saved,) = answered["stacks_capture"]["saved_to"]
    assert saved.startswith(str(home / "captures"))


def test_a_run_with_no_probe_names_its_jobs_entrypoint(shown):
    assert shown["job_entrypoint"] == ENTRYPOINT


def test_why_a_run_has_no_probe_is_said_from_evidence(probed_cluster, no_probe_job, shown):
    """The job emptied RAY_TRAIN_CALLBACKS for itself: its driver (on this node) is read
    and named. Then the job files what a probe whose hooks do not fit would file: that
    reason replaces it, in JSON and in the text face."""
    address, home = probed_cluster.address, no_probe_job.home

    def reason() -> dict | None:
        (run,) = [r for r in status(address, home)["runs"] if r["run_id"] == shown["run_id"]]
        return run["no_probe"] if run["no_probe"]["kind"] != "waiting" else None

    unset = wait_for(reason, 60, "the run's reason")
    assert unset["kind"] == "callbacks_unset", unset
    assert unset["line"].startswith(f"RAY_TRAIN_CALLBACKS is not set in job {shown['job_id']}'s "
                                    "driver (pid ")  # fmt: skip

    no_probe_job.flag.touch()
    unfit = wait_for(lambda: (r := reason()) and r["kind"] == "hooks_unfit" and r, 30,
                     "the filed problem to be the reason")  # fmt: skip
    assert unfit["line"] == (
        f"raytop's probe is in this run but cannot count on Ray {ray.__version__}: "
        "simulated: Ray's Train callbacks have no on_report"
    )
    text = CliRunner().invoke(main, ["status", "--address", address],
                              env={"RAYTOP_HOME": str(home)})  # fmt: skip
    assert "no probe: its hooks do not fit this Ray" in text.stdout
    assert f"why no counts: {unfit['line']}" in text.stdout


NAMES_THE_PROBE = """
import ray.train
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

DataParallelTrainer(lambda config: None,
                    scaling_config=ray.train.ScalingConfig(num_workers=1)).fit()
"""


def test_a_job_naming_the_probe_where_raytop_is_missing_ends_saying_so(probed_cluster, tmp_path):
    """raytop missing where the trainer is built: a ``raytop`` package without the probe
    first on the job's PYTHONPATH (what an image without raytop is to ``import``). Train
    cannot build the callback; the job fails at once, and raytop says why."""
    shadow = tmp_path / "shadow" / "raytop"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "names_the_probe.py").write_text(NAMES_THE_PROBE)
    job = submit_job(probed_cluster, f"{shlex.quote(sys.executable)} names_the_probe.py",
                     cwd=tmp_path / "job",
                     env={"RAY_TRAIN_CALLBACKS": "raytop.probe.ReportProbe",
                          "PYTHONPATH": str(shadow.parent)})  # fmt: skip
    wait_for(lambda: job_status(probed_cluster, job) == "FAILED", 90, "the job to fail")
    home = tmp_path / "home"

    def its_row() -> dict | None:
        rows = status(probed_cluster.address, home)["workloads"]
        return next((w for w in rows if w["submission_id"] == job and w["how_ended"]), None)

    row = wait_for(its_row, 30, "the job's row, ended")
    assert row["status"] == "ENDED"
    assert row["how_ended"] == (
        "failed: RAY_TRAIN_CALLBACKS names raytop.probe.ReportProbe, but raytop is not "
        "installed where Train imports it (the trainer's process or its workers)"
    )
