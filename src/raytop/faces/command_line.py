"""The command line as a face: the options every command shares (``GROUP_OPTIONS``),
what ``--read-only`` refuses (``READ_ONLY_REFUSES``, the one list), the value types that
refuse what would silently mean something else, and the one guard (``RaytopGroup``)
that turns whatever escapes a command into one line on stderr. ``raytop.cli`` declares
the commands with these.
"""

from __future__ import annotations

import errno
import functools
import math
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click

from raytop.faces import output
from raytop.model.format import one_line
from raytop.wire.version import RayUnsupported

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_CLUSTER_START = 0, 1, 2, 3

# What `raytop --help` and `raytop plan --help` say of their exit codes.
PLAN_EXIT_CODES = """Exit codes:
  0   the sweep fits: every trial started can run
  12  never placeable: a bundle or a worker group fits no node of the cluster
  13  deadlock (trial drivers leave no room for any worker group) or under-utilised
      (some started trials would wait, holding their driver bundle)
  2   bad usage"""
EXIT_CODES = """\b
Exit codes:
  0  success (run --no-tui: every trial TERMINATED)
  1  run --no-tui: the experiment ended with trials not TERMINATED, or an error finding;
     an internal error (RAYTOP_DEBUG=1 shows its traceback)
  2  bad usage or input: spec errors, a bad option value (an unknown --theme),
     unreachable --address, refused under --read-only, a file that cannot be read
     or written (no terminal is no error: raytop prints the status instead)
  3  the embedded cluster could not be started
  12/13  run: refused by the capacity plan (see raytop plan --help); --force overrides
  (raytop check has its own codes: raytop check --help)"""


class RaytopGroup(click.Group):
    """The one top-level guard: whatever escapes a command becomes one line on stderr.

    A usage error (unknown option, bad value) is one line, exit 2; an ``OSError`` names
    the file (``cannot write ~/.raytop/x.json: Permission denied``), exit 2; anything else
    is a bug: ``internal error: <Type>: <msg>``, exit 1, with the traceback only when
    ``RAYTOP_DEBUG=1``. Overriding ``main`` keeps the console script ``raytop.cli:main``."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):  # fmt: skip
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            returned = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            fail(one_line(exc.format_message(), joined_by="; ") + where, exc.exit_code)
        except click.ClickException as exc:
            fail(one_line(exc.format_message(), joined_by="; "), exc.exit_code)
        except click.Abort:
            fail("aborted; nothing more was done", EXIT_RUN_FAILED)
        except RayUnsupported as exc:  # a refusal, not a bug: one line, exit 2
            fail(str(exc))
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of our output went away
                sys.exit(EXIT_RUN_FAILED)
            _debug_traceback()
            fail(_os_error_line(exc))
        except Exception as exc:  # the guard of last resort: a bug, said in one line
            _debug_traceback()
            message = one_line(str(exc), joined_by="; ")
            fail(f"internal error: {type(exc).__name__}: {message}", EXIT_RUN_FAILED)
        sys.exit(returned if isinstance(returned, int) else EXIT_OK)


def _debug_traceback() -> None:
    """With ``RAYTOP_DEBUG=1``, the traceback on stderr, each line made visible (an
    exception's message may quote a folder's text)."""
    if os.environ.get("RAYTOP_DEBUG") == "1":
        output.echo_lines(traceback.format_exc().rstrip("\n").splitlines(), err=True)


def _os_error_line(exc: OSError) -> str:
    """``cannot write|read <file>: <strerror>``: a file that exists but cannot be read
    was being read; anything else (a missing folder, a read-only disk, a file where a
    folder should be) was on the way to a write."""
    filename = exc.filename if exc.filename is not None else exc.filename2
    reason = exc.strerror or str(exc)
    if filename is None:
        return "i/o error: " + one_line(reason, joined_by="; ")
    name = os.fsdecode(filename)
    unreadable = os.path.exists(name) and not os.access(name, os.R_OK)
    return f"cannot {'read' if unreadable else 'write'} {name}: {reason}"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """The one error line (``faces.output.fail``: made visible) and exit ``code``."""
    output.fail(message, code)


def resolved(address: str | None):
    """The cluster to use (``launch.workflow.resolve_target``); unreachable: one line, 2."""
    from raytop.launch.workflow import LaunchError, resolve_target

    try:
        return resolve_target(address)
    except LaunchError as exc:
        fail(str(exc))


def load_spec_or_fail(spec: str):
    """The run spec at ``spec`` (``launch.spec.load_spec``); a bad one: one line, 2."""
    from raytop.launch.spec import SpecError, load_spec

    try:
        return load_spec(spec)
    except SpecError as exc:
        fail(str(exc))


def launch_error(exc) -> None:
    """A ``launch.workflow.LaunchError`` as its one line, with the code its reason has."""
    from raytop.launch.workflow import CLUSTER_NOT_STARTED

    if exc.exit_code is not None:
        fail(str(exc), exc.exit_code)
    fail(str(exc), EXIT_CLUSTER_START if exc.reason == CLUSTER_NOT_STARTED else EXIT_USAGE)


def collector_for(target, experiments=None, thresholds=None, watch=False, storage=None,
                  unreachable_reason=None):  # fmt: skip
    """The collector every face reads, for ``target`` (None: no cluster). ``watch``: it is
    polled again and again (TUI, follow): watch local storage and poll remote storage
    between reads instead of re-reading every file. ``storage``: ``--storage`` roots
    (``storage_roots``), whose experiments are shown with their history from storage."""
    from raytop.pipeline.collect import SnapshotCollector

    if target is None:
        return SnapshotCollector(None, experiments=experiments, thresholds=thresholds,
                                 watch=watch, storage_roots=storage,
                                 unreachable_reason=unreachable_reason)  # fmt: skip
    return SnapshotCollector(
        target.address, embedded=target.embedded, experiments=experiments,
        thresholds=thresholds, watch=watch, storage_roots=storage,
    )  # fmt: skip


def storage_roots(values: tuple[str, ...]) -> list[str]:
    """``--storage`` values: a local folder (resolved) or a URI (``s3://…``, read through
    pyarrow; one that cannot be reached is a warning later, not an error). A local path
    that is missing, not a folder or not listable: one line naming it, exit 2."""
    from raytop.model.paths import is_uri, local_path

    roots = []
    for value in values:
        if not value.strip():
            fail("--storage: empty; give a folder of experiments (or one experiment's folder)")
        if is_uri(value):
            roots.append(value)
            continue
        path = os.path.realpath(os.path.expanduser(local_path(value)))
        if not os.path.exists(path):
            fail(f"--storage {value}: no such folder")
        if not os.path.isdir(path):
            fail(f"--storage {value}: not a folder (give a folder of experiments)")
        if not os.access(path, os.R_OK | os.X_OK):
            fail(f"--storage {value}: cannot be read (permission denied)")
        roots.append(path)
    return roots


def target_with_history(address: str | None, roots: list[str]):
    """(target, why none): with ``--storage`` roots no cluster is needed (history from
    storage): only a named or recorded one is tried (``launch.cluster.resolve_for_history``),
    and one that cannot be reached is no error. Without roots, ``resolved``."""
    if not roots:
        return resolved(address), None
    from raytop.launch.cluster import resolve_for_history

    return resolve_for_history(address)


def experiment_paths(experiments: tuple[str, ...]) -> list[tuple[str, None]] | None:
    """``--experiment`` values as collector input; None means "what raytop launched"."""
    from raytop.model.paths import is_uri

    if not experiments:
        return None
    chosen = []
    for path in experiments:
        if not is_uri(path):
            try:
                folder = Path(path).expanduser().resolve()
            except (OSError, RuntimeError) as exc:  # Python 3.11: a symlink loop is RuntimeError
                fail(f"--experiment {path}: cannot be resolved ({exc})")
            if not folder.is_dir():
                fail(f"--experiment {path}: no such folder")
            path = str(folder)
        chosen.append((path, None))
    return chosen


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
    "address": None, "refresh_s": 0.25, "stall_after": None, "read_only": False,
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


@dataclass(frozen=True)
class Mutation:
    """One thing ``--read-only`` refuses. ``surface`` "cli": ``spelled`` is a command line
    as typed (a command, then the flags that make it a change); "tui": a key, or a file
    the TUI writes."""

    surface: str
    spelled: str
    changes: str


# A stacks request changes no run, but it is no plain read: the ranks with the probe get a
# request in the cluster's KV store, ranks with no probe are paused for a moment by py-spy's
# ptrace attach (here, or by Ray's dashboard on their node), and the answers are written
# as a capture. Read-only refuses all of it, whichever ranks are on view.
STACKS_CHANGE = (
    "writes a stack request to the cluster's KV store (ranks with no probe: attaches py-spy, "
    "pausing each for a moment) and saves the answers under captures"
)
# Every change raytop can make, the one list read-only refuses (tests/integration/
# test_cli_options.py and tests/tui/test_read_only.py test each entry). Under read-only
# `raytop resume PATH` is refused at once, preview included: the TUI's Resume screen (u)
# previews read-only.
READ_ONLY_REFUSES = (
    Mutation("cli", "run", "launches a detached driver (and may start a cluster)"),
    Mutation("cli", "run --resume", "launches a driver that resumes the experiment"),
    Mutation("cli", "resume", "launches a driver that resumes the experiment"),
    Mutation("cli", "resume --yes", "launches a driver that resumes the experiment"),
    Mutation("cli", "stop", "stops the experiment's driver"),
    Mutation("cli", "stop --trial", "stops a trial"),
    Mutation("cli", "down", "stops the embedded cluster"),
    Mutation("cli", "status --stacks", STACKS_CHANGE),
    Mutation("tui", "x", "stops the experiment on view"),
    Mutation("tui", "t", "stops the highlighted trial"),
    Mutation("tui", "a", "resumes the previewed experiment"),
    Mutation("tui", "s", STACKS_CHANGE),
    Mutation("tui", "tui.log", "the TUI's log in $RAYTOP_HOME (read-only: /dev/null)"),
)


def _refusal(ctx: click.Context, params: dict) -> Mutation | None:
    """The most specific entry of ``READ_ONLY_REFUSES`` this invocation is, if any."""
    flags = {opt: params.get(p.name) for p in ctx.command.params for opt in p.opts}
    matches = [
        m for m in READ_ONLY_REFUSES
        if m.surface == "cli" and m.spelled.split()[0] == ctx.command.name
        and all(flags.get(flag) for flag in m.spelled.split()[1:])
    ]  # fmt: skip
    return max(matches, key=lambda m: len(m.spelled), default=None)


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
        refused = _refusal(ctx, params) if params["read_only"] else None
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
