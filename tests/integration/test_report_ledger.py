"""The report ledger on a real cluster: a skipped report is named within seconds (whichever
rank skipped), the waiting rank's stack shows it inside report, and healthy runs raise no
alarm. A killed ledger coming back with the counts intact is test_faults.py's R1 test (one
run for the view, the counts and the checks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import (
    check_in_process,
    kill_driver,
    launch_run,
    run_raytop,
    wait_for,
)
from tests.tmux import Pane

pytestmark = pytest.mark.ray

STALL_AFTER_S = 5
ALARMS = {"barrier_stall", "report_mispaired", "rank_dead", "rank_silent"}


def test_a_skipped_report_is_named_within_seconds_whichever_rank_skipped(ray_cluster, example_copy):
    """The example's stall, once with rank 1 skipping and once with rank 0 (Ray itself says
    nothing then): one experiment, a trial each, side by side (one Tune driver: a launched
    run costs ~40 CPU-s on the 2 cores the suite shares). ``check`` names each skipping
    rank within ``STALL_AFTER_S`` + 5 s of its peer entering the report that waits."""
    spec = example_copy("stall.toml", "stall_loop.py",
                        edit={"skip_rank = 1 ": "skip_rank = { grid = [1, 0] } "})  # fmt: skip
    watcher = launch_run(spec, ray_cluster.address)
    experiment = spec.parent / "results" / "stall"
    args = ("--stall-after", str(STALL_AFTER_S), "--address", ray_cluster.address,
            "--experiment", str(experiment))  # fmt: skip
    named = {rank: f"rank {rank} is 1 report behind" for rank in (1, 0)}
    try:
        wait_for(experiment.is_dir, 120, "the experiment folder")
        # Poll ``check``'s verdict (in this process) until it names both skipping ranks,
        # noting when each was first named; then the command itself, as a user runs it,
        # must say the same.
        detected_at: dict[int, float] = {}
        deadline = time.monotonic() + 180
        while len(detected_at) < 2:
            code, text = check_in_process(*args)
            for rank, line in named.items():
                if code == 10 and line in text:
                    detected_at.setdefault(rank, time.time())
            assert time.monotonic() < deadline, f"check never named both ranks: {code} {text}"
            time.sleep(0.5)
        result = run_raytop("check", *args)
        assert result.returncode == 10, (result.returncode, result.stdout)
        for skip_rank in (1, 0):
            assert named[skip_rank] in result.stdout
            assert f"rank {1 - skip_rank} has waited in report 5" in result.stdout

        status = run_raytop("status", "--json", "--stacks", "--address", ray_cluster.address,
                            "--experiment", str(experiment),
                            "--stall-after", str(STALL_AFTER_S))  # fmt: skip
        snapshot = json.loads(status.stdout)
        (shown,) = snapshot["experiments"]
        skipping = {t["trial_id"]: t["config"]["skip_rank"] for t in shown["trials"]}
        stalls = {f["run_id"]: f for f in snapshot["findings"] if f["kind"] == "barrier_stall"}
        assert len(shown["runs"]) == len(stalls) == 2, (shown["runs"], stalls)
        for run in shown["runs"]:
            skip_rank = skipping[run["trial_id"]]
            waiting_rank = 1 - skip_rank
            stall = stalls[run["run_id"]]
            assert stall["evidence"]["missing_ranks"] == [skip_rank]
            assert stall["evidence"]["waiting_ranks"] == [waiting_rank]
            # named within stall-after + 5 s of the moment the waiting rank entered report 5
            waited = detected_at[skip_rank] - stall["evidence"]["waiting_since"]
            assert waited <= STALL_AFTER_S + 5, (skip_rank, waited)
            workers = {w["rank"]: w for w in run["workers"]}
            assert (
                workers[waiting_rank]["reports_entered"],
                workers[waiting_rank]["reports_exited"],
            ) == (5, 4)
            assert workers[skip_rank]["reports_entered"] == 4
            stack = workers[waiting_rank]["stack"]
            assert "stall_loop.py" in stack and "in report" in stack
    finally:
        kill_driver(experiment)
        watcher.wait(timeout=30)


def test_foreign_run_opts_in_with_the_env_var(ray_cluster, tmp_path):
    script = tmp_path / "plain_user.py"
    script.write_text(
        textwrap.dedent(f"""
        import time, ray, ray.train
        from ray.train.torch import TorchTrainer

        def loop(config):
            for i in range(3):
                time.sleep(0.3)
                ray.train.report({{"i": i}})

        ray.init(address="{ray_cluster.address}", logging_level="ERROR")
        TorchTrainer(loop, scaling_config=ray.train.ScalingConfig(num_workers=2),
                     run_config=ray.train.RunConfig(name="plain-user-run",
                                                    storage_path="{tmp_path}")).fit()
    """)
    )
    env = {**os.environ, "RAY_TRAIN_CALLBACKS": "raytop.probe.ReportProbe"}
    subprocess.run([sys.executable, str(script)], check=True, timeout=240, env=env,
                   capture_output=True)  # fmt: skip
    snapshot = json.loads(run_raytop("status", "--json", "--address", ray_cluster.address).stdout)
    (run,) = [r for r in snapshot["runs"] if r["run_name"] == "plain-user-run"]
    assert [(w["rank"], w["reports_entered"], w["done"]) for w in run["workers"]] == [
        (0, 3, True), (1, 3, True)
    ]  # fmt: skip
    if shutil.which("tmux") is None:
        return
    # The TUI's `n` screen, as a user meets it: the run outside raytop's experiments is
    # listed by its name.
    pane = Pane([sys.executable, "-m", "raytop", "--address", ray_cluster.address],
                size=(120, 36))  # fmt: skip
    try:
        pane.wait_for(lambda s: "all runs" in s, 60, "the overview offering n")
        pane.keys("n")
        listed = pane.wait_for(lambda s: "Train runs outside raytop's experiments" in s
                               and "plain-user-run" in s, 30, "the n screen")  # fmt: skip
        assert "runs on the cluster:" in listed
        pane.keys("q")
        pane.wait_for(lambda s: "EXITED=0" in s, 20, "raytop to exit")
    finally:
        pane.close()
