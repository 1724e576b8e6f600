"""raytop bounds its process's malloc arenas (``faces.process_memory``), first thing: each
thread that allocates would otherwise get an arena whose freed pages no other thread
reuses, and the TUI's peak RSS grew with its polling (docs/PERFORMANCE.md)."""

from __future__ import annotations

import platform
import sys

from click.testing import CliRunner

import raytop.cli
from raytop.faces.process_memory import limit_malloc_arenas


def test_glibc_takes_the_limit_and_elsewhere_nothing_is_set() -> None:
    on_glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert limit_malloc_arenas() is on_glibc


def test_every_command_sets_it_before_anything_else(monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(raytop.cli, "limit_malloc_arenas", lambda: calls.append("arenas"))
    result = CliRunner().invoke(raytop.cli.main, ["down", "--help"], catch_exceptions=False)
    assert result.exit_code == 0 and calls == ["arenas"]
