"""End to end, as a user meets it: ``raytop run`` of the bundled torch sweep in a real
terminal (tmux), per-rank report counts growing on screen, Enter down to a rank, ``q``
leaves the run going, and a bare ``raytop`` re-attaches; then the sweep's driver is killed
(``kill -9``) mid-run and ``raytop resume --yes`` finishes every trial, each Train run from
its latest checkpoint, raytop deleting nothing (only the checkpoints Train itself retires
go); a stopped experiment resumed from the TUI's Resume screen, after its preview and a
confirmation.

The crash and resume are done to the bundled sweep itself, not to a run of their own: a
torch sweep costs ~100 CPU-s of start-ups on the 2 cores the suite shares, and this one
already has two trials mid-run, with checkpoints, once re-attached."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import (
    experiment_status,
    kill_driver,
    launch_run,
    run_raytop,
    status_json,
    wait_for,
)
from tests.tmux import Pane

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


LAST_EPOCH = 7  # the bundled sweep's epochs = 8
RANK_COUNT = re.compile(r"\br(\d+) +(\d+)\b")


def rank_counts(screen: str) -> dict[int, int]:
    """Rank → report count, as the overview's rank strip shows them (``r0 3 5s`` compact,
    or ``r0  3  …`` a line per rank)."""
    return {int(rank): int(count) for rank, count in RANK_COUNT.findall(screen)}


def running_pid(pid: int) -> bool:
    """Whether ``pid`` runs (an ended process nobody reaped, a zombie, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_torch_sweep_counts_grow_live_drill_to_a_rank_quit_reattach_crash_and_resume(
    ray_cluster, example_copy
):
    """The bundled example as it ships (paced epochs): the overview's per-rank report counts
    grow before the first trial ends, Enter drills trial → Train run → rank, ``q`` leaves the
    run going, a bare ``raytop`` re-attaches to it. Then its driver is killed with SIGKILL
    while a trial is mid-run with a checkpoint committed: the experiment is INTERRUPTED,
    ``raytop resume --yes`` runs it to completion, each unfinished Train run continuing from
    its latest checkpoint, no file but the checkpoints Train itself retires (``num_to_keep``)
    is gone, and no finding at all on the finished sweep (this is the bundled torch
    example's run-to-completion test too)."""
    spec = example_copy("torch_sweep.toml", "torch_sweep_loop.py")
    experiment = spec.parent / "results" / "torch_sweep"
    raytop = [sys.executable, "-m", "raytop"]
    pane = Pane([*raytop, "run", str(spec), "--address", ray_cluster.address], size=(160, 48))
    try:
        first = pane.wait_for(
            lambda s: len(rank_counts(s)) == 2 and min(rank_counts(s).values()) >= 1,
            180, "both ranks' report counts on the overview",
        )  # fmt: skip
        before = rank_counts(first)
        later = pane.wait_for(
            lambda s: len(rank_counts(s)) == 2
            and all(rank_counts(s)[r] > n for r, n in before.items()),
            60, "the counts to grow",
        )  # fmt: skip
        assert "TERMINATED" not in later, "a trial ended before the counts were seen growing"
        assert ray_cluster.address in later

        pane.keys("Enter")  # the highlighted trial → its Train run, rank by rank
        pane.wait_for(lambda s: "world size 2" in s, 20, "the Run screen")
        pane.keys("Enter")  # the rank under the cursor → the Rank screen
        rank = pane.wait_for(lambda s: "heartbeat" in s and "rank 0" in s, 20, "the Rank screen")
        assert "reports" in rank
        pane.keys("q")
        screen = pane.wait_for(lambda s: "EXITED=" in s, 20, "raytop to exit")
        assert "EXITED=0" in screen
        assert "the run keeps going" in screen
    finally:
        pane.close()

    try:
        # The driver survived the TUI: the run goes on, and a bare raytop re-attaches to it.
        quit_at = _report_counts(ray_cluster, experiment)
        wait_for(
            lambda: any(
                n > quit_at.get(run_rank, 0)
                for run_rank, n in _report_counts(ray_cluster, experiment).items()
            ),
            60, "reports after the TUI quit",
        )  # fmt: skip
        attach = Pane([*raytop, "--address", ray_cluster.address], size=(160, 48))
        try:
            screen = attach.wait_for(
                lambda s: "torch_sweep" in s and "RUNNING" in s and len(rank_counts(s)) == 2,
                60, "the re-attached overview",
            )  # fmt: skip
            attach.keys("q")
            attach.wait_for(lambda s: "EXITED=0" in s, 20, "raytop to exit")
        finally:
            attach.close()
        _crash_and_resume(ray_cluster.address, experiment)
    finally:
        if experiment.is_dir() and (
            experiment_status(ray_cluster.address, experiment)["status"] == "RUNNING"
        ):
            run_raytop("stop", str(experiment), "--yes")  # a failed test's run (nothing deleted)


def _crash_and_resume(address: str, experiment: Path) -> None:
    """SIGKILL the sweep's driver while a trial is mid-run with a checkpoint, then
    ``raytop resume --yes`` it to completion (the test above)."""
    running = run_raytop("check", "--teardown", "--experiment", str(experiment))
    assert running.returncode == 14 and "the Tune driver is running" in running.stdout

    def mid_run() -> bool:
        trials = experiment_status(address, experiment)["trials"]
        busy = {t["trial_id"] for t in trials if t["status"] == "RUNNING"}
        return any(trial in busy for trial in committed_epochs(experiment))

    wait_for(mid_run, 60, "a running trial with a committed checkpoint")
    driver = json.loads((experiment / ".raytop" / "driver.json").read_text())["pid"]
    kill_driver(experiment)
    wait_for(lambda: not running_pid(driver), 30, "the killed driver to end")
    time.sleep(5)  # its trials and Train workers go down with it (owner death)
    crashed = experiment_status(address, experiment)
    assert crashed["status"] == "INTERRUPTED"
    # What each Train run had committed when its driver died (read now: the workers may
    # commit one more as they go down), and which trials were left to finish.
    latest = committed_epochs(experiment)
    unfinished = {t["trial_id"] for t in crashed["trials"] if t["status"] != "TERMINATED"}
    mid = {trial: epoch for trial, epoch in latest.items() if trial in unfinished}
    assert min(mid.values(), default=LAST_EPOCH) < LAST_EPOCH, (
        f"no unfinished trial had a checkpoint before its last epoch: {latest}, {crashed['trials']}"
    )
    before = files(experiment)

    resumed = run_raytop("resume", str(experiment), "--yes", "--no-tui", "--address", address,
                         timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.count("resume from checkpoint_") == len(mid), resumed.stdout

    # The bundled example ran to completion: every trial TERMINATED after its 8 epochs,
    # each unfinished Train run went on from its latest checkpoint (the epoch did not go
    # back to 0), and no finding at all on the healthy sweep.
    done = experiment_status(address, experiment)
    assert done["status"] == "FINISHED", done["status"]
    assert [(t["status"], t["metrics"]["epoch"]) for t in done["trials"]] == [
        ("TERMINATED", LAST_EPOCH)
    ] * 4  # fmt: skip
    for trial in done["trials"]:
        # A run whose last epoch was committed as its driver died had nothing left to do:
        # its last result is the one from before the crash.
        if trial["trial_id"] in unfinished and mid.get(trial["trial_id"]) != LAST_EPOCH:
            assert trial["metrics"]["start_epoch"] == mid.get(trial["trial_id"], -1) + 1
    assert status_json(address, experiment)["findings"] == []
    safe = run_raytop("check", "--teardown", "--experiment", str(experiment))
    assert safe.returncode == 0, safe.stdout
    retired_only(before - files(experiment), experiment)


def committed_epochs(experiment: Path) -> dict[str, int]:
    """Trial id → the epoch of its Train run's latest committed checkpoint (runs with none
    yet, or whose snapshot is being rewritten, are left out)."""
    found = {}
    for snapshot in experiment.glob("train_runs/*/checkpoint_manager_snapshot.json"):
        try:
            latest = json.loads(snapshot.read_text())["latest_checkpoint_result"]
            found[snapshot.parent.name.rsplit("-", 1)[-1]] = int(latest["metrics"]["epoch"])
        except (OSError, ValueError, KeyError, TypeError):
            # Rewritten in place (docs/RAY_FACTS.md#checkpoint-snapshot), or no checkpoint yet.
            continue
    return found


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def retired_only(missing: set[str], experiment: Path) -> None:
    """Every file gone since the crash was in a checkpoint folder older than each one its
    Train run still keeps: the bundled sweep keeps 2 (``num_to_keep``), and Train retires
    the older ones as new ones commit. Nothing else may go: not a trial's files, not the
    Tune state, not a run's latest checkpoints."""
    for path in sorted(missing):
        parts = path.split("/")
        assert len(parts) > 3 and parts[0] == "train_runs" and parts[2].startswith(
            "checkpoint_"
        ), f"a file deleted by the resume: {path}"  # fmt: skip
        kept = sorted(p.name for p in (experiment / "train_runs" / parts[1]).glob("checkpoint_*"))
        assert kept and parts[2] < kept[0], f"a kept checkpoint's file deleted: {path}, {kept}"


def _report_counts(cluster, experiment) -> dict[tuple[str, int], int]:
    """(Train run, rank) → reports entered, for the experiment, from ``status --json``."""
    runs = experiment_status(cluster.address, experiment)["runs"]
    return {(r["run_id"], w["rank"]): w["reports_entered"] for r in runs for w in r["workers"]}


def test_resume_screen_previews_then_resumes_a_stopped_experiment(ray_cluster, example_copy):
    spec = example_copy("scalar.toml", "scalar_objective.py",
                        edit={"steps = 3": "steps = 100", "[1, 2, 3, 4]": "[1, 2]"})  # fmt: skip
    experiment = spec.parent / "results" / "scalar"
    watcher = launch_run(spec, ray_cluster.address)

    def running():
        trials = experiment_status(ray_cluster.address, experiment)["trials"]
        return experiment.is_dir() and any(t["iterations"] > 2 for t in trials)

    wait_for(lambda: experiment.is_dir() and running(), 120, "the trials to run")
    assert run_raytop("stop", str(experiment), "--yes").returncode == 0
    watcher.wait(timeout=60)
    assert experiment_status(ray_cluster.address, experiment)["status"] == "INTERRUPTED"

    pane = Pane([sys.executable, "-m", "raytop", "--address", ray_cluster.address])
    try:
        pane.wait_for(lambda s: "INTERRUPTED" in s, 60, "the stopped experiment")
        pane.keys("u")
        screen = pane.wait_for(lambda s: "resumable" in s and "start from scratch" in s, 60,
                               "the experiment list and its preview")  # fmt: skip
        assert "errored trials" in screen
        pane.keys("a")
        # The confirmation dialog itself: its title names the experiment, its keys say what
        # y does and that n (cancel) is the default.
        pane.wait_for(lambda s: "resume scalar" in s and "y resume" in s
                      and "n cancel (default)" in s, 20, "the confirmation")  # fmt: skip
        pane.keys("y")
        pane.wait_for(lambda s: "resumed 'scalar'" in s, 60, "the resume to be launched")
        done = wait_for(
            lambda: (e := experiment_status(ray_cluster.address, experiment))["status"]
            == "FINISHED" and e,
            180, "the resumed experiment to finish",
        )  # fmt: skip
        assert [t["status"] for t in done["trials"]] == ["TERMINATED", "TERMINATED"]
        assert all(t["iterations"] == 100 for t in done["trials"])
    finally:
        pane.close()
        run_raytop("stop", str(experiment), "--yes")
