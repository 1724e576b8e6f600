"""The command line: ``raytop`` (attach the TUI), ``run``, ``status``, ``check``, ``down``.

Exit codes are in ``EXIT_CODES`` (shown by ``raytop --help``) and docs/schema.md; ``check``
has its own (``raytop.diagnose.check``). Errors are one line on stderr, never a traceback:
``RaytopGroup`` is the one guard that turns what escapes a command into that line.

The group's options (``GROUP_OPTIONS``) mean the same before or after the command name:
every command takes them, a value given after the name wins, and a command with no use
for one (``down --refresh 1``) accepts and ignores it. ``READ_ONLY_REFUSES`` is the one
list of what ``--read-only`` refuses.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import click

from raytop.diagnose.check import EXIT_CODES_HELP
from raytop.model import ExperimentStatus, Severity, Snapshot
from raytop.model.format import fmt_value

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_CLUSTER_START = 0, 1, 2, 3
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
  2  bad usage or input: spec errors, a bad option value, unreachable --address,
     refused under --read-only, a file that cannot be read or written, no terminal
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
            fail(_one_line(exc.format_message()) + where, exc.exit_code)
        except click.ClickException as exc:
            fail(_one_line(exc.format_message()), exc.exit_code)
        except click.Abort:
            fail("aborted; nothing more was done", EXIT_RUN_FAILED)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of our output went away
                sys.exit(EXIT_RUN_FAILED)
            _debug_traceback()
            fail(_os_error_line(exc))
        except Exception as exc:  # the guard of last resort: a bug, said in one line
            _debug_traceback()
            fail(f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", EXIT_RUN_FAILED)
        sys.exit(returned if isinstance(returned, int) else EXIT_OK)


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def _debug_traceback() -> None:
    if os.environ.get("RAYTOP_DEBUG") == "1":
        traceback.print_exc()


def _os_error_line(exc: OSError) -> str:
    """``cannot write|read <file>: <strerror>``: a file that exists but cannot be read
    was being read; anything else (a missing folder, a read-only disk, a file where a
    folder should be) was on the way to a write."""
    filename = exc.filename if exc.filename is not None else exc.filename2
    reason = exc.strerror or str(exc)
    if filename is None:
        return f"i/o error: {_one_line(reason)}"
    name = os.fsdecode(filename)
    unreadable = os.path.exists(name) and not os.access(name, os.R_OK)
    return f"cannot {'read' if unreadable else 'write'} {name}: {reason}"


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"raytop: error: {message}", err=True)
    sys.exit(code)


def info(message: str) -> None:
    click.echo(f"raytop: {message}", err=True)


def _resolve_target(address: str | None):
    from raytop.launch.cluster import resolve
    from raytop.wire.gcs import ClusterUnreachable
    from raytop.wire.version import RayUnsupported

    try:
        return resolve(address)
    except (ClusterUnreachable, RayUnsupported) as exc:
        fail(str(exc))


def _collector(target, experiments=None, thresholds=None, watch=False):
    """``watch``: the collector is polled again and again (TUI, follow): watch local
    storage and poll remote storage between reads instead of re-reading every file."""
    from raytop.pipeline.collect import SnapshotCollector

    if target is None:
        return SnapshotCollector(None, experiments=experiments, thresholds=thresholds, watch=watch)
    return SnapshotCollector(
        target.address, embedded=target.embedded, experiments=experiments,
        thresholds=thresholds, watch=watch,
    )  # fmt: skip


def _experiment_paths(experiments: tuple[str, ...]) -> list[tuple[str, None]] | None:
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


def _open_tui(collector, refresh_s: float, read_only: bool = False) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("no terminal for the TUI: use `raytop status`, or `kubectl exec -it` / `ssh -t`")
    from raytop.launch.control import ExperimentControls
    from raytop.tui.app import RaytopApp

    controls = ExperimentControls(collector.address)
    app = RaytopApp(collector, refresh_s=refresh_s, read_only=read_only, controls=controls)
    with _native_stderr_to_log(read_only):
        app.run()


def _stderr_sink(read_only: bool):
    """Where fd 2 goes while the TUI runs: ``$RAYTOP_HOME/tui.log`` (the folder created if
    need be); ``/dev/null`` under read-only (it writes no file) or when the home cannot
    be written (the TUI must still open)."""
    from raytop.home import raytop_home

    if not read_only:
        try:
            home = raytop_home()
            home.mkdir(parents=True, exist_ok=True)
            return open(home / "tui.log", "ab")  # noqa: SIM115 (the caller closes it)
        except OSError:
            pass
    return open(os.devnull, "ab")  # noqa: SIM115


@contextlib.contextmanager
def _native_stderr_to_log(read_only: bool = False):
    """Ray's C++ GCS client logs straight to fd 2 ("Failed to connect to GCS…"), and fd 2
    is the terminal Textual draws on. While the TUI runs, Textual gets a duplicate of the
    terminal and fd 2 goes to ``_stderr_sink``."""
    terminal_fd = os.dup(2)
    original = sys.__stderr__
    sys.__stderr__ = os.fdopen(terminal_fd, "w", buffering=1, closefd=False)
    with _stderr_sink(read_only) as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(terminal_fd, 2)
            os.close(terminal_fd)
            sys.__stderr__ = original


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


# The group's options and the value a command gets when neither position sets one.
GROUP_OPTIONS = {"address": None, "refresh_s": 0.25, "stall_after": 60.0, "read_only": False}

address_option = click.option(
    "--address", type=Address(), metavar="HOST:PORT|auto",
    help="Ray cluster (GCS) address; default RAY_ADDRESS, else the cluster raytop started, "
    "else the one running on this machine.",
)  # fmt: skip
refresh_option = click.option(
    "--refresh", "refresh_s", type=FiniteFloat(0.1), metavar="SECONDS",
    help=f"Seconds between snapshots.  [default: {GROUP_OPTIONS['refresh_s']}]",
)  # fmt: skip


experiment_option = click.option(
    "--experiment", "experiments", multiple=True, metavar="PATH",
    help="An experiment folder to include (repeatable); default: what raytop launched.",
)  # fmt: skip
stall_option = click.option(
    "--stall-after", type=FiniteFloat(0), metavar="SECONDS",
    help="A rank waiting in report this long for another is a stall.  "
    f"[default: {GROUP_OPTIONS['stall_after']:g}]",
)  # fmt: skip
read_only_option = click.option(
    "--read-only", is_flag=True, envvar="RAYTOP_READ_ONLY",
    help="Refuse anything that changes a run or writes a file: run, resume, stop, down, "
    "status --stacks; in the TUI x, t, a, s (also RAYTOP_READ_ONLY=1).",
)  # fmt: skip
GROUP_OPTION_DECORATORS = (address_option, refresh_option, stall_option, read_only_option)


@dataclass(frozen=True)
class Mutation:
    """One thing ``--read-only`` refuses. ``surface`` "cli": ``spelled`` is a command line
    as typed (a command, then the flags that make it a change); "tui": a key, or a file
    the TUI writes."""

    surface: str
    spelled: str
    changes: str


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
    Mutation("cli", "status --stacks", "writes a stack request to the cluster's KV store"),
    Mutation("tui", "x", "stops the experiment on view"),
    Mutation("tui", "t", "stops the highlighted trial"),
    Mutation("tui", "a", "resumes the previewed experiment"),
    Mutation("tui", "s", "writes a stack request to the cluster's KV store"),
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
            if name == "read_only":
                params[name] = bool(params.get(name) or root.get(name))
            elif params.get(name) is None:
                given = root.get(name)
                params[name] = default if given is None else given
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


@click.group(cls=RaytopGroup, invoke_without_command=True, epilog=EXIT_CODES)
@address_option
@refresh_option
@stall_option
@read_only_option
@click.version_option(package_name="raytop")
@click.pass_context
def main(
    ctx: click.Context, address: str | None, refresh_s: float | None,
    stall_after: float | None, read_only: bool,
) -> None:  # fmt: skip
    """top for Ray Train and Ray Tune runs. Without a command: attach the TUI to the
    experiments raytop launched (quitting it leaves them running).

    The options above mean the same after a command's name (which wins): every command
    takes them, and one with no use for an option ignores it."""
    from raytop.model.thresholds import Thresholds

    if ctx.invoked_subcommand:
        return  # each command merges these values itself (``group_options``)
    refresh_s = GROUP_OPTIONS["refresh_s"] if refresh_s is None else refresh_s
    stall_after = GROUP_OPTIONS["stall_after"] if stall_after is None else stall_after
    collector = _collector(_resolve_target(address), None, Thresholds(stall_after), watch=True)
    _open_tui(collector, refresh_s, read_only)


@main.command()
@click.argument("spec")
@no_tui_option
@click.option("--force", is_flag=True, help="Launch even if the plan says it can never run.")
@click.option(
    "--resume",
    "resume_existing",
    is_flag=True,
    help="The experiment folder exists: resume it (as `raytop resume`).",
)
@click.option(
    "--new-name",
    is_flag=True,
    help="The experiment folder exists: start a fresh one beside it, name + time.",
)
@group_options
def run(
    spec: str, address: str | None, no_tui: bool, force: bool, resume_existing: bool,
    new_name: bool, refresh_s: float, stall_after: float, read_only: bool,
) -> None:  # fmt: skip
    """Launch the sweep described by SPEC (TOML, see docs/spec.md) in a detached driver.

    An experiment folder that already holds a Tune experiment is never reused silently:
    --resume continues it, --new-name starts a fresh one beside it."""
    from raytop.launch.control import holds_tune_experiment, train_runs_with_checkpoints
    from raytop.launch.spec import SpecError, load_spec

    try:
        run_spec = load_spec(spec)
    except SpecError as exc:
        fail(str(exc))
    path = run_spec.experiment_path
    if holds_tune_experiment(path):
        if resume_existing:
            _resume(path, "skip", True, address, no_tui, refresh_s, stall_after)
            return
        refusal = (
            f"{path} already holds an experiment: `raytop resume {path}` (or run --resume) "
            "continues it, run --new-name starts a fresh one beside it; nothing was changed"
        )
    elif runs := train_runs_with_checkpoints(path):
        # No Tune state to resume, but a new sweep's Train runs would take these names and
        # silently resume from their checkpoints (RAY_NOTES b).
        refusal = (
            f"{path} holds Train runs with checkpoints ({', '.join(runs[:3])}) but no Tune "
            "experiment to resume: new trials would resume from them; run --new-name starts "
            "a fresh experiment beside it; nothing was changed"
        )
    else:
        refusal = None
    if refusal is not None:
        if not new_name:
            fail(refusal)
        run_spec = _renamed(run_spec)
        info(f"starting a new experiment '{run_spec.experiment.name}' beside the existing one")
    _launch_and_watch(run_spec, address, no_tui, force, refresh_s, stall_after)


def _renamed(run_spec):
    from raytop.launch.driver import with_experiment

    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{run_spec.experiment.name}-{stamp}"
    return with_experiment(run_spec, name, run_spec.experiment.storage_path)


def _launch_and_watch(run_spec, address, no_tui, force, refresh_s, stall_after,
                      errored: str | None = None) -> None:  # fmt: skip
    from raytop.launch.cluster import start_embedded
    from raytop.launch.driver import launch
    from raytop.launch.preflight import preflight
    from raytop.launch.spec import SpecError
    from raytop.model.thresholds import Thresholds
    from raytop.process_identity import driver_alive
    from raytop.rundir import raytop_dir_for
    from raytop.wire.gcs import ClusterUnreachable

    raytop_dir = raytop_dir_for(run_spec.experiment_path, run_spec.experiment.name)
    pid, alive = driver_alive(raytop_dir)
    if alive:
        fail(
            f"experiment '{run_spec.experiment.name}' is already running (driver pid {pid}); "
            "attach with `raytop`"
        )
    try:
        # Before the plan and any cluster: an entrypoint that cannot import is one line,
        # and nothing was started for it. launch() preflights again (it is idempotent).
        preflight(run_spec)
    except SpecError as exc:
        fail(str(exc))
    target = _resolve_target(address)
    if errored is None:
        _check_plan(run_spec, target, force)
    if target is None:
        try:
            target = start_embedded(run_spec.cluster, progress=info)
        except ClusterUnreachable as exc:
            fail(str(exc), EXIT_CLUSTER_START)
    elif target.embedded:
        _warn_if_cluster_differs(target, run_spec)
    try:
        launched = launch(run_spec, target, errored=errored)  # preflight first (SpecError)
    except SpecError as exc:
        fail(str(exc))
    verb = "resumed" if errored else "launched"
    info(
        f"{verb} '{run_spec.experiment.name}' (driver pid {launched.pid}, "
        f"log {launched.log_path}) on {target.address}"
    )
    collector = _collector(
        target, [(run_spec.experiment_path, launched.raytop_dir)], Thresholds(stall_after),
        watch=True,
    )  # fmt: skip
    if no_tui:
        sys.exit(_follow(collector, refresh_s, launched.log_path))
    _open_tui(collector, refresh_s)
    info("the run keeps going; `raytop` re-attaches")


@main.command()
@click.argument("experiment_path")
@click.option("--errored", type=click.Choice(["resume", "restart", "skip"]), default="skip",
              show_default=True,
              help="Errored trials: resume from their checkpoint, restart from scratch under a "
                   "new trial id, or leave them in ERROR.")  # fmt: skip
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@no_tui_option
@group_options
def resume(
    experiment_path: str, errored: str, yes: bool, address: str | None, no_tui: bool,
    refresh_s: float, stall_after: float, read_only: bool,
) -> None:  # fmt: skip
    """Preview, then resume an interrupted experiment (Tuner.restore in a detached driver).

    Unfinished trials resume from their latest checkpoint; nothing is deleted. Refused
    at once under read-only (the TUI's Resume screen previews read-only)."""
    _resume(experiment_path, errored, yes, address, no_tui, refresh_s, stall_after)


def _resume(experiment_path, errored, yes, address, no_tui, refresh_s, stall_after) -> None:
    from raytop.launch.control import ControlError, plan_resume

    try:
        shown, run_spec = plan_resume(experiment_path, errored)
    except ControlError as exc:
        fail(str(exc))
    click.echo(f"resume {shown.path} (was {shown.status}); errored trials: {errored}")
    click.echo(f"  {'trial':<14} {'status':<11} {'latest checkpoint':<44} action")
    for row in shown.rows:
        click.echo(f"  {row.trial_id:<14} {row.status:<11} {row.checkpoint:<44} {row.action}")
    for warning in shown.warnings:
        click.echo(f"  warning: {warning}")
    if not yes:
        if not sys.stdin.isatty():
            fail("resume needs confirmation: pass --yes")
        if not click.confirm("resume as shown?", default=False):
            info("nothing was changed")
            return
    _launch_and_watch(run_spec, address, no_tui, False, refresh_s, stall_after, errored=errored)


@main.command()
@click.argument("experiment_path", required=False)
@click.option(
    "--trial", "trial_id", metavar="ID", help="Stop only this trial (at its next result)."
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@group_options
def stop(experiment_path: str | None, trial_id: str | None, yes: bool, **_group) -> None:
    """Stop gracefully: the whole experiment (its driver saves state and exits; it can be
    resumed) or one trial. Nothing is deleted."""
    from raytop.home import registered_experiments
    from raytop.launch.control import ControlError, stop_experiment, stop_trial
    from raytop.process_identity import driver_alive, driver_identity_problem
    from raytop.rundir import RAYTOP_DIR_NAME

    if trial_id is not None and not trial_id.strip():
        fail("--trial: empty; give a trial id (or leave --trial out to stop the experiment)")
    if experiment_path:
        experiment_path = str(Path(experiment_path).expanduser().resolve())
        raytop_dir = Path(experiment_path) / RAYTOP_DIR_NAME
    else:
        running = [e for e in registered_experiments()
                   if driver_alive(Path(e["raytop_dir"]))[1]]  # fmt: skip
        if len(running) != 1:
            fail(f"{len(running)} experiments are running: name the one to stop")
        experiment_path, raytop_dir = running[0]["path"], Path(running[0]["raytop_dir"])
    if trial_id is not None:
        _check_trial_id(experiment_path, raytop_dir, trial_id)
    if not driver_alive(raytop_dir)[1]:
        fail(
            driver_identity_problem(raytop_dir)
            or f"{raytop_dir.parent}: its driver is not running here; nothing to stop"
        )
    what = f"trial {trial_id} of {raytop_dir.parent.name}" if trial_id else raytop_dir.parent.name
    if not yes:
        if not sys.stdin.isatty():
            fail("stop needs confirmation: pass --yes")
        if not click.confirm(f"stop {what}?", default=False):
            info("nothing was changed")
            return
    try:
        if trial_id:
            stop_trial(raytop_dir, trial_id)
            info(f"trial {trial_id} stops at its next result (its checkpoints are kept)")
            return
        stopped = stop_experiment(raytop_dir, progress=info)
    except ControlError as exc:
        fail(str(exc))
    if not stopped:
        fail("the driver is still saving after 120 s; it keeps going", 1)
    info(f"stopped {what}; resume it with `raytop resume {raytop_dir.parent}`")


def _check_trial_id(experiment_path: str, raytop_dir: Path, trial_id: str) -> None:
    """A stop for a trial the experiment does not have would be accepted and do nothing:
    refuse it, naming a few the experiment has (a remote experiment's ``raytop_dir`` is
    under $RAYTOP_HOME, so the path is given apart)."""
    from raytop.sources.tune_dir import ExperimentReader

    experiment = ExperimentReader(experiment_path, raytop_dir).read()
    known = [t.trial_id for t in experiment.trials]
    if trial_id in known:
        return
    if not known:
        fail(f"--trial {trial_id}: {experiment_path} has no trials recorded yet")
    shown = ", ".join(known[:5]) + (f", … ({len(known)} in all)" if len(known) > 5 else "")
    fail(f"--trial {trial_id}: no such trial in {experiment.name} (its trials: {shown})")


def _plan_for(run_spec, target, cluster_file: str | None = None):
    """The capacity plan on the named cluster file, the live cluster, or the embedded one
    ``run`` would start."""
    from raytop.launch.planning import (
        nodes_from_cluster,
        nodes_from_file,
        nodes_from_spec,
        plan_sweep,
    )
    from raytop.launch.spec import SpecError
    from raytop.wire.gcs import ClusterUnreachable, GcsReader

    if cluster_file:
        try:
            return plan_sweep(run_spec, nodes_from_file(Path(cluster_file)), cluster_file)
        except SpecError as exc:
            fail(str(exc))
    if target is not None:
        try:
            nodes = nodes_from_cluster(GcsReader(target.address).nodes())
            return plan_sweep(run_spec, nodes, f"the cluster at {target.address}")
        except ClusterUnreachable as exc:
            fail(str(exc))
    return plan_sweep(run_spec, nodes_from_spec(run_spec), "the embedded cluster of [cluster]")


def _check_plan(run_spec, target, force: bool) -> None:
    """Show the plan; refuse what can never run (exit 12) or would deadlock (13)."""
    from raytop.diagnose.plan import DEADLOCK, NEVER_PLACEABLE
    from raytop.launch.planning import describe

    sweep = _plan_for(run_spec, target)
    for line in describe(sweep):
        info(line)
    verdict = sweep.verdict_plan
    if verdict.verdict in (NEVER_PLACEABLE, DEADLOCK) and not force:
        fix = f"; {verdict.suggestions[0]}" if verdict.suggestions else ""
        fail(
            f"refusing to launch: {verdict.verdict.replace('_', ' ')}: {verdict.reasons[0]}{fix} "
            "(or --force)",
            verdict.exit_code,
        )


def _warn_if_cluster_differs(target, run_spec) -> None:
    """A reused embedded cluster keeps the resources it was started with."""
    from raytop.wire.gcs import ClusterUnreachable, GcsReader

    wanted = {"CPU": run_spec.cluster.num_cpus, "GPU": run_spec.cluster.num_gpus}
    try:
        nodes = GcsReader(target.address).nodes()
    except ClusterUnreachable:
        return
    have = {r: sum(n["resources_total"].get(r, 0.0) for n in nodes if n["alive"]) for r in wanted}
    differ = [f"{r} {have[r]:g} (spec: {n})" for r, n in wanted.items() if n is not None
              and have[r] != n]  # fmt: skip
    if differ:
        info(
            f"reusing the embedded cluster at {target.address} with {', '.join(differ)}; "
            "`raytop down` first to start one with the spec's [cluster]"
        )


def progress_line(snapshot: Snapshot) -> str:
    """One line that changes exactly when something a user cares about changes."""
    parts = []
    for exp in snapshot.experiments:
        counts = " ".join(f"{n} {s}" for s, n in sorted(exp.status_counts().items()))
        best = ""
        if exp.metric:
            scored = [t for t in exp.trials if isinstance(t.metrics.get(exp.metric), (int, float))]
            if scored:
                pick = min if exp.mode == "min" else max
                top = pick(scored, key=lambda t: t.metrics[exp.metric])
                best = f" | best {exp.metric}={fmt_value(top.metrics[exp.metric])} ({top.trial_id})"
        iters = sum(t.iterations for t in exp.trials)
        parts.append(f"{exp.name} {exp.status} | trials: {counts or 'none yet'} | "
                     f"results {iters}{best}")  # fmt: skip
    if not snapshot.cluster.connected:
        parts.append(f"cluster DISCONNECTED ({snapshot.cluster.error})")
    for finding in snapshot.findings:
        if finding.severity == Severity.ERROR:
            parts.append(f"{finding.kind}: {finding.message}")
    return " | ".join(parts)


def _follow(collector, refresh_s: float, log_path: Path) -> int:
    """``run --no-tui``: print on change until the driver has ended."""
    last = None
    try:
        while True:
            snapshot = collector.collect()
            line = progress_line(snapshot)
            if line != last:
                click.echo(f"{time.strftime('%H:%M:%S')} {line}", nl=True)
                last = line
            exp = snapshot.experiments[0]
            if exp.status not in (ExperimentStatus.RUNNING, ExperimentStatus.STARTING):
                break
            time.sleep(refresh_s)
    except KeyboardInterrupt:
        info("stopped watching; the run keeps going; `raytop` re-attaches")
        return EXIT_OK
    if exp.all_terminated and not any(f.severity == Severity.ERROR for f in snapshot.findings):
        return EXIT_OK
    if not exp.trials:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(empty)"]
        info(f"the driver ended before any trial started; last log line: {tail[0]}")
    info(f"experiment ended {exp.status}; driver log: {log_path}")
    return EXIT_RUN_FAILED


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The snapshot as JSON (docs/schema.md).")
@click.option(
    "--stacks", is_flag=True,
    help="Also ask every rank for its Python stack (a request written to the cluster's "
    "KV store: refused under read-only).",
)  # fmt: skip
@experiment_option
@group_options
def status(
    as_json: bool, stacks: bool, experiments: tuple[str, ...], address: str | None,
    stall_after: float, **_group,
) -> None:  # fmt: skip
    """Print the snapshot the TUI shows, once."""
    from raytop.model.thresholds import Thresholds

    collector = _collector(
        _resolve_target(address), _experiment_paths(experiments), Thresholds(stall_after)
    )
    snapshot = collector.request_stacks() if stacks else collector.collect()
    if as_json:
        click.echo(json.dumps(snapshot.to_json(), indent=2, default=str))
        return
    click.echo(status_text(snapshot))


@main.command(epilog="\b\n" + EXIT_CODES_HELP)
@experiment_option
@click.option(
    "--waiting-after", type=FiniteFloat(0), default=300.0, show_default=True,
    metavar="SECONDS", help="A placeable group pending this long is reported (code 13).",
)  # fmt: skip
@click.option(
    "--teardown", is_flag=True,
    help="Instead: is everything a resume needs on storage? (0 safe, 14 not yet)",
)  # fmt: skip
@group_options
def check(
    experiments: tuple[str, ...], waiting_after: float, teardown: bool, address: str | None,
    stall_after: float, **_group,
) -> None:  # fmt: skip
    """Exit with a code that says whether training is healthy (one line per finding).

    Usable as a Kubernetes liveness or readiness command."""
    from raytop.diagnose.check import CLUSTER_UNREACHABLE, exit_code
    from raytop.launch.cluster import resolve
    from raytop.model.thresholds import Thresholds
    from raytop.wire.gcs import ClusterUnreachable
    from raytop.wire.version import RayUnsupported

    if teardown:
        sys.exit(_check_teardown(experiments))
    try:
        target = resolve(address)
    except RayUnsupported as exc:
        fail(str(exc))
    except ClusterUnreachable as exc:
        click.echo(f"cluster_unreachable: {exc}")
        sys.exit(CLUSTER_UNREACHABLE)
    thresholds = Thresholds(stall_after_s=stall_after, waiting_after_s=waiting_after)
    snapshot = _collector(target, _experiment_paths(experiments), thresholds).collect()
    for finding in snapshot.findings:
        click.echo(f"{finding.kind} {finding.subject}: {finding.message}")
    code = exit_code(snapshot.findings)
    if not snapshot.findings:
        runs = snapshot.all_runs()
        click.echo(f"healthy: {len(snapshot.experiments)} experiment(s), {len(runs)} Train run(s)")
    sys.exit(code)


def status_text(snapshot: Snapshot) -> str:
    """The snapshot for a human without a TUI: cluster, trials, findings."""
    from raytop.model.format import fmt_duration, fmt_params, varying_keys

    c = snapshot.cluster
    if c.connected:
        usage = ", ".join(
            f"{r} {fmt_value(c.used(r))}/{fmt_value(c.total(r))}" for r in ("CPU", "GPU")
        )
        where = f"{c.address}{' (embedded)' if c.embedded else ''}"
        lines = [f"cluster {where}: {c.alive_nodes} node(s), {usage}, Ray {c.ray_version}"]
    else:
        lines = [f"cluster DISCONNECTED: {c.error}"]
    for exp in snapshot.experiments:
        lines.append(f"experiment {exp.name} {exp.status} ({exp.path})")
        lines += [f"  warning: {w}" for w in exp.warnings]
        swept = varying_keys([t.config for t in exp.trials])
        for t in exp.trials:
            metric = fmt_value(t.metrics.get(exp.metric)) if exp.metric else ""
            elapsed, params = fmt_duration(t.elapsed_s), fmt_params(t.config, swept)
            lines.append(f"  {t.trial_id:<14} {t.status:<10} {metric:>10} iter {t.iterations:<4} "
                         f"{elapsed:>6}  {params}")  # fmt: skip
    if not snapshot.experiments:
        lines.append("no experiments (launch one with `raytop run SPEC`)")
    lines += [f"warning: {w}" for w in snapshot.warnings]
    lines += [f"{f.severity.upper()} {f.kind} {f.subject}: {f.message}" for f in snapshot.findings]
    return "\n".join(lines)


def _check_teardown(experiments: tuple[str, ...]) -> int:
    """``check --teardown``: storage only, no cluster needed (it may already be gone)."""
    from raytop.diagnose.check import TEARDOWN_UNSAFE
    from raytop.diagnose.teardown import teardown_problems
    from raytop.pipeline.collect import default_experiments
    from raytop.sources.checkpoints import teardown_facts
    from raytop.sources.storage import Storages
    from raytop.sources.tune_dir import ExperimentReader

    registry: list[str] = []  # what is wrong with the list of launched experiments
    chosen = _experiment_paths(experiments) or default_experiments(registry)
    if not chosen and not registry:
        fail("no experiment to check: name one with --experiment PATH")
    # An experiment left out of an unreadable list is one nobody checked: never "safe".
    problems = [f"{w}: name the experiments with --experiment PATH" for w in registry]
    for path, raytop_dir in chosen:
        storages = Storages()  # local folders and remote (pyarrow) storage alike
        # Safe only on positive evidence: Tune's state read as valid (``state_read``),
        # every snapshot parsed; torn, wrong-shape, unreachable or unknown is unsafe.
        experiment = ExperimentReader(path, raytop_dir, storages).read(require_state=True)
        problems += teardown_problems(teardown_facts(experiment, storages))
    for line in problems:
        click.echo(f"teardown_unsafe {line}")
    if not problems:
        click.echo(f"safe to tear down: {len(chosen)} experiment(s) complete on storage")
    return TEARDOWN_UNSAFE if problems else 0


@main.command(epilog="\b\n" + PLAN_EXIT_CODES)
@click.argument("spec")
@click.option(
    "--cluster", "cluster", default="current", show_default=True, metavar="current|NODES.toml",
    help="Plan on the live cluster, or on the node shapes described in a TOML file.",
)  # fmt: skip
@group_options
def plan(spec: str, cluster: str, address: str | None, **_group) -> None:
    """Can SPEC's sweep place, and how many trials run at once? (before launching it)"""
    from raytop.launch.planning import describe
    from raytop.launch.spec import SpecError, load_spec

    try:
        run_spec = load_spec(spec)
    except SpecError as exc:
        fail(str(exc))
    if cluster == "current":
        sweep = _plan_for(run_spec, _resolve_target(address))
    else:
        sweep = _plan_for(run_spec, None, cluster_file=cluster)
    click.echo("\n".join(describe(sweep)))
    sys.exit(sweep.exit_code)


@main.command()
@group_options
def down(**_group) -> None:
    """Stop the embedded cluster raytop started (never any other cluster)."""
    from raytop.launch.cluster import ClusterRecordUnproven, stop_embedded

    try:
        stopped = stop_embedded(progress=info)
    except ClusterRecordUnproven as exc:  # a reused pid: never signalled
        fail(str(exc))
    if stopped:
        info("embedded cluster stopped")
    else:
        info("no cluster started by raytop is recorded; nothing to stop")
