"""raytop themes: flat TOML files mapped 1:1 onto ``textual.theme.Theme``.

Textual has no theme-file loader, so this is raytop's. Built-in themes live in the
repository's ``themes/`` folder, which the wheel ships as ``raytop/themes``.
"""

from __future__ import annotations

import dataclasses
import tomllib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from textual.app import App, InvalidThemeError
from textual.color import Color, ColorParseError
from textual.theme import Theme

DEFAULT_THEME = "raytop-dark"

_THEME_KEYS = {f.name for f in dataclasses.fields(Theme)} - {"variables"}
_NON_COLOR_KEYS = {"name", "dark", "luminosity_spread", "text_alpha", "ansi"}
_META_KEYS = {"author", "description", "homepage"}

# raytop's own CSS variables -> the Textual variable that stands in for them when the
# active theme (e.g. a Textual built-in such as "nord") doesn't define them.
VARIABLE_FALLBACKS = {
    "trial-running": "primary",
    "trial-pending": "foreground-muted",
    "trial-paused": "accent",
    "trial-terminated": "success",
    "trial-error": "error",
}


class ThemeFileError(ValueError):
    """A theme file is not valid TOML or doesn't describe a valid ``Theme``."""


def themes_dir() -> Traversable:
    """The built-in themes: packaged in the wheel, else the source checkout's folder."""
    packaged = files("raytop") / "themes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parents[3] / "themes"


def load_theme_file(path: Traversable) -> Theme:
    """Parse one theme file, failing with the file's name rather than deep in the CSS."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path.name}: {exc}") from exc
    variables = {str(k): str(v) for k, v in data.pop("variables", {}).items()}
    for key in _META_KEYS:
        data.pop(key, None)
    unknown = data.keys() - _THEME_KEYS
    if unknown:
        raise ThemeFileError(f"{path.name}: unknown keys {sorted(unknown)}")
    if "name" not in data or "primary" not in data:
        raise ThemeFileError(f"{path.name}: 'name' and 'primary' are required")
    for key in data.keys() - _NON_COLOR_KEYS:
        try:
            Color.parse(str(data[key]))
        except ColorParseError as exc:
            raise ThemeFileError(f"{path.name}: {key}: {exc}") from exc
    return Theme(**data, variables=variables)


def builtin_theme_files() -> list[Traversable]:
    return sorted(
        (p for p in themes_dir().iterdir() if p.name.endswith(".toml")), key=lambda p: p.name
    )


def variable_defaults(theme: Theme) -> dict[str, str]:
    """Literal fallbacks for raytop's variables, derived from ``theme``.

    Literal values, not ``"$primary"``: injected values are not re-resolved by the CSS
    parser.
    """
    base = theme.to_color_system().generate()
    return {name: base[source] for name, source in VARIABLE_FALLBACKS.items()}


def install_themes(app: App[Any], requested: str) -> list[str]:
    """Register the built-in themes, then select ``requested`` (else the default).

    Returns the problems met (bad files, unknown theme) for the caller to report once.
    """
    problems: list[str] = []
    for path in builtin_theme_files():
        try:
            app.register_theme(load_theme_file(path))
        except ThemeFileError as exc:
            problems.append(str(exc))
    try:
        app.theme = requested
    except InvalidThemeError:
        problems.append(f"unknown theme {requested!r}; using {DEFAULT_THEME}")
        app.theme = DEFAULT_THEME
    return problems
