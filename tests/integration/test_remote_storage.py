"""Remote storage read through pyarrow against a real S3 protocol server (moto on
loopback): an experiment written to a bucket is shown by ``status`` and judged by
``check --teardown`` as raytop reads a local folder; unreachable storage is never "safe"."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import run_raytop

pytest.importorskip("moto")
pyarrow_fs = pytest.importorskip("pyarrow.fs")

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "raytop", "AWS_SECRET_ACCESS_KEY": "raytop",
               "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
RUN = "sweep-t1"  # the Train run of trial t1 of experiment "sweep"
CHECKPOINT = "checkpoint_2026-12-02_10-00-00.000000"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on loopback; yields the URI query naming its endpoint."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.2)
    yield f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    server.terminate()
    server.wait(timeout=10)


def put(fs, path: str, data: bytes) -> None:
    with fs.open_output_stream(path) as out:
        out.write(data)


@pytest.fixture
def experiment(s3, monkeypatch):
    """``s3://<bucket>/sweep``: Tune's state (trial t1 RUNNING, t2 TERMINATED) and t1's Train
    run with one committed checkpoint, as Ray writes them."""
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    bucket = f"raytop-{time.time_ns()}"
    fs, _ = pyarrow_fs.FileSystem.from_uri(f"s3://{bucket}?{s3}&allow_bucket_creation=true")
    fs.create_dir(bucket)
    trials = [[json.dumps({"trial_id": t, "status": status, "config": {"lr": 0.1}}),
               json.dumps({"num_failures": 0, "last_result": {"training_iteration": it}})]
              for t, status, it in (("t1", "RUNNING", 3), ("t2", "TERMINATED", 5))]  # fmt: skip
    put(fs, f"{bucket}/sweep/tuner.pkl", b"pickle")
    put(fs, f"{bucket}/sweep/experiment_state-2026-12-02_10-00-00.json",
        json.dumps({"trial_data": trials}).encode())  # fmt: skip
    snapshot = {"checkpoint_results": [{"checkpoint_dir_name": CHECKPOINT}],
                "latest_checkpoint_result": {"checkpoint_dir_name": CHECKPOINT,
                                             "metrics": {"epoch": 2}}}  # fmt: skip
    run = f"{bucket}/sweep/train_runs/{RUN}"
    put(fs, f"{run}/checkpoint_manager_snapshot.json", json.dumps(snapshot).encode())
    put(fs, f"{run}/{CHECKPOINT}/model.pt", b"x" * 100)
    return fs, f"s3://{bucket}/sweep?{s3}", run


def test_status_reads_an_experiment_on_s3(experiment):
    _, uri, _ = experiment
    result = run_raytop("status", "--json", "--experiment", uri)
    assert result.returncode == 0, result.stderr
    (exp,) = json.loads(result.stdout)["experiments"]
    assert exp["name"] == "sweep" and not exp["warnings"]
    assert [(t["trial_id"], t["status"], t["iterations"]) for t in exp["trials"]] == [
        ("t1", "RUNNING", 3), ("t2", "TERMINATED", 5)
    ]  # fmt: skip


def test_teardown_check_on_s3_names_a_missing_checkpoint(experiment):
    fs, uri, run = experiment
    safe = run_raytop("check", "--teardown", "--experiment", uri)
    assert safe.returncode == 0, safe.stdout + safe.stderr
    fs.delete_dir(f"{run}/{CHECKPOINT}")
    unsafe = run_raytop("check", "--teardown", "--experiment", uri)
    assert unsafe.returncode == 14
    assert f"its latest checkpoint {CHECKPOINT} is missing on storage" in unsafe.stdout


def test_unreachable_storage_is_never_safe_to_tear_down(s3, monkeypatch):
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    uri = f"s3://nowhere/sweep?endpoint_override=127.0.0.1:{free_port()}&scheme=http"
    result = run_raytop("check", "--teardown", "--experiment", uri)
    assert result.returncode == 14
    assert "unreachable" in result.stdout and "Traceback" not in result.stderr
