"""The bounded reads seen from the command line: ``raytop plan`` and ``raytop resume``
given a FIFO, a device, a spec nested 20,000 deep or one with a byte-order mark answer
at once (exit 2, one ``raytop: error:`` line, no traceback) or read it. Each runs
``python -m raytop`` on this checkout's sources, under a timeout: a read that blocks
fails its test instead of hanging the suite. No Ray cluster: plans are on a NODES.toml."""

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
DEEP = "x = " + "[" * 20_000 + "]" * 20_000 + "\n"


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


def test_plan_of_a_fifo_spec(folder: Path):
    os.mkfifo(folder / "fifo.toml")
    line = one_error(folder, "plan", "fifo.toml", "--cluster", "nodes.toml")
    assert line == "fifo.toml: not a regular file (a FIFO): not read"


def test_plan_on_a_fifo_nodes_file(folder: Path):
    os.mkfifo(folder / "fifo.toml")
    line = one_error(folder, "plan", "spec.toml", "--cluster", "fifo.toml")
    assert line == "fifo.toml: not a regular file (a FIFO): not read"


def test_plan_of_dev_zero(folder: Path):
    line = one_error(folder, "plan", "/dev/zero", "--cluster", "nodes.toml")
    assert line == "/dev/zero: not a regular file (a character device): not read"


def test_run_of_a_fifo_spec(folder: Path):
    os.mkfifo(folder / "fifo.toml")
    line = one_error(folder, "run", "fifo.toml", "--address", "127.0.0.1:1")
    assert line == "fifo.toml: not a regular file (a FIFO): not read"


def test_plan_of_a_spec_nested_too_deep(folder: Path):
    (folder / "deep.toml").write_text(DEEP)
    line = one_error(folder, "plan", "deep.toml", "--cluster", "nodes.toml")
    assert line == (
        "deep.toml: nested too deep (more than 64 levels of tables, arrays and dotted keys): "
        "not parsed"
    )


def test_plan_of_a_spec_with_a_byte_order_mark(folder: Path):
    (folder / "bom.toml").write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    code, out, err, _ = raytop(folder, "plan", "bom.toml", "--cluster", "nodes.toml")
    assert (code, err) == (0, [])
    assert out[0] == "plan on nodes.toml:" and out[1].startswith("  FITS: 1 trial(s)")


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
