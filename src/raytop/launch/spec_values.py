"""The value checkers of a run spec, and the one-line error they all raise.

Each checker takes the file (``SpecFile``), where the value sits (``[section] key``) and
the value; it returns the value checked, or raises ``SpecError`` with one line that names
the file, the section and the key and shows what was given (docs/spec.md). Pure: reading
the TOML file (``read_toml``, bounded) is the only I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any, NoReturn

from raytop.jsonfile import DIRECTORY, MISSING, Unread, read_capped
from raytop.launch.toml_text import MAX_TOML_BYTES, TomlUnusable, parse_toml
from raytop.model.format import one_line
from raytop.model.resources import resource_name

# A storage path that starts with a scheme (``s3://``, ``gs://``, ``file://``).
URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class SpecError(Exception):
    """A spec that cannot be used; ``str(err)`` is the one-line message shown to the user."""


class SpecFile:
    """Carries the file label so every error starts the same way."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, where: str, message: str) -> NoReturn:
        raise SpecError(one_line(f"{self.label}: {where}: {message}", joined_by=" "))


def read_toml(path: Path, label: str) -> tuple[bytes, dict[str, Any]]:
    """The spec file's bytes and its TOML, read bounded (a regular file of at most
    ``MAX_TOML_BYTES``, never blocking on a FIFO) and parsed within ``toml_text``'s depth
    limit."""
    try:
        raw = read_capped(path, MAX_TOML_BYTES)
    except Unread as err:
        if err.kind == MISSING:
            raise SpecError(one_line(f"spec not found: {label}", joined_by=" ")) from None
        if err.what == DIRECTORY:
            raise SpecError(
                one_line(f"spec is a directory, not a file: {label}", joined_by=" ")
            ) from None
        raise SpecError(one_line(f"{label}: {err.reason}", joined_by=" ")) from None
    try:
        return raw, parse_toml(raw, label)
    except TomlUnusable as err:
        raise SpecError(str(err)) from None


def did_you_mean(word: str, choices: Any, fmt: str = "'{}'") -> str:
    """`` (did you mean 'x'?)`` for the closest choice (case-insensitive), else ``''``."""
    lowered = {str(c).lower(): str(c) for c in choices}
    match = difflib.get_close_matches(str(word).lower(), list(lowered), n=1)
    if not match:
        return ""
    return f" (did you mean {fmt.format(lowered[match[0]])}?)"


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_repr(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def shown(value: Any) -> str:
    """The value as TOML writes it, cut to 60 characters: messages stay one short line."""
    text = _toml_repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def described(value: Any) -> str:
    """The value and its TOML type, for wrong-type messages: ``'abc' (a string)``."""
    kind = _TYPE_NAMES.get(type(value), type(value).__name__)
    return f"{shown(value)} ({kind})"


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def integer(ctx: SpecFile, where: str, value: Any, minimum: int) -> int:
    expected = f"expected an integer >= {minimum}"
    if not is_int(value):
        ctx.fail(where, f"{expected}, got {described(value)}")
    if value < minimum:
        ctx.fail(where, f"{expected}, got {value}")
    return value


def ordered_bounds(ctx: SpecFile, where: str, kind: str, low: Any, high: Any) -> None:
    """A sampler's ``[low, high]`` (numbers already checked): low below high, and above 0
    for ``loguniform`` (a log scale has no 0). Shared by ``[param_space]`` and PBT's
    mutations, whose messages must stay the same (docs/RELIABILITY.md)."""
    if low >= high:
        ctx.fail(where, f"expected low < high, got [{shown(low)}, {shown(high)}]")
    if kind == "loguniform" and low <= 0:
        ctx.fail(where, f"expected low > 0 for a log scale, got {shown(low)}")


def boolean(ctx: SpecFile, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        ctx.fail(where, f"expected a boolean (true or false), got {described(value)}")
    return value


def string(ctx: SpecFile, where: str, value: Any) -> str:
    if not isinstance(value, str):
        ctx.fail(where, f"expected a string, got {described(value)}")
    if not value.strip():
        ctx.fail(where, "expected a non-empty string, got ''")
    return value


def one_of(ctx: SpecFile, where: str, value: Any, choices: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{c}'" for c in choices)
    if not isinstance(value, str):
        ctx.fail(where, f"expected one of {listed}, got {described(value)}")
    if value not in choices:
        ctx.fail(where, f"expected one of {listed}, got {value!r}" + did_you_mean(value, choices))
    return value


def resource_table(
    ctx: SpecFile, where: str, value: Any, *, for_ray_init: bool = False
) -> dict[str, float]:
    """A table of resource name -> number >= 0, by Ray's names (``cpu`` is ``CPU``).
    ``for_ray_init``: the custom resources of a cluster, where CPUs and GPUs have keys of
    their own."""
    if not isinstance(value, dict):
        ctx.fail(where, f"expected a table of resource name -> number, got {described(value)}")
    out: dict[str, float] = {}
    for name, amount in value.items():
        key_where = f"{where}.{name}"
        if not name.strip():
            ctx.fail(where, "resource names must be non-empty")
        canonical = resource_name(name)
        if for_ray_init and canonical in ("CPU", "GPU"):
            ctx.fail(key_where, f"use [cluster] num_{canonical.lower()}s instead")
        if not is_number(amount):
            ctx.fail(key_where, f"expected a number >= 0, got {described(amount)}")
        if amount < 0:
            ctx.fail(key_where, f"expected a number >= 0, got {shown(amount)}")
        if canonical in out:
            ctx.fail(key_where, f"{canonical!r} is given twice ({name!r} means {canonical!r})")
        out[canonical] = amount
    return out
