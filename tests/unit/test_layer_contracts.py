"""The floors of docs/ARCHITECTURE.md hold (import-linter, configured in pyproject.toml),
and each contract fires on an import planted in a copy of the tree: a contract that cannot
fail would be a defect."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_floors_hold_on_the_tree():
    result = lint_imports(REPO / "src", REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("model/format.py", "import ray", "model and diagnose are pure"),
        ("diagnose/findings.py", "import textual", "model and diagnose are pure"),
        ("model/snapshot.py", "import raytop.diagnose", "Floors"),
        ("diagnose/findings.py", "import raytop.pipeline.collect", "Floors"),
        ("pipeline/collect.py", "import raytop.tui.app", "Floors"),
        ("wire/__init__.py", "import raytop.sources", "Floors"),
        ("tui/app.py", "import raytop.pipeline.collect", "The TUI only displays"),
        ("tui/widgets/worker_table.py", "import ray", "The TUI only displays"),
        ("probe/ledger.py", "import raytop.sources.storage", "Probe and sources are apart"),
        ("sources/storage.py", "import raytop.probe.ledger", "Probe and sources are apart"),
        ("tui/app.py", "import raytop.faces", "Floors"),
        ("tui/widgets/worker_table.py", "import raytop.diagnose.ledger", "The TUI only displays"),
        ("sources/placement_source.py", "import raytop.diagnose.placement", "Readers read"),
    ],
)
def test_each_contract_fires_on_a_planted_import(tmp_path, module, planted, contract):
    shutil.copytree(REPO / "src" / "raytop", tmp_path / "src" / "raytop",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "raytop" / module
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")
    result = lint_imports(tmp_path / "src", tmp_path)
    assert result.returncode == 1, result.stdout[-2000:]
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, broken[:2000]
