"""Native stacks on a real cluster: ``status --stacks --native --json`` makes every rank of
a running torch trial run py-spy on itself, and each answers a native stack whose train
loop thread shows the loop's own frame over the C frames under it; the answers are saved
as a capture under the experiment's ``.raytop/captures`` by raytop's process. The same CPU
run answers ``status --flight-recorder`` with each rank's reason for having no Flight
Recorder pipe (gloo), and no dump folder appears; then a rank frozen (SIGSTOP) makes
``check`` exit 11 naming it, and thawed the run is healthy again.

(py-spy missing from the workers is one line, tested without a cluster:
tests/unit/test_native_stack.py.)"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from raytop.diagnose import check
from raytop.probe.flight_recorder import NOT_ENABLED
from tests.conftest import (
    check_in_process,
    kill_driver,
    launch_run,
    run_output,
    run_raytop,
    status_json,
    wait_for,
)

pytestmark = pytest.mark.ray


def test_every_rank_answers_its_native_stack_and_the_capture_is_saved(ray_cluster, example_copy):
    spec = example_copy(
        "stall.toml", "stall_loop.py",
        edit={"skip_rank = 1": "skip_rank = -1", "epochs = 5": "epochs = 400"},
    )  # fmt: skip
    experiment = spec.parent / "results" / "stall"
    watcher = launch_run(spec, ray_cluster.address)
    try:
        wait_for(experiment.is_dir, 120, "the experiment folder")

        def both_ranks_report():
            runs = status_json(ray_cluster.address, experiment)["experiments"][0]["runs"]
            workers = runs[0]["workers"] if runs else []
            return len(workers) == 2 and all(w["reports_exited"] >= 2 for w in workers)

        wait_for(both_ranks_report, 180, f"two ranks reporting\n{run_output(spec, experiment)}")
        started = time.time()
        result = run_raytop("status", "--json", "--stacks", "--native", "--address",
                            ray_cluster.address, "--experiment", str(experiment),
                            timeout=120)  # fmt: skip
        assert result.returncode == 0, result.stderr
        snapshot = json.loads(result.stdout)
        (run,) = snapshot["experiments"][0]["runs"]
        workers = {w["rank"]: w for w in run["workers"]}
        assert set(workers) == {0, 1}
        for rank, worker in workers.items():
            native = worker["native_stack"]
            assert native, f"rank {rank} sent no native stack: {worker}"
            assert native.startswith(f"Process {worker['pid']}:"), native[:500]
            train_thread = native.split("\nThread ", 2)[1]  # the train loop's comes first
            assert "train_loop (stall_loop.py:" in train_thread, native[:3000]
            assert ".so" in train_thread  # native frames under Python's (libc, libpython)
            assert "stall_loop.py" in worker["stack"]  # the Python stack came too

        capture = snapshot["stacks_capture"]
        (folder,) = capture["saved_to"]
        assert folder.startswith(str(experiment / ".raytop" / "captures") + "/")
        assert capture["note"] == f"stacks saved to {folder}"
        assert f"raytop: stacks saved to {folder}" in result.stderr
        index = json.loads((experiment / ".raytop" / "captures" / folder.rsplit("/", 1)[1]
                            / "index.json").read_text())  # fmt: skip
        assert index["native"] is True and index["taken_at"] >= started - 60
        assert sorted((e["rank"], e["native"]) for e in index["ranks"]) == [(0, True), (1, True)]
        for entry in index["ranks"]:
            text = (experiment / ".raytop" / "captures" / folder.rsplit("/", 1)[1]
                    / entry["file"]).read_text()  # fmt: skip
            assert "== native stack (py-spy) ==" in text and "stall_loop.py" in text

        # The same CPU run has no Flight Recorder (gloo): each rank says so, nothing dumps.
        result = run_raytop("status", "--json", "--flight-recorder", "--address",
                            ray_cluster.address, "--experiment", str(experiment),
                            timeout=120)  # fmt: skip
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)["flight_recorder"]
        assert report["note"] == (
            "flight recorder: 2 of 2 ranks answered; 0 dump(s) requested through the ranks' pipes"
        )
        (answered,) = report["runs"]
        assert answered["folder"] is None and answered["groups"] == []
        assert [a["answer"] for a in answered["answers"]] == [NOT_ENABLED, NOT_ENABLED]
        assert not (experiment / ".raytop" / "flight_recorder").exists()

        # Exit 11 on the same run: rank 1's process frozen (SIGSTOP: alive to Ray, its
        # heartbeat gone) is a dead rank once past the 15 s bound, named by rank; the
        # stall threshold is raised so that rank 0 waiting for it is not a barrier stall
        # first (that outranks 11). Thawed, the run goes on.
        (run,) = status_json(ray_cluster.address, experiment)["experiments"][0]["runs"]
        frozen = next(w["pid"] for w in run["workers"] if w["rank"] == 1)
        args = ("--stall-after", "600", "--address", ray_cluster.address,
                "--experiment", str(experiment))  # fmt: skip
        os.kill(frozen, signal.SIGSTOP)
        try:
            code, text = wait_for(
                lambda: (c := check_in_process(*args))[0] == check.RANK_DEAD_OR_SILENT and c,
                90, "exit 11 for the frozen rank",
            )  # fmt: skip
            confirmed = run_raytop("check", *args)  # as a user's probe runs it
            assert confirmed.returncode == check.RANK_DEAD_OR_SILENT, confirmed.stdout
            (line,) = [x for x in confirmed.stdout.splitlines() if x.startswith("rank_dead")]
            assert line.endswith("its process is gone or frozen") and "rank 1" in line, line
        finally:
            os.kill(frozen, signal.SIGCONT)
        wait_for(lambda: check_in_process(*args)[0] == check.HEALTHY, 60,
                 "the thawed rank to be healthy again")  # fmt: skip
    finally:
        kill_driver(experiment)
        watcher.wait(timeout=60)
