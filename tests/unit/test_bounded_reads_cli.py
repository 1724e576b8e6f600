"""The bounded reads of ``raytop resume`` seen from the command line: each of the files
the preview reads (driver.json, the spec's copy, the spec driver.json names) a FIFO or
a device answers at once (exit 2, one ``raytop: error:`` line, no traceback), or the
resume goes on from the copy. Each runs ``python -m raytop`` on this checkout's sources,
under a timeout: a read that blocks fails its test instead of hanging the suite. ``plan``
and ``run`` given a FIFO, ``/dev/zero``, a spec 20,000 deep or one with a byte-order mark
are rows of the bad-input battery (tests/integration/test_bad_input_table.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
SPEC = """[experiment]
name = "exp"
storage_path = "store"
[trainable]
kind = "function"
entrypoint = "objective:objective"
"""
NODES = "[[nodes]]\nCPU = 4\n"


def raytop(tmp: Path, *argv: str) -> tuple[int, list[str], list[str], float]:
    """(exit code, stdout lines, stderr lines, seconds) of ``raytop *argv`` run in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAYTOP_DEBUG")}
    (tmp / "raytmp").mkdir(exist_ok=True)
    env.update(PYTHONPATH=str(SRC), RAYTOP_HOME=str(tmp / "home"), RAY_TMPDIR=str(tmp / "raytmp"))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "raytop", *argv], capture_output=True, text=True, timeout=20,
        env=env, cwd=tmp, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.monotonic() - started
    return result.returncode, result.stdout.splitlines(), result.stderr.splitlines(), seconds


def one_error(tmp: Path, *argv: str) -> str:
    """The one ``raytop: error:`` line of a command that must refuse at once (exit 2)."""
    code, _out, err, seconds = raytop(tmp, *argv)
    assert code == 2 and len(err) == 1 and err[0].startswith("raytop: error: "), (code, err)
    assert seconds < 5, f"took {seconds:.1f} s"
    return err[0].removeprefix("raytop: error: ")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "nodes.toml").write_text(NODES)
    (tmp_path / "objective.py").write_text("def objective(config):\n    return {}\n")
    return tmp_path


def interrupted(folder: Path) -> Path:
    """An experiment ``raytop run`` launched from ``folder/spec.toml``, its driver gone."""
    exp = folder / "store" / "exp"
    (exp / ".raytop").mkdir(parents=True)
    (exp / "tuner.pkl").write_bytes(b"x")
    trial = {"trial_id": "t1", "status": "ERROR", "config": {}}
    state = {"trial_data": [[json.dumps(trial), json.dumps({"last_result": {}})]]}
    (exp / "experiment_state-2026-12-02_00-00-00.json").write_text(json.dumps(state))
    info = {"pid": 999_999_999, "host": "elsewhere", "spec": str(folder / "spec.toml")}
    (exp / ".raytop" / "driver.json").write_text(json.dumps(info))
    (exp / ".raytop" / "exit.json").write_text("{}")
    (exp / ".raytop" / "spec.toml").write_text(SPEC)
    return exp


@pytest.mark.parametrize("planted", ["fifo", "zero"])
@pytest.mark.parametrize("rel", [".raytop/driver.json", ".raytop/spec.toml"])
def test_resume_with_a_raytop_file_that_is_not_a_file(folder: Path, rel: str, planted: str):
    exp = interrupted(folder)
    (exp / rel).unlink()
    os.mkfifo(exp / rel) if planted == "fifo" else (exp / rel).symlink_to("/dev/zero")
    kind = "a FIFO" if planted == "fifo" else "a character device"
    line = one_error(folder, "resume", str(exp))
    assert line.endswith(f"{exp / rel}: not a regular file ({kind}): not read")


@pytest.mark.parametrize("planted", ["fifo", "zero"])
def test_resume_with_the_launched_spec_not_a_file(folder: Path, planted: str):
    """driver.json's ``spec`` names a FIFO or a device: without the saved copy that is
    the spec to read, and it is refused in one line."""
    exp = interrupted(folder)
    (exp / ".raytop" / "spec.toml").unlink()
    named = folder / "named.toml"
    os.mkfifo(named) if planted == "fifo" else named.symlink_to("/dev/zero")
    info = {"pid": 999_999_999, "host": "elsewhere", "spec": str(named)}
    (exp / ".raytop" / "driver.json").write_text(json.dumps(info))
    kind = "a FIFO" if planted == "fifo" else "a character device"
    assert one_error(folder, "resume", str(exp)) == (
        f"the spec this experiment was launched with: {named}: not a regular file ({kind}): "
        "not read"
    )
