"""The options every command shares (``GROUP_OPTIONS``: the same before or after the
command name) and the value types that refuse what would silently mean something else
(a ``nan`` wait, an empty address, an unknown theme). ``raytop.cli`` declares the
commands with these; ``--read-only`` refuses what ``faces.read_only`` lists.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import click

from raytop.faces.command_line import fail
from raytop.faces.read_only import refusal
from raytop.model.refresh import DEFAULT_REFRESH_S


class FiniteFloat(click.ParamType):
    """A finite number at least ``minimum``: ``click.FloatRange`` lets ``nan`` through
    (every comparison with it is false) and ``inf`` makes a wait endless."""

    name = "seconds"

    def __init__(self, minimum: float) -> None:
        self.minimum = minimum

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, float) and math.isfinite(value) and value >= self.minimum:
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if number < self.minimum:
            self.fail(f"{value!r} is below the minimum {self.minimum:g}", param, ctx)
        return number


class Address(click.ParamType):
    """``HOST:PORT`` or ``auto``; an empty (or blank) value is refused rather than read
    as "no address given" (which would silently pick another cluster)."""

    name = "address"

    def convert(self, value, param, ctx) -> str:
        text = str(value).strip()
        if not text:
            self.fail("empty: give HOST:PORT or auto (or leave the option out)", param, ctx)
        return text


class ThemeName(click.ParamType):
    """A theme raytop knows (``raytop themes``). The names come from the TUI's theming,
    which this floor may not import: ``raytop.cli`` hands the lister in (``known``)."""

    name = "theme"

    def __init__(self) -> None:
        self.known: Callable[[], list[str]] = list

    def convert(self, value, param, ctx) -> str:
        text = str(value).strip()
        names = self.known()
        if text not in names:
            self.fail(f"unknown theme {text!r}; available: {', '.join(names)}", param, ctx)
        return text


THEME_NAMES = ThemeName()

# The group's options and the value a command gets when neither position sets one.
GROUP_OPTIONS = {
    "address": None, "refresh_s": DEFAULT_REFRESH_S, "stall_after": None, "read_only": False,
    "theme": None, "ascii_only": False, "storage": (),
}  # fmt: skip
# Only the TUI uses these: merged like the others, then kept in ``ctx.meta[TUI_META]``
# (``tui_options``) rather than handed to the command.
TUI_OPTIONS = ("theme", "ascii_only")
TUI_META = "raytop.tui_options"

address_option = click.option(
    "--address", type=Address(), metavar="HOST:PORT|auto",
    help="Ray cluster (GCS) address; default RAY_ADDRESS, else the cluster raytop started, "
    "else the one running on this machine.",
)  # fmt: skip
refresh_option = click.option(
    "--refresh", "refresh_s", type=FiniteFloat(0.1), metavar="SECONDS",
    help="Seconds between snapshots (the TUI's and --no-tui's); raise it on a slow link, "
    f"e.g. --refresh 5 over a slow ssh.  [default: {GROUP_OPTIONS['refresh_s']}]",
)  # fmt: skip
theme_option = click.option(
    "--theme", type=THEME_NAMES, envvar="RAYTOP_THEME", metavar="NAME",
    help="The TUI's colours (`raytop themes` lists them; also RAYTOP_THEME).  "
    "[default: raytop-dark; raytop-mono under NO_COLOR]",
)  # fmt: skip
ascii_option = click.option(
    "--ascii", "ascii_only", is_flag=True,
    help="Draw the TUI in plain ASCII: borders, bars, sparklines (automatic when the "
    "terminal's encoding has no block characters).",
)  # fmt: skip


storage_option = click.option(
    "--storage", "storage", multiple=True, metavar="PATH|URI",
    help="History: also show every Tune experiment folder under PATH (or PATH itself), "
    "local or s3://…, read only (repeatable; status and the TUI). Needs no cluster: "
    "without one it is history from storage alone.",
)  # fmt: skip
experiment_option = click.option(
    "--experiment", "experiments", multiple=True, metavar="PATH",
    help="An experiment folder to include (repeatable); default: what raytop launched.",
)  # fmt: skip
stall_option = click.option(
    "--stall-after", type=FiniteFloat(0), metavar="SECONDS",
    help="No progress this long is a stall (a rank waiting in report for another, or no "
    "report at all).  [default: learned per run: 3× its median report interval, at "
    "least 8 s; 60 s until it has reported twice]",
)  # fmt: skip
read_only_option = click.option(
    "--read-only", is_flag=True, envvar="RAYTOP_READ_ONLY",
    help="Refuse anything that changes a run or writes a file: run, resume, stop, down, "
    "status --stacks; in the TUI x, t, a, s (also RAYTOP_READ_ONLY=1). status "
    "--flight-recorder then only reads the dumps already on storage.",
)  # fmt: skip
GROUP_OPTION_DECORATORS = (
    address_option, refresh_option, stall_option, read_only_option, theme_option, ascii_option,
    storage_option,
)  # fmt: skip


def tui_options(ctx: click.Context | None) -> dict:
    """The TUI's options as merged (``theme``, ``ascii_only``): what the command line gave,
    else ``GROUP_OPTIONS``."""
    given = ctx.meta.get(TUI_META) if ctx is not None else None
    return given or {name: GROUP_OPTIONS[name] for name in TUI_OPTIONS}


def group_options(command):
    """Give ``command`` the group's options too: after the command name they win, else
    the value given before it, else ``GROUP_OPTIONS``; read-only if either position (or
    RAYTOP_READ_ONLY) says so, and then refuse a ``READ_ONLY_REFUSES`` entry before
    anything is read. Apply it first (closest to the function)."""

    @functools.wraps(command)
    def merged(**params):
        ctx = click.get_current_context()
        root = ctx.find_root().params
        for name, default in GROUP_OPTIONS.items():
            if name in ("read_only", "ascii_only"):
                params[name] = bool(params.get(name) or root.get(name))
            elif name == "storage":  # repeatable: both positions count
                params[name] = tuple(root.get(name) or ()) + tuple(params.get(name) or ())
            elif params.get(name) is None:
                given = root.get(name)
                params[name] = default if given is None else given
        ctx.meta[TUI_META] = {name: params.pop(name) for name in TUI_OPTIONS}
        refused = refusal(ctx, params) if params["read_only"] else None
        if refused is not None:
            fail(
                f"read-only: `raytop {refused.spelled}` {refused.changes}; nothing was "
                "changed (drop --read-only / RAYTOP_READ_ONLY)"
            )
        return command(**params)

    for option in reversed(GROUP_OPTION_DECORATORS):
        merged = option(merged)
    return merged


no_tui_option = click.option(
    "--no-tui", is_flag=True, help="Print one line per change; exit when it ends."
)
