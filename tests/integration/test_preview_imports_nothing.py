"""Reading never executes or writes: previewing a resume, planning a spec, listing a storage
folder import none of the user's code and create no file or folder, whatever code sits in
the trainable module a folder's saved spec names (a folder on shared storage may hold
anyone's). Only an actual launch or resume runs preflight (import + storage probe).

No Ray cluster is needed: the experiment folder is fabricated on disk as Tune leaves it
(``tuner.pkl`` + ``experiment_state-*.json``) with raytop's ``.raytop`` bookkeeping of a
driver that has exited; the CLI runs in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from raytop.launch.control import ControlError, ExperimentControls, plan_resume, start_resume
from raytop.launch.preflight import preflight
from raytop.launch.spec import SpecError, load_spec
from raytop.rundir import RAYTOP_DIR_NAME

CLI_TIMEOUT_S = 120


class Folder:
    """A project (spec + trainable module that drops a marker when imported) and a stopped
    experiment of it under ``results/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.module = f"raytop_marker_mod_{uuid.uuid4().hex[:10]}"
        self.marker = root / "IMPORTED"
        (root / f"{self.module}.py").write_text(
            f"open({str(self.marker)!r}, 'w').close()\n\ndef train_func(config):\n    pass\n"
        )
        self.spec = root / "sweep.toml"
        self.spec.write_text(
            '[experiment]\nname = "sweep"\nstorage_path = "results"\n\n'
            f'[trainable]\nkind = "torch"\nentrypoint = "{self.module}:train_func"\n'
        )
        self.storage = root / "results"
        self.experiment = self.storage / "sweep"
        self.experiment.mkdir(parents=True)
        (self.experiment / "tuner.pkl").write_bytes(b"not read by a preview")
        trial = {"trial_id": "abcde_00000", "status": "RUNNING", "config": {}}
        state = {"trial_data": [[json.dumps(trial), json.dumps({"last_result": {}})]]}
        (self.experiment / "experiment_state-2026-12-03_04-00-00.json").write_text(
            json.dumps(state)
        )
        raytop_dir = self.experiment / RAYTOP_DIR_NAME
        raytop_dir.mkdir()
        (raytop_dir / "spec.toml").write_bytes(self.spec.read_bytes())
        info = {"pid": 999_999_999, "host": "elsewhere", "spec": str(self.spec),
                "experiment_name": "sweep", "experiment_path": str(self.experiment)}  # fmt: skip
        (raytop_dir / "driver.json").write_text(json.dumps(info))
        (raytop_dir / "exit.json").write_text(json.dumps({"code": 1, "error": "killed"}))

    def tree(self) -> set[str]:
        """Every path under the project (a new file or folder anywhere shows)."""
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*")}

    def cli(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "raytop", *args], capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=CLI_TIMEOUT_S, env=self.env(env), cwd=self.root,
        )  # fmt: skip

    def env(self, extra: dict | None = None) -> dict:
        env = {**os.environ, "RAYTOP_HOME": str(self.root / "home"), **(extra or {})}
        env.pop("RAY_ADDRESS", None)
        return env


@pytest.fixture
def folder(tmp_path: Path):
    made = Folder(tmp_path)
    yield made
    sys.modules.pop(made.module, None)


def assert_untouched(folder: Folder, before: set[str]) -> None:
    assert not folder.marker.exists(), "the trainable module was imported"
    assert folder.module not in sys.modules
    assert folder.tree() == before


# ----------------------------------------------------------------------------- the marker


def test_the_marker_shows_an_import(folder: Folder) -> None:
    """The positive control: preflight (an actual launch or resume) imports the module and
    the marker appears, so its absence below means something."""
    preflight(load_spec(folder.spec))
    assert folder.marker.exists()


# ----------------------------------------------------------------------------- CLI


def test_resume_preview_without_a_tty_imports_nothing(folder: Folder) -> None:
    before = folder.tree()
    done = folder.cli("resume", str(folder.experiment))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "abcde_00000" in done.stdout  # the preview was shown
    assert "pass --yes" in done.stderr and "Traceback" not in done.stderr
    assert_untouched(folder, before)


def test_resume_preview_answered_no_on_a_tty_imports_nothing(folder: Folder) -> None:
    before = folder.tree()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "raytop", "resume", str(folder.experiment)],
        stdin=slave, stdout=slave, stderr=slave, env=folder.env(), cwd=folder.root,
    )  # fmt: skip
    os.close(slave)
    seen, deadline = b"", time.monotonic() + CLI_TIMEOUT_S
    try:
        while b"resume as shown?" not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
        assert b"resume as shown?" in seen, seen.decode(errors="replace")
        os.write(master, b"n\n")
        assert proc.wait(timeout=CLI_TIMEOUT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    assert_untouched(folder, before)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--read-only", "resume", "{path}"), None),
        (("resume", "--read-only", "{path}"), None),
        (("resume", "{path}"), {"RAYTOP_READ_ONLY": "1"}),
    ],
    ids=["flag-before", "flag-after", "env"],
)
def test_resume_under_read_only_imports_nothing(folder: Folder, args, env) -> None:
    before = folder.tree()
    done = folder.cli(*(a.format(path=folder.experiment) for a in args), env=env)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert_untouched(folder, before)


def test_plan_imports_nothing_and_creates_no_storage(folder: Folder, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.toml"
    fresh.write_text(folder.spec.read_text().replace('"results"', '"not/there/yet"'))
    nodes = tmp_path / "NODES.toml"
    nodes.write_text("[[nodes]]\ncount = 2\nCPU = 8\n")
    before = folder.tree()
    for spec in (folder.spec, fresh):
        done = folder.cli("plan", str(spec), "--cluster", str(nodes))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "FITS" in done.stdout
    assert not (tmp_path / "not").exists()
    assert_untouched(folder, before)


def test_plan_refuses_a_bad_spec_in_one_line_without_importing(folder: Folder) -> None:
    bad = folder.root / "bad.toml"
    bad.write_text(folder.spec.read_text() + "\n[tune]\nnum_samples = 1_000_000_000\n")
    before = folder.tree()
    done = folder.cli("plan", str(bad), "--cluster", "NODES.toml")
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"raytop: error: {bad}: [tune] num_samples: ")
    assert len(done.stderr.strip().splitlines()) == 1
    assert_untouched(folder, before)


# ----------------------------------------------------------------------------- in process


def test_the_tuis_preview_path_imports_nothing(folder: Folder) -> None:
    before = folder.tree()
    controls = ExperimentControls()
    preview = controls.resume_preview(str(folder.experiment), "skip")
    assert [row.trial_id for row in preview.rows] == ["abcde_00000"]
    shown, spec = plan_resume(str(folder.experiment), "resume")
    assert spec.trainable.module == folder.module
    listed = controls.experiments_under(str(folder.storage))
    assert [e.name for e in listed] == ["sweep"]
    assert_untouched(folder, before)


def test_an_actual_resume_runs_preflight_before_any_cluster(folder: Folder) -> None:
    """start_resume imports the module (the marker shows it) and turns a preflight failure
    into one ControlError before it would resolve or start a cluster."""
    (folder.root / f"{folder.module}.py").write_text(
        f"open({str(folder.marker)!r}, 'w').close()\nraise RuntimeError('bad module')\n"
    )
    _, spec = plan_resume(str(folder.experiment), "skip")
    with pytest.raises(ControlError) as info:
        start_resume(spec, "skip", "127.0.0.1:1")
    assert folder.marker.exists()
    message = str(info.value)
    assert message.startswith("the spec this experiment was launched with: ")
    assert "RuntimeError: bad module" in message and "\n" not in message


def test_preflight_failure_is_a_spec_error_for_launch(folder: Folder) -> None:
    """``launcher.launch`` runs preflight first: a storage that cannot be written is one
    SpecError and nothing is started (the target is never used)."""
    from raytop.launch.cluster import Target
    from raytop.launch.launcher import launch

    blocked = folder.root / "blocked.toml"
    (folder.root / "afile").write_text("x")
    blocked.write_text(folder.spec.read_text().replace('"results"', '"afile/sub"'))
    spec = load_spec(blocked)
    target = Target(address="127.0.0.1:1", embedded=False)
    with pytest.raises(SpecError, match=r"storage_path .*: not writable \("):
        launch(spec, target)
    assert not (folder.root / "afile" / "sub").exists()


# ----------------------------------------------------------------------------- TUI


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
async def test_the_tuis_resume_screen_previews_without_importing(
    folder: Folder, read_only: bool
) -> None:
    from raytop.tui.app import RaytopApp
    from raytop.tui.screens.resume import ResumeScreen
    from raytop.tui.widgets.resume_tables import ResumePreviewTable
    from tests.tui.conftest import FakeCollector
    from tests.tui.helpers import row_keys, wait_until

    before = folder.tree()
    controls = ExperimentControls()
    app = RaytopApp(FakeCollector(RuntimeError("no cluster")), autostart=False,
                    read_only=read_only, controls=controls)  # fmt: skip
    async with app.run_test(size=(100, 30)) as pilot:
        screen = ResumeScreen(storage=str(folder.storage), read_only=read_only, controls=controls)
        await app.push_screen(screen)
        table = screen.query_one(ResumePreviewTable)
        await wait_until(pilot, lambda: row_keys(table) == ["abcde_00000"], tries=500)
        await pilot.press("a")  # read-only: refused; otherwise it asks first
        await pilot.pause(0.2)
    assert_untouched(folder, before)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"pid": 999999999, "spec": 5}', "expected a JSON object with a 'spec' path"),
        (b'{"pid": 999999999}', "expected a JSON object with a 'spec' path"),
        (b'{"pid": 999999999, "spec": ""}', "expected a JSON object with a 'spec' path"),
        (b'{"pid": 999999999, "spec": "\xff', "unreadable ("),
    ],
)
def test_a_malformed_driver_json_is_one_line(folder: Folder, content: bytes, expected: str):
    info_file = folder.experiment / RAYTOP_DIR_NAME / "driver.json"
    info_file.write_bytes(content)
    before = folder.tree()
    with pytest.raises(ControlError) as info:
        plan_resume(str(folder.experiment), "skip")
    assert str(info.value).startswith(f"{info_file}: {expected}")
    assert "\n" not in str(info.value)
    assert_untouched(folder, before)
