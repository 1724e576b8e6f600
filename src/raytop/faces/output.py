"""Where the command line meets the terminal: the only module of the CLI that writes.

Everything raytop prints may carry text from outside it (a trial id, a folder name, an
error line, a storage URI), so every write goes through ``model.visible`` here, one line
at a time: no control sequence reaches the terminal, a newline inside a name cannot start
a line of its own, and no credential is printed. JSON goes out strict
(``model.strict_json``). ``tests/unit/test_output_edge.py`` fails if any other module
of raytop writes with ``click.echo``, ``print`` or ``click.confirm``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, NoReturn

import click

from raytop.model import strict_json
from raytop.model.visible import visible, visible_lines


def echo_lines(lines: Iterable[str], err: bool = False) -> None:
    """``lines`` on stdout (``err``: stderr), each made visible: one line each."""
    click.echo("\n".join(visible_lines(list(lines))), err=err)


def echo_text(text: str) -> None:
    """A face's text whose lines the face already made visible (``faces.text``): its own
    newlines are the only ones in it."""
    click.echo(text)


def echo_json(data: Any) -> None:
    """``data`` (``Snapshot.to_json``'s shape, already strict) as strict JSON text."""
    click.echo(strict_json.dumps(data))


def say(message: str) -> None:
    """What raytop says about itself: one ``raytop: …`` line on stderr."""
    click.echo(f"raytop: {visible(message)}", err=True)


def fail(message: str, code: int) -> NoReturn:
    """The one error line, ``raytop: error: …`` on stderr, and exit with ``code``."""
    click.echo(f"raytop: error: {visible(message)}", err=True)
    sys.exit(code)


def confirm(question: str) -> bool:
    """Ask ``question`` (made visible: it names what will change) on the terminal; no is
    the default."""
    return click.confirm(visible(question), default=False)
