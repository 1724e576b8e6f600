"""History with no cluster (issue 11): a real sweep on a private embedded cluster, then the
cluster stopped, then ``raytop status --json --storage PATH`` (and the TUI on the same
collector) must reproduce the experiment from storage alone, and leave every byte, size
and mtime under the experiment folder as it was, adding no file.

Prints its figures as ``FIGURE name=value`` lines (``pytest -rP`` shows them)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, own_ray_tmpdir, run_raytop, status_json

pytestmark = pytest.mark.ray


def figure(name: str, value) -> None:
    print(f"FIGURE {name}={value}")


def tree(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: a file's sha256, size and mtime; a folder's mtime."""
    found: dict[str, tuple] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            path = Path(root, name)
            found[str(path.relative_to(folder)) + "/"] = ("dir", path.stat().st_mtime_ns)
        for name in files:
            path = Path(root, name)
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path.relative_to(folder))] = (digest, info.st_size, info.st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    """A 2-trial torch sweep (2 epochs, no pacing, one rank) run to the end on a private embedded
    cluster (its own RAYTOP_HOME), then the cluster stopped: (results folder, the
    experiment, ``status --json`` while the cluster was up)."""
    from raytop.launch import cluster
    from raytop.launch.spec import ClusterSection

    base = tmp_path_factory.mktemp("history")
    home = base / "home"
    home.mkdir()
    text = (EXAMPLES / "torch_sweep.toml").read_text()
    # One rank a Train run: what is read from storage is each run's checkpoints and each
    # trial's results, whatever the world size (a rank is a Python process importing Train
    # and torch, ~4.5 CPU-s of the 2 cores the suite shares).
    for old, new in {"hidden = { grid = [16, 32] }": "hidden = 16", "epochs = 8": "epochs = 2",
                     "epoch_seconds = 4 ": "epoch_seconds = 0 ",
                     "num_workers = 2": "num_workers = 1"}.items():  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    spec = base / "torch_sweep.toml"
    spec.write_text(text)
    (base / "torch_sweep_loop.py").write_text((EXAMPLES / "torch_sweep_loop.py").read_text())
    experiment = base / "results" / "torch_sweep"
    shared_home = os.environ["RAYTOP_HOME"]
    os.environ["RAYTOP_HOME"] = str(home)
    try:
        started = time.monotonic()
        with own_ray_tmpdir("history"):
            target = cluster.start_embedded(ClusterSection(num_cpus=4))  # both trials at once
            try:
                run = run_raytop("run", str(spec), "--no-tui", "--address", target.address,
                                 timeout=300)  # fmt: skip
                assert run.returncode == 0, run.stdout + run.stderr
                figure("history_sweep_s", f"{time.monotonic() - started:.1f}")
                live = status_json(target.address, experiment)
            finally:
                assert cluster.stop_embedded()
        yield base / "results", experiment, live
    finally:
        os.environ["RAYTOP_HOME"] = shared_home


def _checkpoints(experiment: dict) -> dict[str, list[str]]:
    return {
        r["trial_id"]: sorted(c["dir_name"] for c in r["checkpoints"] if c["state"] == "committed")
        for r in experiment["runs"]
    }


def test_status_storage_after_the_cluster_is_gone_reproduces_it_and_changes_nothing(
    finished_sweep,
) -> None:
    results, experiment, live = finished_sweep
    (before_exp,) = live["experiments"]
    assert before_exp["status"] == "FINISHED" and len(before_exp["trials"]) == 2
    before = tree(experiment)

    started = time.monotonic()
    shown = run_raytop("status", "--json", "--storage", str(results), timeout=60)
    figure("history_status_s", f"{time.monotonic() - started:.2f}")
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr
    history = json.loads(shown.stdout)
    cluster = history["cluster"]
    assert cluster["connected"] is False and cluster["history_only"] is True
    assert cluster["error"].startswith("no cluster: history from storage")
    assert not any(f["kind"] == "cluster_unreachable" for f in history["findings"])

    (exp,) = history["experiments"]
    assert exp["status"] == "FINISHED" and exp["path"] == str(experiment.resolve())

    def trials(e):
        return {t["trial_id"]: (t["status"], t["metrics"]["loss"], t["iterations"])
                for t in e["trials"]}  # fmt: skip

    assert trials(exp) == trials(before_exp)
    for t in exp["trials"]:
        assert t["metric_history"][-1] == t["metrics"]["loss"]
    # The Train runs: from storage only, with the same committed checkpoints.
    assert {r["from_storage"] for r in exp["runs"]} == {True}
    assert all(r["workers"] == [] for r in exp["runs"])
    assert _checkpoints(exp) == _checkpoints(before_exp)
    assert all(len(names) == 2 for names in _checkpoints(exp).values())  # epochs = 2

    # Plain text, too: one line for the cluster, no DISCONNECTED.
    text = run_raytop("status", "--storage", str(results), timeout=60)
    assert text.returncode == 0 and text.stdout.startswith("no cluster: history from storage")

    assert tree(experiment) == before, "raytop changed, added or removed a file under storage"


async def test_the_tui_on_storage_alone_shows_the_runs_from_storage(finished_sweep) -> None:
    """The TUI's own collector (watching, as ``raytop --storage PATH`` builds it), no
    cluster: the overview lists the trials, Enter opens a trial's run "from storage";
    storage is left as it was."""
    from raytop.faces.command_line import collector_for
    from raytop.tui.app import RaytopApp
    from raytop.tui.screens.run import FROM_STORAGE_NOTE, RunScreen
    from raytop.tui.widgets.trial_table import TrialTable

    results, experiment, live = finished_sweep
    before = tree(experiment)
    collector = collector_for(None, [], watch=True, storage=[str(results)])
    app = RaytopApp(collector, refresh_s=0.25, read_only=True)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            table = app.screen.query_one(TrialTable)
            for _ in range(200):
                if table.row_count == 2:
                    break
                await pilot.pause(0.05)
            assert table.row_count == 2
            assert "history from storage" in str(app.screen.query_one("#cluster").visual)
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert isinstance(app.screen, RunScreen)
            assert app.screen.run is not None and app.screen.run.from_storage
            assert FROM_STORAGE_NOTE in str(app.screen.query_one("#run-notes").visual)
    finally:
        collector.close()
    assert tree(experiment) == before
