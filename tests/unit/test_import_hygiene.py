"""``model`` and ``diagnose`` are pure: they import neither ray nor textual (DESIGN)."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["raytop.model", "raytop.model.format", "raytop.diagnose"])
def test_pure_layers_import_neither_ray_nor_textual(module):
    code = (
        f"import sys, {module}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'textual', 'torch')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tui_never_imports_ray():
    code = "import sys, raytop.tui.app; sys.exit('ray' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
