"""Runs raytop did not launch, on a real cluster (issue 21): a Tune example submitted as a
Ray job is found in Tune's default storage with no flag, RUNNING with its trials in id
order and its pending trials' reason, then FINISHED; it is a row of the one list of
everything that runs, saying its job; its placement groups name their trial or its job.
Beside it, Ray's ``torch_linear_example`` as a second job: plain ``raytop`` at 100×30
shows both on its first screen (tmux); stopped with ``ray job stop``, its Train run is
shown ended, "stopped", within seconds. So is a job with no Train run.

raytop runs with ``HOME`` the cluster's (``probed_cluster.home``): the default
``~/ray_results`` is then the jobs' own, as on a head pod where raytop runs beside them."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import RAY_CLI, job_log_tail, job_status, submit_job, wait_for
from tests.tmux import Pane

# The venv's Python by its path: the cluster's processes have the test's PATH, which need
# not hold the venv's bin (``make test`` runs .venv/bin/pytest without activating it).
PYTHON = shlex.quote(sys.executable)
EXAMPLE = f"{PYTHON} -m ray.tune.examples.async_hyperband_example --smoke-test"
EXPERIMENT = "asynchyperband_test"  # the example's RunConfig(name=…)
TRAIN_EXAMPLE = "ray.train.examples.pytorch.torch_linear_example"  # 2 ranks, one CPU each


def status(cluster) -> dict:
    """``raytop status --json --address`` and nothing else, in this process (as the
    suite's ``status_json``), with the cluster's HOME."""
    from click.testing import CliRunner

    from raytop.cli import main

    result = CliRunner().invoke(main, ["status", "--json", "--address", cluster.address],
                                env={"HOME": str(cluster.home)})  # fmt: skip
    assert result.exit_code == 0, (result.stderr, result.exception)
    return json.loads(result.stdout)


def row_of(snapshot: dict, kind: str, key) -> dict | None:
    return next((w for w in snapshot["workloads"] if w["kind"] == kind and key(w)), None)


def test_a_tune_example_submitted_as_a_job_is_found_with_no_flag(probed_cluster):
    # First a Train run of Ray's own example, as a second owner's job would be: its two
    # ranks hold two of the four CPUs, so the Tune example's trials wait for the rest.
    train = submit_job(probed_cluster, f"{PYTHON} -m {TRAIN_EXAMPLE} --epochs 400")
    waited_for(probed_cluster, train, lambda: train_row(status(probed_cluster), train, "RUNNING"),
               120, "the Train run of Ray's example RUNNING")  # fmt: skip
    pane = open_raytop(probed_cluster)  # before the example: it ends within a minute or two
    try:
        sid = submit_job(probed_cluster, EXAMPLE)
        snapshot, exp = the_example_running(probed_cluster, sid, train)
        see_both_on_the_first_screen(pane)
    finally:
        pane.close()
    ids = [t["trial_id"] for t in exp["trials"]]
    assert ids == sorted(ids) and len(ids) == 20
    waiting = [t for t in exp["trials"] if t["status"] == "PENDING"]
    # 20 trials on 4 CPUs: some wait, and each says why.
    assert waiting and all(t["pending_reason"] for t in waiting), exp["trials"]
    row = row_of(snapshot, "experiment", lambda w: w["name"] == EXPERIMENT)
    assert (row["origin"], row["submission_id"], row["live"]) == ("ray_job", sid, True)
    assert row["entrypoint"] == EXAMPLE and row["origin_label"].startswith(f"Ray job {sid}: ")
    groups = [g for g in snapshot["placement_groups"] if g["experiment"] == EXPERIMENT]
    assert groups, snapshot["placement_groups"]
    for g in groups:  # a trial's (by its actor), a pending trial's, or its job's
        assert g["owner_kind"] in ("trial", "pending_trial") or g["owner"].startswith(
            f"Ray job {sid}"), g  # fmt: skip
    assert not [g for g in snapshot["placement_groups"] if (g["owner"] or "").startswith("job ")]

    # The Train run's job stopped: its row ends, saying so, within seconds.
    stop = [RAY_CLI, "job", "stop", "--address", probed_cluster.dashboard, train]
    subprocess.run(stop, capture_output=True, timeout=120, check=True)
    stopped_at = time.monotonic()
    ended = wait_for(lambda: train_row(status(probed_cluster), train, "ENDED"), 10,
                     "the stopped job's Train run shown ended")  # fmt: skip
    assert time.monotonic() - stopped_at < 10
    assert (ended["how_ended"], ended["live"]) == ("stopped", False)

    def finished() -> dict | None:
        snapshot = status(probed_cluster)
        exp = next(e for e in snapshot["experiments"] if e["name"] == EXPERIMENT)
        return snapshot if exp["status"] == "FINISHED" else None

    snapshot = wait_for(finished, 180, "the example FINISHED")
    exp = next(e for e in snapshot["experiments"] if e["name"] == EXPERIMENT)
    assert [t["status"] for t in exp["trials"]] == ["TERMINATED"] * 20
    row = row_of(snapshot, "experiment", lambda w: w["name"] == EXPERIMENT)
    assert (row["status"], row["live"], row["submission_id"]) == ("FINISHED", False, sid)


def the_example_running(cluster, sid: str, train: str) -> tuple[dict, dict]:
    """The snapshot and the Tune example's experiment once it runs with its 20 trials,
    some waiting with their reason, beside the Train run."""

    def running() -> tuple[dict, dict] | None:
        snapshot = status(cluster)
        exp = next((e for e in snapshot["experiments"] if e["name"] == EXPERIMENT), None)
        if exp is None or exp["status"] != "RUNNING" or len(exp["trials"]) < 20:
            return None
        if not any(t["pending_reason"] for t in exp["trials"] if t["status"] == "PENDING"):
            return None
        return snapshot, exp

    snapshot, exp = waited_for(cluster, sid, running, 180,
                               "the example RUNNING with 20 trials, some waiting")  # fmt: skip
    assert train_row(snapshot, train, "RUNNING") is not None
    return snapshot, exp


def waited_for(cluster, job: str, found, timeout_s: float, what: str):
    """``wait_for``, and when it times out: the job's status and the end of its log."""
    try:
        return wait_for(found, timeout_s, what)
    except AssertionError as e:
        raise AssertionError(
            f"{e}; job {job_status(cluster, job)}:\n{job_log_tail(cluster, job)}"
        ) from None


def train_row(snapshot: dict, submission_id: str, state: str) -> dict | None:
    """The Train run row of the job ``submission_id``, once its status is ``state``."""

    def mine(w: dict) -> bool:
        return w["submission_id"] == submission_id and w["status"] == state

    return row_of(snapshot, "train_run", mine)


def open_raytop(cluster) -> Pane:
    """Plain ``raytop`` in a real terminal of 100×30, HOME the cluster's."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    return Pane([sys.executable, "-m", "raytop", "--address", cluster.address],
                size=(100, 30), env={"HOME": str(cluster.home)})  # fmt: skip


def see_both_on_the_first_screen(pane: Pane) -> None:
    """The one list on raytop's first screen shows the foreign experiment and the Train
    run, RUNNING, each with its job; ``q`` quits."""
    screen = pane.wait_for(
        lambda s: any(EXPERIMENT in ln and "RUNNING" in ln for ln in s.splitlines())
        and any("Train" in ln and "RUNNING" in ln for ln in s.splitlines()),
        60, "the experiment and the Train run, RUNNING, on raytop's first screen",
    )  # fmt: skip
    lines = screen.splitlines()  # each row says its job (its submission id, as far as it fits)
    assert any(EXPERIMENT in ln and "RUNNING" in ln and "Ray job r" in ln for ln in lines), screen
    assert any("Train" in ln and "RUNNING" in ln and "Ray job r" in ln for ln in lines), screen
    pane.keys("q")
    pane.wait_for(lambda s: "EXITED=0" in s, 20, "raytop to quit")


SLEEPY = "import time\nimport ray\nray.init()\nwhile True:\n    time.sleep(1)\n"


def test_a_job_stopped_with_ray_job_stop_is_shown_ended_within_seconds(probed_cluster, tmp_path):
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    sid = submit_job(probed_cluster, f"{PYTHON} sleepy.py", cwd=tmp_path)

    def live() -> dict | None:
        row = row_of(status(probed_cluster), "job", lambda w: w["submission_id"] == sid)
        return row if row is not None and row["live"] and row["job_id"] else None

    row = wait_for(live, 120, "the sleeping job connected and RUNNING")
    assert (row["status"], row["origin"]) == ("RUNNING", "ray_job")
    assert row["origin_label"] == f"Ray job {sid}: python sleepy.py"  # the program by name
    stop = [RAY_CLI, "job", "stop", "--address", probed_cluster.dashboard, sid]
    subprocess.run(stop, capture_output=True, timeout=120, check=True)
    stopped_at = time.monotonic()

    def ended() -> dict | None:
        row = row_of(status(probed_cluster), "job", lambda w: w["submission_id"] == sid)
        return row if row is not None and row["status"] == "ENDED" else None

    row = wait_for(ended, 10, "the stopped job shown ended")
    assert time.monotonic() - stopped_at < 10
    assert (row["how_ended"], row["live"]) == ("stopped", False)
