"""Runs raytop did not launch, on a real cluster (issue 21): a Tune example submitted as a
Ray job is found in Tune's default storage with no flag, RUNNING with its trials in id
order and its pending trials' reason, then FINISHED; it is a row of the one list of
everything that runs, saying its job; its placement groups name their trial or its job.
A job stopped with ``ray job stop`` is shown ended, "stopped", within seconds.

raytop runs with ``HOME`` the cluster's (``probed_cluster.home``): the default
``~/ray_results`` is then the jobs' own, as on a head pod where raytop runs beside them."""

from __future__ import annotations

import json
import subprocess
import time

from tests.conftest import RAY_CLI, submit_job, wait_for

EXAMPLE = "python -m ray.tune.examples.async_hyperband_example --smoke-test"
EXPERIMENT = "asynchyperband_test"  # the example's RunConfig(name=…)


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
    sid = submit_job(probed_cluster, EXAMPLE)

    def running() -> tuple[dict, dict] | None:
        snapshot = status(probed_cluster)
        exp = next((e for e in snapshot["experiments"] if e["name"] == EXPERIMENT), None)
        if exp is None or exp["status"] != "RUNNING" or len(exp["trials"]) < 20:
            return None
        if not any(t["pending_reason"] for t in exp["trials"] if t["status"] == "PENDING"):
            return None
        return snapshot, exp

    snapshot, exp = wait_for(running, 180, "the example RUNNING with 20 trials, some waiting")
    ids = [t["trial_id"] for t in exp["trials"]]
    assert ids == sorted(ids) and len(ids) == 20
    waiting = [t for t in exp["trials"] if t["status"] == "PENDING"]
    assert all(t["pending_reason"] for t in waiting), waiting
    row = row_of(snapshot, "experiment", lambda w: w["name"] == EXPERIMENT)
    assert (row["origin"], row["submission_id"], row["live"]) == ("ray_job", sid, True)
    assert row["entrypoint"] == EXAMPLE and row["origin_label"].startswith(f"Ray job {sid}: ")
    groups = [g for g in snapshot["placement_groups"] if g["experiment"] == EXPERIMENT]
    assert groups, snapshot["placement_groups"]
    for g in groups:  # a trial's (by its actor), a pending trial's, or its job's
        assert g["owner_kind"] in ("trial", "pending_trial") or g["owner"].startswith(
            f"Ray job {sid}"), g  # fmt: skip
    assert not [g for g in snapshot["placement_groups"] if (g["owner"] or "").startswith("job ")]

    def finished() -> dict | None:
        snapshot = status(probed_cluster)
        exp = next(e for e in snapshot["experiments"] if e["name"] == EXPERIMENT)
        return snapshot if exp["status"] == "FINISHED" else None

    snapshot = wait_for(finished, 180, "the example FINISHED")
    exp = next(e for e in snapshot["experiments"] if e["name"] == EXPERIMENT)
    assert [t["status"] for t in exp["trials"]] == ["TERMINATED"] * 20
    row = row_of(snapshot, "experiment", lambda w: w["name"] == EXPERIMENT)
    assert (row["status"], row["live"], row["submission_id"]) == ("FINISHED", False, sid)


SLEEPY = "import time\nimport ray\nray.init()\nwhile True:\n    time.sleep(1)\n"


def test_a_job_stopped_with_ray_job_stop_is_shown_ended_within_seconds(probed_cluster, tmp_path):
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    sid = submit_job(probed_cluster, "python sleepy.py", cwd=tmp_path)

    def live() -> dict | None:
        row = row_of(status(probed_cluster), "job", lambda w: w["submission_id"] == sid)
        return row if row is not None and row["live"] and row["job_id"] else None

    row = wait_for(live, 120, "the sleeping job connected and RUNNING")
    assert (row["status"], row["origin"]) == ("RUNNING", "ray_job")
    assert row["origin_label"] == f"Ray job {sid}: python sleepy.py"
    stop = [RAY_CLI, "job", "stop", "--address", probed_cluster.dashboard, sid]
    subprocess.run(stop, capture_output=True, timeout=120, check=True)
    stopped_at = time.monotonic()

    def ended() -> dict | None:
        row = row_of(status(probed_cluster), "job", lambda w: w["submission_id"] == sid)
        return row if row is not None and row["status"] == "ENDED" else None

    row = wait_for(ended, 10, "the stopped job shown ended")
    assert time.monotonic() - stopped_at < 10
    assert (row["how_ended"], row["live"]) == ("stopped", False)
