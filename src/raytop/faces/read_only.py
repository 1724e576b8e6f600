"""What ``--read-only`` refuses: ``READ_ONLY_REFUSES``, the one list of every change raytop
can make (on the command line and in the TUI), and which entry a command line is."""

from __future__ import annotations

from dataclasses import dataclass

import click


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


def refusal(ctx: click.Context, params: dict) -> Mutation | None:
    """The most specific entry of ``READ_ONLY_REFUSES`` this invocation is, if any."""
    flags = {opt: params.get(p.name) for p in ctx.command.params for opt in p.opts}
    matches = [
        m for m in READ_ONLY_REFUSES
        if m.surface == "cli" and m.spelled.split()[0] == ctx.command.name
        and all(flags.get(flag) for flag in m.spelled.split()[1:])
    ]  # fmt: skip
    return max(matches, key=lambda m: len(m.spelled), default=None)
