"""raytop themes: flat TOML files mapped 1:1 onto ``textual.theme.Theme``.

Textual has no theme-file loader, so this is raytop's. Built-in themes live in the
repository's ``themes/`` folder, which the wheel ships as ``raytop/themes``; a user's own
are ``*.toml`` files in ``$XDG_CONFIG_HOME/raytop/themes`` (default ``~/.config``), read,
never written. A user theme of a built-in's name replaces it.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from importlib.resources import files
from pathlib import Path
from typing import Any

from textual.app import App, InvalidThemeError
from textual.color import Color, ColorParseError
from textual.theme import Theme

from raytop.model.stdlib import Traversable, tomllib

DEFAULT_THEME = "raytop-dark"

_THEME_KEYS = {f.name for f in dataclasses.fields(Theme)} - {"variables"}
_NON_COLOR_KEYS = {"name", "dark", "luminosity_spread", "text_alpha", "ansi"}
_META_KEYS = {"author", "description", "homepage"}
MAX_THEME_BYTES = 64 * 1024  # a theme is a few hundred bytes; a user folder is not trusted
_KIND = {"name": "string", "dark": "boolean", "luminosity_spread": "number",
         "text_alpha": "number", "ansi": "boolean"}  # fmt: skip

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


def _theme_text(path: Traversable) -> str:
    """A theme file's text. A user's file is opened non-blocking and read only when it is
    a regular file within ``MAX_THEME_BYTES``: a FIFO or a device in the themes folder
    must not hang the TUI as it opens (nor ``raytop themes``)."""
    if not isinstance(path, Path):  # a packaged theme
        return path.read_text(encoding="utf-8")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ThemeFileError(f"{path.name}: not a regular file: not read")
        if info.st_size > MAX_THEME_BYTES:
            raise ThemeFileError(f"{path.name}: over {MAX_THEME_BYTES:,} bytes: not read")
        return f.read(MAX_THEME_BYTES + 1).decode("utf-8")


def load_theme_file(path: Traversable) -> Theme:
    """Parse one theme file, failing with the file's name rather than deep in the CSS."""
    try:
        data = tomllib.loads(_theme_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path.name}: {exc}") from exc
    except RecursionError:
        raise ThemeFileError(f"{path.name}: nested too deep: not read") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeFileError(f"{path.name}: unreadable ({exc})") from exc
    if not isinstance(data.get("variables", {}), dict):
        raise ThemeFileError(f"{path.name}: variables: expected a table")
    variables = {str(k): str(v) for k, v in data.pop("variables", {}).items()}
    for key in _META_KEYS:
        data.pop(key, None)
    unknown = data.keys() - _THEME_KEYS
    if unknown:
        raise ThemeFileError(f"{path.name}: unknown keys {sorted(unknown)}")
    if "name" not in data or "primary" not in data:
        raise ThemeFileError(f"{path.name}: 'name' and 'primary' are required")
    for key, kind in _KIND.items():
        if key in data and not _is(data[key], kind):
            raise ThemeFileError(f"{path.name}: {key}: {data[key]!r} is not a {kind}")
    for key, value in variables.items():
        try:
            Color.parse(value)
        except ColorParseError as exc:
            raise ThemeFileError(f"{path.name}: variables.{key}: {exc}") from exc
    for key in data.keys() - _NON_COLOR_KEYS:
        try:
            Color.parse(str(data[key]))
        except ColorParseError as exc:
            raise ThemeFileError(f"{path.name}: {key}: {exc}") from exc
    return Theme(**data, variables=variables)


def _is(value: Any, kind: str) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def builtin_theme_files() -> list[Traversable]:
    return sorted(
        (p for p in themes_dir().iterdir() if p.name.endswith(".toml")), key=lambda p: p.name
    )


def user_themes_dir() -> Path:
    """Where a user's own theme files live (not created: nothing is written there)."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "raytop" / "themes"


def user_theme_files() -> list[Path]:
    try:
        return sorted(p for p in user_themes_dir().glob("*.toml") if p.is_file())
    except OSError:
        return []


@dataclasses.dataclass(frozen=True)
class ThemeChoice:
    theme: Theme
    source: str  # "built in", or the user file's path


def available_themes() -> tuple[list[ThemeChoice], list[str]]:
    """raytop's themes in cycling order (built-in, then the user's), and one line per
    theme file that could not be used, naming the file and what was wrong."""
    chosen: dict[str, ThemeChoice] = {}
    problems: list[str] = []
    for path, source in [*((p, "built in") for p in builtin_theme_files()),
                         *((p, str(p)) for p in user_theme_files())]:  # fmt: skip
        try:
            theme = load_theme_file(path)
        except ThemeFileError as exc:  # its message starts with the file's name
            where = f"{path.parent}/" if source != "built in" else ""
            problems.append(f"theme file {where}{exc} (not used)")
            continue
        chosen[theme.name] = ThemeChoice(theme, source)
    return list(chosen.values()), problems


def theme_listing() -> tuple[list[str], list[str]]:
    """``raytop themes``: one line per theme (name, dark or light, where it comes from; the
    default marked), and the problems of the files that could not be used."""
    choices, problems = available_themes()
    width = max((len(c.theme.name) for c in choices), default=0)
    lines = [
        f"{c.theme.name:<{width}}  {'dark ' if c.theme.dark else 'light'}  {c.source}"
        + ("  (default)" if c.theme.name == DEFAULT_THEME else "")
        for c in choices
    ]
    lines.append(f"your own: *.toml in {user_themes_dir()}; `c` in the TUI cycles them")
    return lines, problems


def next_theme(names: list[str], current: str) -> str:
    """The theme after ``current`` in ``names``, wrapping (the first if current is not one)."""
    if not names:
        return current
    if current not in names:
        return names[0]
    return names[(names.index(current) + 1) % len(names)]


def variable_defaults(theme: Theme) -> dict[str, str]:
    """Literal fallbacks for raytop's variables, derived from ``theme``.

    Literal values, not ``"$primary"``: injected values are not re-resolved by the CSS
    parser.
    """
    base = theme.to_color_system().generate()
    return {name: base[source] for name, source in VARIABLE_FALLBACKS.items()}


def install_themes(app: App[Any], requested: str) -> tuple[list[str], list[str]]:
    """Register raytop's themes (built-in and the user's), then select ``requested`` (else
    the default). Returns their names in cycling order, and the problems met (bad files, an
    unknown theme) for the caller to report once."""
    choices, problems = available_themes()
    for choice in choices:
        app.register_theme(choice.theme)
    try:
        app.theme = requested
    except InvalidThemeError:
        problems.append(f"unknown theme {requested!r}; using {DEFAULT_THEME}")
        app.theme = DEFAULT_THEME
    return [c.theme.name for c in choices], problems
