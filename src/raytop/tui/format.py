"""Human strings only the TUI needs (``raytop.model.format`` holds the shared ones), and
the TUI's side of the output sanitiser (``shown``, ``shown_lines``).

Nearly every string the TUI shows came from outside raytop (trial ids, folder names, the
probe's words, Ray's), so, as in the text face, the unit of sanitising is the line: each
widget hands its text to ``shown`` (one line) or ``shown_lines`` (a panel of lines), which
make it ``model.visible``: an escape sequence is shown as ``\x1b``, a newline inside a
trial id as ``\n`` (it cannot start a line of its own), a credential as ``***``. Styles
survive: a span keeps its characters through the escapes. Tables do the same for every
cell and header (``KeyedTable``); notifications go through ``RaytopApp.notify``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from rich.text import Span as RichSpan
from rich.text import Text
from textual.content import Content, Span

from raytop.model.progress import bar_cells, spark_levels
from raytop.model.visible import could_hold_secret, visible

Line = TypeVar("Line", Content, Text)

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


def chart(values: Sequence[float], width: int, height: int, levels: str) -> list[str]:
    """A sparkline ``height`` rows tall (top row first): each column filled from the
    bottom up to its value, on the series' own scale, the top cell of a column drawn with
    the level of ``levels`` (lowest first) that its fraction of a row reaches."""
    steps = len(levels)
    tops = [h + 1 for h in spark_levels(values, width, height * steps)]  # eighths filled
    rows = []
    for row in range(height - 1, -1, -1):
        cells = (min(steps, top - row * steps) for top in tops)
        rows.append("".join(levels[n - 1] if n > 0 else " " for n in cells))
    return rows


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


def _escaped(plain: str) -> tuple[str, list[int]] | None:
    """``plain`` made visible, and where each of its characters (and its end) went; None
    when it needs nothing. When a credential was redacted the lengths change inside a
    span: every position is then 0, so the styles go (the rare case) and the text stays."""
    if plain.isprintable() and not could_hold_secret(plain):
        return None
    out, where = visible(plain), []
    if out == plain:
        return None
    position = 0
    for char in plain:
        where.append(position)
        position += len(visible(char)) if not char.isprintable() else 1
    where.append(position)
    return (out, where) if position == len(out) else (out, [0] * (len(plain) + 1))


def shown(line: Line | str) -> Line | Content:
    """One line as the TUI may show it: ``model.visible`` applied to its text, its styles
    kept (a ``str`` becomes a ``Content``: never parsed as markup). Unchanged text comes
    back as the very object."""
    if isinstance(line, str):
        return Content(visible(line))
    escaped = _escaped(line.plain)
    if escaped is None:
        return line
    text, where = escaped
    # Textual drops BEL, BS, VT, FF and CR from a Content's text but not from its
    # spans: a span may point past the end.
    last = len(where) - 1
    if isinstance(line, Content):
        spans = [
            Span(where[min(s.start, last)], where[min(s.end, last)], s.style) for s in line.spans
        ]
        return Content(text, spans)
    copy = Text(
        text, style=line.style, justify=line.justify, overflow=line.overflow,
        no_wrap=line.no_wrap, end=line.end, tab_size=line.tab_size,
    )  # fmt: skip
    copy.spans = [
        RichSpan(where[min(s.start, last)], where[min(s.end, last)], s.style) for s in line.spans
    ]
    return copy


def shown_lines(lines: Iterable[Content | Text | str]) -> Content:
    """A panel of ``lines``, each ``shown``: the newlines between them are the only ones."""
    return Content("\n").join(_as_content(shown(line)) for line in lines)


def _as_content(line: Content | Text) -> Content:
    return line if isinstance(line, Content) else Content.from_rich_text(line)
