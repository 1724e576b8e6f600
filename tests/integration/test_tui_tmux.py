"""End to end, as a user meets it: ``raytop run`` of the bundled torch sweep in a real
terminal (tmux), per-rank report counts growing on screen, Enter down to a rank, ``q``
leaves the run going, and a bare ``raytop`` re-attaches; a stopped experiment resumed from
the TUI's Resume screen, after its preview and a confirmation."""

from __future__ import annotations

import json
import re
import shutil
import sys

import psutil
import pytest

from tests.conftest import experiment_status, launch_run, run_raytop, status_json, wait_for
from tests.tmux import Pane

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


RANK_COUNT = re.compile(r"\br(\d+) +(\d+)\b")


def rank_counts(screen: str) -> dict[int, int]:
    """Rank → report count, as the overview's rank strip shows them (``r0 3 5s`` compact,
    or ``r0  3  …`` a line per rank)."""
    return {int(rank): int(count) for rank, count in RANK_COUNT.findall(screen)}


def running(pid: int) -> bool:
    """Whether ``pid`` runs (an ended process nobody reaped, a zombie, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_torch_sweep_counts_grow_live_drill_to_a_rank_quit_and_reattach(ray_cluster, example_copy):
    """The bundled example as it ships (paced epochs): the overview's per-rank report counts
    grow before the first trial ends, Enter drills trial → Train run → rank, ``q`` leaves the
    run going, a bare ``raytop`` re-attaches to it, and the sweep runs to completion with
    no finding (this is the bundled torch example's run-to-completion test too)."""
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
        # The bundled example runs to completion (the same sweep the overview showed):
        # every trial TERMINATED after its 8 epochs, and no finding at all on a healthy run.
        # Waited for by its driver's pid (no collection a poll): the sweep is mostly sleep.
        driver = json.loads((experiment / ".raytop" / "driver.json").read_text())["pid"]
        wait_for(lambda: not running(driver), 300, "the sweep's driver to end")
        done = experiment_status(ray_cluster.address, experiment)
        assert done["status"] == "FINISHED", done["status"]
        assert [(t["status"], t["iterations"], t["metrics"]["epoch"]) for t in done["trials"]] \
            == [("TERMINATED", 8, 7)] * 4  # fmt: skip
        assert status_json(ray_cluster.address, experiment)["findings"] == []
    finally:
        if experiment.is_dir() and (
            experiment_status(ray_cluster.address, experiment)["status"] == "RUNNING"
        ):
            run_raytop("stop", str(experiment), "--yes")  # a failed test's run (nothing deleted)


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
