"""Where py-spy is and whether the kernel lets it read another process: shared by the
probe (a rank's own native stack) and raytop's reader (a no-probe worker's stacks).

py-spy comes with ``ray[default]``; a venv's ``bin`` is often not on a Ray worker's
``PATH``, so the one beside the running Python counts too. Yama's ``ptrace_scope`` (1 and
up) is what most often keeps it from attaching.
"""

from __future__ import annotations

import os
import shutil
import sys

YAMA_SCOPE_FILE = "/proc/sys/kernel/yama/ptrace_scope"


def py_spy_on(path: str | None = None, executable: str | None = None) -> str | None:
    """py-spy on ``path`` (a ``PATH`` value; None: this process's), else beside
    ``executable`` (None: this Python); None when neither has an executable one."""
    found = shutil.which("py-spy", path=path)
    if found:
        return found
    beside = os.path.join(os.path.dirname(executable or sys.executable), "py-spy")
    return beside if os.path.isfile(beside) and os.access(beside, os.X_OK) else None


def yama_scope(path: str = YAMA_SCOPE_FILE) -> int | None:
    """``kernel.yama.ptrace_scope`` (None: no Yama, or unreadable)."""
    try:
        with open(path) as f:
            return int(f.read(16).strip())
    except (OSError, ValueError):
        return None
