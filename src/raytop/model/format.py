"""Human strings: TUI cells and progress lines (computed off the UI thread), and the one-line
form of a message or an exception every floor reports with."""

from __future__ import annotations

import math
from typing import Any


def fmt_duration(seconds: float | None) -> str:
    """``75.2`` → ``1m15s``; ``None`` → ``-``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def plural(count: int, word: str) -> str:
    """``1 trial``, ``2 trials``, ``0 trials``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def fmt_value(value: Any) -> str:
    """A metric or config value in at most ~10 characters."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if value == 0 or 1e-3 <= abs(value) < 1e5:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


def fmt_params(config: dict[str, Any], only: frozenset[str] | None = None) -> str:
    """``{"lr": 0.01, "hidden": 32}`` → ``hidden=32 lr=0.01``; with ``only`` (the swept
    keys, ``varying_keys``), just those: the constants are said once, above the trials
    (``fmt_constants``)."""
    keys = sorted(k for k in config if only is None or k in only)
    return " ".join(f"{k}={fmt_value(config[k])}" for k in keys)


def fmt_trials(count: int, total: int | None) -> str:
    """``2 of 4 trials`` when the sweep's total is known (``Experiment.trials_total``) and
    not below the count; else ``2 trials``."""
    if total is not None and total >= count:
        return f"{count} of {plural(total, 'trial')}"
    return plural(count, "trial")


def fmt_constants(configs: list[dict[str, Any]], varying: frozenset[str]) -> str:
    """The params every trial shares, once: ``batch_size=32 · epochs=8`` (sorted); ``""``
    when none (or no trial). ``varying``: ``varying_keys(configs)``, which the caller has."""
    if not configs:
        return ""
    first = configs[0]
    return " · ".join(f"{k}={fmt_value(first[k])}" for k in sorted(first) if k not in varying)


def varying_keys(configs: list[dict[str, Any]]) -> frozenset[str]:
    """The config keys whose values differ between trials (a key is settled at its first
    difference: the trials table asks on every redraw, of up to 10,000 trials)."""
    keys = {k for c in configs for k in c}
    return frozenset(k for k in keys if _varies(k, configs))


def _varies(key: str, configs: list[dict[str, Any]]) -> bool:
    first = repr(configs[0].get(key))
    return any(repr(c.get(key)) != first for c in configs)


def one_line(
    what: str | BaseException, joined_by: str | None = None, limit: int | None = None
) -> str:
    """A message (or an exception's) as one line, for a toast, a warning or a CLI error.

    Without ``joined_by``: the first line only (a stray traceback is not shown), else the
    exception's type name. With it: every non-blank line, stripped, joined by it (a
    message whose lines all matter, e.g. click's usage errors). ``limit`` caps the length,
    for a warning repeated on every poll."""
    text = str(what).strip()
    if joined_by is not None:
        line = joined_by.join(part.strip() for part in text.splitlines() if part.strip())
    else:
        lines = text.splitlines()
        line = lines[0] if lines else type(what).__name__
    return line if limit is None else line[:limit]
