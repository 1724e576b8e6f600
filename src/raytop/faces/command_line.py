"""The command line as a face: its exit codes, the one guard (``RaytopGroup``) that turns
whatever escapes a command into one line on stderr, and the helpers every command uses to
turn its options into a spec, a cluster and a collector (a refusal: one line, exit 2).
The shared options are ``faces.options``; what ``--read-only`` refuses,
``faces.read_only``. ``raytop.cli`` declares the commands with these. The launch and
pipeline modules are imported when a command calls for them: they weigh hundreds of
milliseconds, which ``raytop --help`` need not pay.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

import click

from raytop.faces import output
from raytop.model.format import one_line
from raytop.model.paths import is_uri, local_path
from raytop.wire.gcs import RayLacks
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
        except (RayUnsupported, RayLacks) as exc:  # a refusal, not a bug: one line, exit 2
            fail(str(exc))  # RayLacks: a command this Ray lacks a call for (wire.capabilities)
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
    # at call time: launch.workflow (psutil, subprocess, ~40 ms) stays out of `raytop --help`
    from raytop.launch.workflow import LaunchError, resolve_target

    try:
        return resolve_target(address)
    except LaunchError as exc:
        fail(str(exc))


def load_spec_or_fail(spec: str):
    """The run spec at ``spec`` (``launch.spec.load_spec``); a bad one: one line, 2."""
    # at call time: launch.spec (~20 ms) stays out of `raytop --help`
    from raytop.launch.spec import SpecError, load_spec

    try:
        return load_spec(spec)
    except SpecError as exc:
        fail(str(exc))


def launch_error(exc) -> None:
    """A ``launch.workflow.LaunchError`` as its one line, with the code its reason has."""
    # at call time: launch.workflow (psutil, subprocess, ~40 ms) stays out of `raytop --help`
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
    # at call time: the pipeline (pickle, ssl, http, ~0.1 s) stays out of `raytop --help`
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
    # at call time: launch.cluster (psutil, subprocess) stays out of `raytop --help`
    from raytop.launch.cluster import resolve_for_history

    return resolve_for_history(address)


def experiment_paths(experiments: tuple[str, ...]) -> list[tuple[str, None]] | None:
    """``--experiment`` values as collector input; None means "what raytop launched"."""
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
