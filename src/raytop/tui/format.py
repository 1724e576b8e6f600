"""Human strings only the TUI needs (``raytop.model.format`` holds the shared ones)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from raytop.model.progress import bar_cells, spark_levels

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


def fmt_rate(per_min: float | None) -> str:
    """Reports per minute: ``12/m``, ``7.5/m``, ``<0.1/m``; ``None`` (fewer than two
    reports in its history) → ``-``. At most 6 characters below 10 000 a minute."""
    if per_min is None:
        return "-"
    if per_min >= 9.95:
        return f"{per_min:.0f}/m"
    if per_min >= 0.1:
        return f"{per_min:.1f}/m"
    return "<0.1/m"


def fit_words(line: Content, width: int, ellipsis: str) -> Content:
    """``line`` cut to ``width`` cells at a word boundary, with ``ellipsis``: a panel line
    never wraps (the panels are budgeted in lines) and never ends mid-word."""
    if line.cell_length <= width:
        return line
    cut = line.plain.rfind(" ", 0, max(0, width - len(ellipsis)) + 1)
    cut = cut if cut > 0 else max(0, width - len(ellipsis))
    return Content.assemble(line[:cut].rstrip(), ellipsis)


def wrap_words(
    line: Content, width: int, lines: int, ellipsis: str, indent: int = 2
) -> list[Content]:
    """``line`` folded at word boundaries into at most ``lines`` lines of ``width`` cells
    (the later ones indented), the last cut with ``ellipsis`` if it still does not fit."""
    out: list[Content] = []
    rest = line
    while rest.cell_length > width and len(out) + 1 < lines:
        cut = rest.plain.rfind(" ", 0, width + 1)
        if cut <= indent:
            break
        out.append(rest[:cut].rstrip())
        tail = rest[cut:]
        tail = tail[len(tail.plain) - len(tail.plain.lstrip(" ")) :]
        rest = Content.assemble(" " * indent, tail)
    out.append(fit_words(rest, width, ellipsis))
    return out


def sparkline(values: Sequence[float], width: int, levels: str) -> str:
    """``values`` (oldest first) as at most ``width`` characters of ``levels`` (lowest
    first: ``Glyphs.spark``), each series on its own scale; ``""`` for none."""
    return "".join(levels[i] for i in spark_levels(values, width, len(levels)))


def progress_bar(done: int, total: int, width: int, full: str, empty: str) -> str:
    """``███░░``: ``done`` of ``total`` in ``width`` cells (``Glyphs.bar_full``/``bar_empty``)."""
    filled = bar_cells(done, total, width)
    return full * filled + empty * (width - filled)


def fmt_declared(resources: dict[str, float]) -> str:
    """``1 CPU, 1 GPU``: a worker's logical resources, the usual ones first, Ray's internal
    markers (``node:…``, ``bundle_group_…``, ``accelerator_type:…``) left out."""
    order = {"CPU": 0, "GPU": 1, "memory": 2}
    shown = [
        (name, amount)
        for name, amount in resources.items()
        if ":" not in name and not name.startswith("bundle_group")
    ]
    parts = []
    for name, amount in sorted(shown, key=lambda item: (order.get(item[0], 3), item[0])):
        if name == "memory":
            parts.append(f"{fmt_bytes(int(amount))} memory")
        else:
            parts.append(f"{amount:g} {name}")
    return ", ".join(parts)
