"""The TUI is a face: it imports textual, rich, the model, the diagnosis and itself. The
pipeline, the sources, the launcher and ray reach it only as objects the CLI passes in
(``model.ports.Collector``, ``tui.controls.Controls``)."""

from __future__ import annotations

import ast
from pathlib import Path

import raytop.tui

ALLOWED = ("raytop.tui", "raytop.model", "raytop.diagnose")
TUI = Path(raytop.tui.__file__).parent


def _raytop_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [n for n in names if n == "raytop" or n.startswith("raytop.")]


def test_the_tui_imports_only_the_model_the_diagnosis_and_itself() -> None:
    bad = {
        str(path.relative_to(TUI)): name
        for path in sorted(TUI.rglob("*.py"))
        for name in _raytop_imports(path)
        if not name.startswith(tuple(f"{a}." for a in ALLOWED)) and name not in ALLOWED
    }
    assert not bad, bad
