"""Experiment folders as Tune, Train and raytop's driver leave them, and ``raytop`` run
in-process on them with no cluster to find: for the teardown verdict's tests."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from raytop.cli import main
from raytop.faces.text import status_text
from raytop.pipeline.collect import SnapshotCollector
from raytop.rundir import train_run_name
from raytop.sources.checkpoints import SNAPSHOT_FILE

STATE = "experiment_state-2026-12-02_00-00-00.json"
CHECKPOINT = "checkpoint_000001"


def state(*trials: tuple[str, str], iterations: int = 1) -> str:
    """Tune's state as ``json.dumps`` writes it (a lone surrogate is a ``\\ud800`` escape)."""
    rows = [
        [json.dumps({"trial_id": t, "status": s, "config": {}}),
         json.dumps({"last_result": {"training_iteration": iterations}})]
        for t, s in trials
    ]  # fmt: skip
    return json.dumps({"trial_data": rows})


def folder(tmp_path: Path, name: str, *trials: tuple[str, str], **kw) -> Path:
    path = tmp_path / name
    path.mkdir()
    (path / STATE).write_text(state(*trials, **kw))
    return path


def committed_run(experiment: Path, trial_id: str) -> Path:
    """The trial's Train run, its latest checkpoint committed and present."""
    run = experiment / "train_runs" / train_run_name(experiment.name, trial_id)
    (run / CHECKPOINT).mkdir(parents=True)
    result = {"checkpoint_dir_name": CHECKPOINT, "metrics": {"epoch": 1}}
    snapshot = {"checkpoint_results": [result], "latest_checkpoint_result": result}
    (run / SNAPSHOT_FILE).write_text(json.dumps(snapshot))
    return run


def spec_copy(experiment: Path, kind: str = "torch") -> Path:
    """raytop's copy of the launched spec in the experiment's raytop dir (returned)."""
    raytop_dir = experiment / ".raytop"
    raytop_dir.mkdir(exist_ok=True)
    (raytop_dir / "spec.toml").write_text(f'[trainable]\nkind = "{kind}"\nentrypoint = "t:f"\n')
    return raytop_dir


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def driver_record(raytop_dir: Path, pid: int, create_time: float, **fields) -> None:
    record = {"pid": pid, "pid_create_time": create_time, "host": socket.gethostname(),
              "experiment_name": raytop_dir.parent.name,
              "experiment_path": str(raytop_dir.parent), **fields}  # fmt: skip
    (raytop_dir / "driver.json").write_text(json.dumps(record))


def no_cluster_cli(tmp_path: Path, monkeypatch):
    """``raytop ARGS`` in-process, with no cluster to find and a private RAYTOP_HOME;
    never an internal error nor a traceback."""
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "no-ray"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def run(*args: str):
        result = CliRunner().invoke(main, list(args))
        assert "internal error" not in result.output and "Traceback" not in result.output
        return result

    return run


def teardown_lines(cli, path: Path) -> tuple[int, list[str]]:
    result = cli("check", "--teardown", "--experiment", str(path))
    return result.exit_code, result.stdout.splitlines()


def shown(cli, path: Path) -> dict:
    """``status --json`` of the folder, which must be the folder given (and its text
    lines, built without a crash)."""
    collector = SnapshotCollector(None, experiments=[(str(path), None)])
    try:
        status_text(collector.collect())
    finally:
        collector.close()
    result = cli("status", "--json", "--experiment", str(path))
    (experiment,) = json.loads(result.stdout)["experiments"]
    assert experiment["path"] == str(path) and experiment["name"] == path.name
    return experiment
