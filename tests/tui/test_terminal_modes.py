"""The TUI on any terminal: ``--ascii`` draws every screen in ASCII (borders included,
ascii.tcss), ``NO_COLOR`` draws it in greys only, and both are what the app really
renders: the screen is composed as the terminal would get it, then read."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Digits

from raytop.tui.glyphs import ASCII, UNICODE
from raytop.tui.screens.stacks import StacksScreen

from .conftest import FakeResumeControls, StackCollector
from .helpers import show, wait_until

TUI = Path(__file__).parents[2] / "src" / "raytop" / "tui"


def rendered(app: App[None]) -> tuple[str, str]:
    """(the screen as text, the same with its escape codes), composed with every filter
    of the app applied (NO_COLOR's included), as ``App.export_screenshot`` does."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True,
        color_system="truecolor", record=True, legacy_windows=False, safe_box=False,
    )  # fmt: skip
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(update)
    return console.export_text(styles=False, clear=False), console.export_text(styles=True)


def outside_digits(app: App[None], text: str) -> str:
    """``text`` with the cells of every ``Digits`` on view blanked: Textual draws its big
    digits (the Run screen's missing rank) with box characters, and has no ASCII form."""
    lines = text.split("\n")
    for digits in app.screen.query(Digits):
        region = digits.region
        for y in range(region.y, region.bottom):
            line = lines[y]
            lines[y] = line[: region.x] + " " * region.width + line[region.right :]
    return "\n".join(lines)


def non_ascii(text: str) -> set[str]:
    return {ch for ch in text if ord(ch) > 127}


def boxes(text: str) -> set[str]:
    """Box-drawing and block characters (U+2500-U+259F): what --ascii must never draw."""
    return {ch for ch in text if 0x2500 <= ord(ch) <= 0x259F}


# Left over under --ascii, none of them a line or a block (docs/TERMINALS.md): "·" and
# "—" separate parts of raytop's own lines and "…" ends a cut text or a pending action
# (tui/screens, tui/widgets: they do not ask tui.glyphs yet); "…" is also Textual's
# text-overflow: ellipsis; "→" joins a bundle to its node in the placement table (not
# glyphs.arrow yet); "⏎" is how Textual's Footer shows the enter key.
LEFTOVERS = {"\u00b7", "\u2014", "\u2026", "\u2192", "\u23ce"}


SCREENS = ("overview", "help", "run", "rank", "stacks", "placement", "resume")


async def _open(pilot, app, screen: str, request) -> None:
    """Feed the screen's snapshot and press the keys that bring ``screen`` on view."""
    snapshot = request.getfixturevalue("placement" if screen == "placement" else "checkpointed")
    await show(pilot, snapshot)
    keys = {"overview": (), "help": ("question_mark",), "run": ("enter",),
            "rank": ("enter", "down", "enter"), "stacks": ("enter", "s"), "placement": ("p",),
            "resume": ("u",)}[screen]  # fmt: skip
    await pilot.press(*keys)
    await pilot.pause()
    if screen == "stacks":
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))
    if screen == "overview":  # and a notification, whose edge is a box character
        app.notify("a notice", title="Themes", severity="warning")
    await pilot.pause()


def _app(make_app, request, **kwargs):
    stacks = request.getfixturevalue("with_stacks")
    collector = StackCollector(request.getfixturevalue("checkpointed"), stacks=stacks)
    return make_app(collector=collector, controls=FakeResumeControls(), **kwargs)


@pytest.mark.parametrize("screen", SCREENS)
async def test_ascii_draws_the_screen_in_ascii(make_app, request, screen) -> None:
    app = _app(make_app, request, ascii_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await _open(pilot, app, screen, request)
        assert app.has_class("-ascii") and app.glyphs is ASCII
        text = outside_digits(app, rendered(app)[0])
        assert boxes(text) == set(), (boxes(text), text)
        assert non_ascii(text) <= LEFTOVERS, (non_ascii(text) - LEFTOVERS, text)


@pytest.mark.parametrize("screen", SCREENS)
async def test_without_ascii_the_screen_has_box_characters(make_app, request, screen) -> None:
    """The check above can fail: the same screens draw Unicode by default."""
    app = _app(make_app, request)
    async with app.run_test(size=(120, 36)) as pilot:
        await _open(pilot, app, screen, request)
        assert not app.has_class("-ascii") and app.glyphs is UNICODE
        assert boxes(rendered(app)[0]), screen


def _border_rules(tcss: str) -> dict[str, str]:
    """selector -> its border declarations (``border``, ``border-top``…), titles left out."""
    rules = {}
    for selector, body in re.findall(r"([^{}/]+?)\s*\{([^}]*)\}", tcss):
        found = re.findall(r"(border(?:-top|-bottom|-left|-right)?)\s*:\s*([^;]+);", body)
        if found:
            rules[" ".join(selector.split())] = "; ".join(f"{k}: {v}" for k, v in found)
    return rules


def test_every_border_in_raytop_tcss_has_its_ascii_twin() -> None:
    """A border added to raytop.tcss without its ascii.tcss rule would draw boxes under
    --ascii: each one has a ``.-ascii <selector>`` rule of type ascii, colour kept."""
    plain = _border_rules((TUI / "raytop.tcss").read_text())
    ascii_rules = _border_rules((TUI / "ascii.tcss").read_text())
    assert plain
    for selector, declared in plain.items():
        twin = ascii_rules.get(f".-ascii {selector}")
        assert twin is not None, f"ascii.tcss has no rule for {selector}"
        for decl in declared.split("; "):
            name, value = decl.split(": ")
            if value == "none":  # draws nothing: no twin needed
                continue
            kind, _, colour = value.partition(" ")
            assert f"{name}: ascii {colour}".strip() in twin, (selector, decl, twin)


_RGB = re.compile(r"\x1b\[(?:[0-9;]*;)?[34]8;2;(\d+);(\d+);(\d+)")


def colours(ansi: str) -> set[tuple[int, int, int]]:
    return {tuple(int(v) for v in m.groups()) for m in _RGB.finditer(ansi)}


async def test_no_color_draws_in_greys_only(make_app, monkeypatch, stalled) -> None:
    """Textual reads NO_COLOR when the app is made: every colour becomes its grey."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(theme="raytop-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, stalled)
        assert app.no_color
        _, ansi = rendered(app)
        seen = colours(ansi)
        assert seen, "nothing was drawn in colour at all"
        assert all(r == g == b for r, g, b in seen), sorted(seen)[:10]


async def test_with_colour_the_same_screen_has_hues(make_app, monkeypatch, stalled) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_app(theme="raytop-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, stalled)
        assert not app.no_color
        seen = colours(rendered(app)[1])
        assert any(not (r == g == b) for r, g, b in seen)


class Timed:
    """A collector that notes when it was polled."""

    def __init__(self, snapshot) -> None:
        self.snapshot = snapshot
        self.at: list[float] = []

    def collect(self):
        self.at.append(time.monotonic())
        return self.snapshot


@pytest.mark.parametrize("refresh_s", [0.2, 0.4])
async def test_the_tui_polls_at_the_refresh_given(make_app, sweep, refresh_s) -> None:
    """--refresh is the poller's period (a slow link asks for a long one): it sleeps that
    long between collections, and never polls sooner. (How much later a loaded machine
    wakes it is not asserted: timings are measured in benchmarks/, not in tests.)"""
    collector = Timed(sweep)
    app = make_app(collector=collector, refresh_s=refresh_s, autostart=True)
    asked: list[float] = []
    sleep = app._sleep
    app._sleep = lambda seconds: (asked.append(seconds), sleep(seconds))[1]
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(collector.at) >= 4, tries=400)
    gaps = [b - a for a, b in zip(collector.at, collector.at[1:], strict=False)]
    assert min(gaps) >= refresh_s * 0.9, gaps
    assert set(asked[:3]) == {refresh_s}, asked
