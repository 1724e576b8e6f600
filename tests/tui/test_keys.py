"""Keys where the user looks: every key that acts on a screen is in its footer, inside the
terminal's width (80 columns too), and the command palette offers each as a command."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from raytop.tui.screens.overview import OverviewScreen
from raytop.tui.screens.placement import PlacementScreen
from raytop.tui.screens.rank import RankScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.runs import RunsScreen
from raytop.tui.screens.stacks import StacksScreen
from raytop.tui.widgets.key_footer import KeyFooter

from .helpers import show, wait_until
from .test_stop import FakeControls


def shown_actions(app) -> set[str]:
    """The actions of the screen's shown bindings: the footer must carry a key for each
    (one key per action: ``esc`` stands for ``escape,backspace``)."""
    return {active.binding.action for active in app.screen.active_bindings.values()
            if active.binding.show} | {"command_palette"}  # fmt: skip


async def footer_keys(app, pilot) -> list[FooterKey]:
    footer = app.screen.query_one(KeyFooter)
    await wait_until(pilot, lambda: bool(footer.query(FooterKey)))
    await pilot.pause()
    return list(footer.query(FooterKey))


async def open_screen(pilot, app, snapshot, keys: tuple[str, ...], screen_type) -> None:
    await show(pilot, snapshot)
    await pilot.press(*keys)
    await wait_until(pilot, lambda: isinstance(app.screen, screen_type))


SCREENS = [
    ((), OverviewScreen),
    (("enter",), RunScreen),
    (("enter", "enter"), RankScreen),
    (("p",), PlacementScreen),
    (("n",), RunsScreen),
]
IDS = ["overview", "run", "rank", "placement", "runs"]


@pytest.mark.parametrize("width", [80, 160])
@pytest.mark.parametrize(("keys", "screen_type"), SCREENS, ids=IDS)
@pytest.mark.parametrize("read_only", [False, True], ids=["controls", "read-only"])
async def test_the_footer_shows_every_key_of_the_screen_within_its_width(
    make_app, placement, width, keys, screen_type, read_only
) -> None:
    app = make_app(controls=FakeControls(), read_only=read_only)
    async with app.run_test(size=(width, 24)) as pilot:
        await open_screen(pilot, app, placement, keys, screen_type)
        shown = await footer_keys(app, pilot)
        assert {key.action for key in shown} == shown_actions(app)
        for key in shown:
            region = key.region
            assert region.width > 0 and region.right <= width, (key.key_display, region)


async def test_the_overview_footer_names_the_keys_it_has_room_for(make_app, placement) -> None:
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(160, 24)) as pilot:
        await show(pilot, placement)
        words = {key.key_display: key.description for key in await footer_keys(app, pilot)}
        assert words["w"] == "ranks" and words["p"] == "place" and words["u"] == "resume"
        assert words["q"] == "quit" and words["?"] == "help"
        assert words["x"] == words["t"] == ""  # in the group: "x t stop"
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, placement)
        words = {key.key_display: key.description for key in await footer_keys(app, pilot)}
        assert words["w"] == "ranks" and words["p"] == "place"  # the screen's own keep theirs
        assert words["?"] == ""  # the best known give theirs up first


@pytest.mark.parametrize(("keys", "screen_type"), SCREENS, ids=IDS)
async def test_the_palette_offers_every_key_of_the_screen(
    make_app, placement, keys, screen_type
) -> None:
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(120, 36)) as pilot:
        await open_screen(pilot, app, placement, keys, screen_type)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for active in app.screen.active_bindings.values():
            binding = active.binding
            if binding.show and active.enabled and binding.action != "command_palette":
                named = [t for t in titles if t.startswith(f"{binding.description} (")]
                assert named, (binding.description, titles)
        assert "Theme" not in titles  # Textual's picker would offer themes raytop lacks colours for


async def test_a_palette_command_does_what_its_key_does(make_app, placement) -> None:
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(120, 36)) as pilot:
        await show(pilot, placement)
        await pilot.press("ctrl+p", *"place")
        await pilot.pause(0.3)  # the palette searches in a worker
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlacementScreen))


async def test_the_stacks_screen_footer_has_its_keys(make_app, with_stacks) -> None:
    from .conftest import StackCollector

    app = make_app(collector=StackCollector(with_stacks, stacks=with_stacks))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_screen(pilot, app, with_stacks, ("enter", "s"), StacksScreen)
        shown = await footer_keys(app, pilot)
        assert {key.action for key in shown} == shown_actions(app)
