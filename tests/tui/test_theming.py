"""Every shipped theme loads, and raytop.tcss renders with every selectable theme."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.color import Color

from raytop.tui.theming import (
    DEFAULT_THEME,
    VARIABLE_FALLBACKS,
    ThemeFileError,
    builtin_theme_files,
    load_theme_file,
    next_theme,
    theme_listing,
    themes_dir,
)
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import show

THEME_FILES = builtin_theme_files()


def test_themes_folder_is_found_with_the_default_theme() -> None:
    assert themes_dir().is_dir()
    assert f"{DEFAULT_THEME}.toml" in [p.name for p in THEME_FILES]


@pytest.mark.parametrize("path", THEME_FILES, ids=lambda p: p.name)
def test_theme_file_loads_and_defines_every_raytop_variable(path) -> None:
    theme = load_theme_file(path)
    assert theme.name == path.name.removesuffix(".toml")
    assert set(VARIABLE_FALLBACKS) <= set(theme.variables)


@pytest.mark.parametrize("path", THEME_FILES, ids=lambda p: p.name)
async def test_app_renders_with_theme_file(make_app, sweep, path) -> None:
    theme = load_theme_file(path)
    app = make_app(theme=theme.name)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        assert app.theme == theme.name
        table = app.screen.query_one(TrialTable)
        expected = Color.parse(theme.variables["trial-error"]).rich_color
        assert table.status_style("ERROR").color == expected


async def test_switching_through_every_available_theme(make_app, sweep) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        for name in sorted(app.available_themes):
            app.theme = name
            await pilot.pause()
            assert app.theme == name
            assert table.status_style("RUNNING").color is not None


async def test_theme_switch_recolours_existing_status_cells(make_app, sweep) -> None:
    light = load_theme_file(themes_dir() / "raytop-light.toml")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        app.theme = light.name
        await pilot.pause()
        expected = Color.parse(light.variables["trial-error"]).rich_color
        assert table.status_style("ERROR").color == expected


async def test_unknown_theme_falls_back_to_the_default(make_app) -> None:
    app = make_app(theme="no-such-theme")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('name = "x"\nprimary = "#123456"\ncolour = "red"\n', "unknown keys"),
        ('name = "x"\nprimary = "not-a-colour"\n', "primary"),
        ('primary = "#123456"\n', "required"),
        ("name = \n", "x.toml"),
        ('name = "x"\nprimary = "#123456"\ndark = "yes"\n', "x.toml: dark: 'yes' is not a boolean"),
        ('name = "x"\nprimary = "#123456"\ntext_alpha = "a"\n', "text_alpha"),
        (
            'name = "x"\nprimary = "#123456"\n[variables]\ntrial-error = "nope"\n',
            "variables.trial-error",
        ),
        ('name = "x"\nprimary = "#123456"\nvariables = 3\n', "variables: expected a table"),
    ],
)
def test_bad_theme_files_are_rejected_with_their_name(tmp_path: Path, text, problem) -> None:
    path = tmp_path / "x.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ThemeFileError, match=problem):
        load_theme_file(path)


def test_four_themes_ship_dark_light_high_contrast_and_monochrome() -> None:
    names = {load_theme_file(p).name for p in THEME_FILES}
    assert {"raytop-dark", "raytop-light", "raytop-high-contrast", "raytop-mono"} <= names
    mono = load_theme_file(themes_dir() / "raytop-mono.toml")
    colours = [mono.primary, mono.secondary, mono.accent, mono.foreground, mono.background,
               mono.surface, mono.panel, mono.warning, mono.error, mono.success,
               *mono.variables.values()]  # fmt: skip
    for colour in colours:  # greys only: it needs no colour to be read
        r, g, b = Color.parse(colour).rgb
        assert r == g == b, colour


@pytest.fixture
def user_themes(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    folder = tmp_path / "raytop" / "themes"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('name = "mine"\nprimary = "#123456"\ndark = false\n')
    (folder / "broken.toml").write_text('name = "broken"\nprimary = "#123456"\ndark = 1\n')
    return folder


def test_user_themes_are_listed_and_a_bad_one_is_one_line(user_themes) -> None:
    lines, problems = theme_listing()
    assert any(line.startswith("mine") and str(user_themes / "mine.toml") in line
               for line in lines)  # fmt: skip
    assert any("raytop-dark" in line and "(default)" in line for line in lines)
    (problem,) = problems
    assert str(user_themes / "broken.toml") in problem and "dark" in problem
    assert "\n" not in problem


def test_a_theme_file_that_is_a_fifo_a_device_or_nested_deep_is_one_line(user_themes) -> None:
    """The themes folder is read as the TUI opens: nothing in it may hang it or fail it."""
    import os

    os.mkfifo(user_themes / "fifo.toml")
    (user_themes / "null.toml").symlink_to("/dev/null")
    (user_themes / "deep.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    lines, problems = theme_listing()  # the FIFO and the device are not theme files
    assert any(line.startswith("mine") for line in lines)
    assert not any("fifo" in line or "null" in line for line in lines)
    assert any("deep.toml: nested too deep" in problem for problem in problems)
    for path in (user_themes / "fifo.toml", user_themes / "null.toml"):  # and never read
        with pytest.raises(ThemeFileError, match=f"{path.name}: not a regular file"):
            load_theme_file(path)


async def test_c_cycles_raytops_themes_including_the_users(make_app, sweep, user_themes) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = [app.theme]
        for _ in range(5):
            await pilot.press("c")
            await pilot.pause()
            seen.append(app.theme)
        assert seen[0] == DEFAULT_THEME and "mine" in seen and len(set(seen)) == 5
        assert seen[5] == seen[0]  # around and back to the start


def test_next_theme_wraps_and_starts_from_the_first() -> None:
    assert next_theme(["a", "b"], "b") == "a"
    assert next_theme(["a", "b"], "nord") == "a"
    assert next_theme([], "x") == "x"


def test_an_oversized_theme_file_is_not_read(tmp_path: Path) -> None:
    from raytop.tui.theming import MAX_THEME_BYTES

    path = tmp_path / "huge.toml"
    path.write_text('name = "x"\nprimary = "#123456"\n' + "#" * MAX_THEME_BYTES)
    with pytest.raises(ThemeFileError, match="huge.toml: over"):
        load_theme_file(path)
