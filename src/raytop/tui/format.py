"""Human strings only the TUI needs (``raytop.model.format`` holds the shared ones)."""

from __future__ import annotations

_UNITS = ("K", "M", "G", "T", "P")


def fmt_bytes(n: float | None) -> str:
    """``2_300_000_000`` → ``2.1G`` (binary units, at most 5 characters); ``None`` → ``-``."""
    if n is None or n < 0:
        return "-"
    if n < 1024:
        return f"{int(n)}B"
    value = float(n)
    for unit in _UNITS:
        value /= 1024
        if value < 9.95:
            return f"{value:.1f}{unit}"
        if value < 1023.5:  # "1024M" would not fit: it becomes "1.0G"
            return f"{value:.0f}{unit}"
    return f"{value:.0f}{_UNITS[-1]}"


def fmt_seconds(s: float | None) -> str:
    """``12.34`` → ``12.3s`` (whole seconds from 1000 on); ``None`` → ``-``."""
    if s is None:
        return "-"
    return f"{s:.1f}s" if s < 999.95 else f"{s:.0f}s"
