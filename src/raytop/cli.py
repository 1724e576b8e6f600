"""The command line: ``raytop`` (attach the TUI), ``run``, ``status``, ``check``, ``down``.

Click wiring only: each command turns its options into calls of the launch workflow
(``launch.workflow``), the pipeline and the faces (``faces``), and their refusals into
one line and an exit code.

Exit codes are in ``faces.command_line.EXIT_CODES`` (``raytop --help``) and docs/schema.md;
``check`` has its own (``raytop.diagnose.check``). Errors are one line on stderr, never a traceback:
``RaytopGroup`` is the one guard that turns what escapes a command into that line.

The group's options (``GROUP_OPTIONS``) mean the same before or after the command name:
every command takes them, a value given after the name wins, and a command with no use
for one (``down --refresh 1``) accepts and ignores it (``faces.options``).
``READ_ONLY_REFUSES`` is the one list of what ``--read-only`` refuses (``faces.read_only``).

Each command imports the launch, pipeline and TUI modules it uses when it runs: they
weigh hundreds of milliseconds, which ``raytop --help`` and the other commands need not
pay.
"""

from __future__ import annotations

import sys

import click

from raytop.diagnose.check import EXIT_CODES_HELP
from raytop.faces import check as faces_check
from raytop.faces.command_line import (
    EXIT_CODES,
    EXIT_OK,
    EXIT_RUN_FAILED,
    PLAN_EXIT_CODES,
    RaytopGroup,
    collector_for,
    fail,
    launch_error,
    load_spec_or_fail,
    storage_roots,
    target_with_history,
)
from raytop.faces.options import (
    GROUP_OPTIONS,
    THEME_NAMES,
    TUI_META,
    FiniteFloat,
    address_option,
    ascii_option,
    experiment_option,
    group_options,
    no_tui_option,
    read_only_option,
    refresh_option,
    stall_option,
    storage_option,
    theme_option,
    tui_options,
)
from raytop.faces.output import confirm, echo_lines, say
from raytop.faces.progress import stderr_progress
from raytop.faces.read_only import READ_ONLY_REFUSES
from raytop.faces.status import print_status
from raytop.faces.terminal import NO_TUI_HINT, color_system_problem, tui_look, tui_unavailable
from raytop.faces.terminal import native_stderr_to_log as _native_stderr_to_log
from raytop.faces.text import (
    follow,
    resume_preview_lines,
    status_once,
    status_text,
)
from raytop.model.thresholds import Thresholds

# Importable from here too: tests and the docs name them as the CLI's.
__all__ = ["GROUP_OPTIONS", "READ_ONLY_REFUSES", "main", "status_text"]
info = say  # what raytop says about itself: one ``raytop: …`` line on stderr


def _theme_names() -> list[str]:  # --theme is checked against these (faces cannot ask tui)
    from raytop.tui.theming import available_themes  # heavy: loads Textual (~0.5 s)

    return [choice.theme.name for choice in available_themes()[0]]


THEME_NAMES.known = _theme_names


def _open_tui(
    collector, refresh_s: float, read_only: bool = False, own_first: bool = False
) -> None:
    """The TUI; without a terminal for it (a pipe, TERM=dumb), the plain status, exit 0.
    ``own_first``: the view of ``raytop run``, its experiment first."""
    if (why := tui_unavailable()) is not None:
        status_once(collector, why)
        return
    # heavy: Textual (~0.5 s) and the launch modules, only when the TUI starts
    from raytop.launch.control import ExperimentControls
    from raytop.tui.app import RaytopApp

    if (bad := color_system_problem()) is not None:
        fail(bad)
    look = tui_options(click.get_current_context(silent=True))
    look = tui_look(look["theme"], look["ascii_only"])
    controls = ExperimentControls(collector.address)
    app = RaytopApp(collector, refresh_s=refresh_s, read_only=read_only, controls=controls,
                    freeze_gc=True, own_first=own_first, **look)  # fmt: skip
    try:
        with _native_stderr_to_log(read_only):
            app.run()
    finally:
        collector.close()


@click.group(cls=RaytopGroup, invoke_without_command=True, epilog=EXIT_CODES)
@address_option
@refresh_option
@stall_option
@read_only_option
@theme_option
@ascii_option
@storage_option
@click.version_option(package_name="raytop")
@click.pass_context
def main(
    ctx: click.Context, address: str | None, refresh_s: float | None,
    stall_after: float | None, read_only: bool, theme: str | None, ascii_only: bool,
    storage: tuple[str, ...],
) -> None:  # fmt: skip
    """top for Ray Train and Ray Tune runs. Without a command: attach the TUI to the
    experiments raytop launched (quitting it leaves them running). Without a terminal
    (a pipe, TERM=dumb, kubectl exec without -t): the status, printed once.

    The options above mean the same after a command's name (which wins): every command
    takes them, and one with no use for an option ignores it."""
    if ctx.invoked_subcommand:
        return  # each command merges these values itself (``group_options``)
    ctx.meta[TUI_META] = {"theme": theme, "ascii_only": ascii_only}
    refresh_s = GROUP_OPTIONS["refresh_s"] if refresh_s is None else refresh_s
    roots = storage_roots(storage)
    target, why_none = target_with_history(address, roots)
    collector = collector_for(target, None, Thresholds.given(stall_after), watch=True,
                              storage=roots, unreachable_reason=why_none)  # fmt: skip
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
    new_name: bool, refresh_s: float, stall_after: float, read_only: bool, **_group,
) -> None:  # fmt: skip
    """Launch the sweep described by SPEC (TOML, see docs/spec.md) in a detached driver.

    An experiment folder that already holds a Tune experiment is never reused silently:
    --resume continues it, --new-name starts a fresh one beside it."""
    # at call time: the launch modules (psutil, subprocess, ~40 ms) stay out of `raytop --help`
    from raytop.launch.experiment_folder import existing_experiment
    from raytop.launch.workflow import renamed

    run_spec = load_spec_or_fail(spec)
    path = run_spec.experiment_path
    existing = existing_experiment(path)
    if existing is not None and existing.resumable and resume_existing:
        _resume(path, "skip", True, address, no_tui, refresh_s, stall_after)
        return
    if existing is not None:
        if not new_name:
            fail(existing.refusal)
        run_spec = renamed(run_spec)
        info(f"starting a new experiment '{run_spec.experiment.name}' beside the existing one")
    _launch_and_watch(run_spec, address, no_tui, force, refresh_s, stall_after)


def _launch_and_watch(run_spec, address, no_tui, force, refresh_s, stall_after,
                      errored: str | None = None) -> None:  # fmt: skip
    # at call time: the launch modules (psutil, subprocess, ~40 ms) stay out of `raytop --help`
    from raytop.launch.workflow import LaunchError, launch_run

    progress = stderr_progress()
    try:
        launched, target = launch_run(
            run_spec, address, force=force, errored=errored, progress=progress
        )
    except LaunchError as exc:
        progress.close()
        launch_error(exc)
    verb = "resumed" if errored else "launched"
    info(
        f"{verb} '{run_spec.experiment.name}' (driver pid {launched.pid}, "
        f"log {launched.log_path}) on {target.address}"
    )
    collector = collector_for(
        target, [(run_spec.experiment_path, launched.raytop_dir)], Thresholds.given(stall_after),
        watch=True,
    )  # fmt: skip
    if no_tui or (why := tui_unavailable()) is not None:
        if not no_tui:
            info(f"{why}: following as --no-tui; {NO_TUI_HINT}")
        try:
            ended_well = follow(collector, refresh_s, launched.log_path, progress)
        finally:
            collector.close()
        sys.exit(EXIT_OK if ended_well else EXIT_RUN_FAILED)
    _open_tui(collector, refresh_s, own_first=True)
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
    refresh_s: float, stall_after: float, read_only: bool, **_group,
) -> None:  # fmt: skip
    """Preview, then resume an interrupted experiment (Tuner.restore in a detached driver).

    Unfinished trials resume from their latest checkpoint; nothing is deleted. Refused
    at once under read-only (the TUI's Resume screen previews read-only)."""
    _resume(experiment_path, errored, yes, address, no_tui, refresh_s, stall_after)


def _resume(experiment_path, errored, yes, address, no_tui, refresh_s, stall_after) -> None:
    # at call time: the launch modules (psutil, subprocess, ~40 ms) stay out of `raytop --help`
    from raytop.launch.control import ControlError, plan_resume

    try:
        shown, run_spec = plan_resume(experiment_path, errored)
    except ControlError as exc:
        fail(str(exc))
    echo_lines(resume_preview_lines(shown))
    if not yes:
        if not sys.stdin.isatty():
            fail("resume needs confirmation: pass --yes")
        if not confirm("resume as shown?"):
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
    # at call time: the launch modules (psutil, subprocess, ~40 ms) stay out of `raytop --help`
    from raytop.launch.control import ControlError, stop_experiment, stop_target, stop_trial

    if trial_id is not None and not trial_id.strip():
        fail("--trial: empty; give a trial id (or leave --trial out to stop the experiment)")
    try:
        raytop_dir, what = stop_target(experiment_path, trial_id)
    except ControlError as exc:
        fail(str(exc))
    if not yes:
        if not sys.stdin.isatty():
            fail("stop needs confirmation: pass --yes")
        if not confirm(f"stop {what}?"):
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


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The snapshot as JSON (docs/schema.md).")
@click.option(
    "--stacks", is_flag=True,
    help="Also ask every rank for its Python stack (a request written to the cluster's "
    "KV store; a run with no probe: py-spy on this node, or Ray's dashboard's on another; "
    "refused under read-only), saved under the experiment's .raytop/captures.",
)  # fmt: skip
@click.option(
    "--native", is_flag=True,
    help="With --stacks: each rank's native stack too (py-spy on the workers, C/C++ frames).",
)  # fmt: skip
@click.option(
    "--flight-recorder", "flight_recorder", is_flag=True,
    help="Ask the ranks of NCCL runs raytop launched to dump PyTorch's Flight Recorder "
    "(through the dump pipes raytop set; read-only: only the dumps already on storage), "
    "and show who is missing from which collective.",
)  # fmt: skip
@experiment_option
@group_options
def status(
    as_json: bool, stacks: bool, native: bool, flight_recorder: bool,
    experiments: tuple[str, ...], address: str | None, stall_after: float,
    storage: tuple[str, ...], read_only: bool, **_group,
) -> None:  # fmt: skip
    """Print the snapshot the TUI shows, once. With --storage: also the experiments under
    each storage path, from storage alone when there is no cluster (exit 0)."""
    print_status(as_json, stacks, native, flight_recorder, experiments, address, stall_after,
                 storage, read_only)  # fmt: skip


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
    faces_check.check(experiments, waiting_after, teardown, address, stall_after)


@main.command(epilog="\b\n" + PLAN_EXIT_CODES)
@click.argument("spec")
@click.option(
    "--cluster", "cluster", default="current", show_default=True, metavar="current|NODES.toml",
    help="Plan on the live cluster, or on the node shapes described in a TOML file.",
)  # fmt: skip
@group_options
def plan(spec: str, cluster: str, address: str | None, **_group) -> None:
    """Can SPEC's sweep place, and how many trials run at once? (before launching it)"""
    # at call time: the launch modules (psutil, subprocess, ~40 ms) stay out of `raytop --help`
    from raytop.launch.planning import describe
    from raytop.launch.workflow import LaunchError, plan_for, resolve_target

    run_spec = load_spec_or_fail(spec)
    try:
        if cluster == "current":
            sweep = plan_for(run_spec, resolve_target(address))
        else:
            sweep = plan_for(run_spec, None, cluster_file=cluster)
    except LaunchError as exc:
        launch_error(exc)
    echo_lines(describe(sweep))
    sys.exit(sweep.exit_code)


@main.command()
@group_options
def themes(**_group) -> None:
    """List raytop's themes: the built-in ones and your own (reads only)."""
    from raytop.tui.theming import theme_listing  # heavy: loads Textual (~0.5 s)

    lines, problems = theme_listing()
    echo_lines(lines)
    for problem in problems:
        info(f"warning: {problem}")


@main.command()
@group_options
def down(**_group) -> None:
    """Stop the embedded cluster raytop started (never any other cluster)."""
    # at call time: launch.cluster (psutil, subprocess) stays out of `raytop --help`
    from raytop.launch.cluster import ClusterRecordUnproven, stop_embedded

    try:
        stopped = stop_embedded(progress=info)
    except ClusterRecordUnproven as exc:  # a reused pid: never signalled
        fail(str(exc))
    if stopped:
        info("embedded cluster stopped")
    else:
        info("no cluster started by raytop is recorded; nothing to stop")
