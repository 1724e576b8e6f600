"""The TOML raytop is given (a run spec, a NODES.toml), parsed within bounds.

The file is read by ``jsonfile.read_capped`` (a regular file, at most ``MAX_TOML_BYTES``);
its text is then measured before ``tomllib`` sees it: tomllib recurses once per nested
array or inline table (20,000 of them exhaust Python's stack) and its time grows with the
square of a dotted key's length (``a.b.c…`` 20,000 parts long takes seconds), so text
nested deeper than ``MAX_DEPTH`` is refused unparsed. A UTF-8 byte-order mark, which
editors on Windows write, is dropped.
"""

from __future__ import annotations

import re
from typing import Any

from raytop.model.format import one_line
from raytop.model.stdlib import tomllib
from raytop.model.untrusted import MiB

MAX_TOML_BYTES = 1 * MiB  # a spec is a page of text; a NODES.toml a few node groups
# Tables, arrays and dotted key parts one inside another: a spec needs a handful
# ([tune.scheduler] hyperparam_mutations.lr = [..] is five).
MAX_DEPTH = 64

BOM = "\ufeff"

# What nests or ends a key, and what to step over whole: strings (a '.' or '[' inside
# one is text) and comments. Every other character is skipped.
_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"{3,5}'  # multi-line basic string
    r"|'''(?:[^']|'(?!''))*'{3,5}"  # multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*"'  # basic string
    r"|'[^'\n]*'"  # literal string
    r"|#[^\n]*"  # comment
    r"|[\[\]{}=,.\n]"
)


class TomlUnusable(ValueError):
    """The text cannot be used; ``str`` is the one line naming the file."""


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether anything in the TOML ``text`` sits more than ``limit`` levels deep,
    counting the parts of the [table] header above it, of its dotted key, and each array
    and inline table around it. One pass over the text, stopped at the first level over
    ``limit``; text that is not TOML is measured as far as it reads (tomllib then says
    where it is wrong)."""
    stack: list[tuple[str, int]] = []  # each open array / inline table, and its depth
    header = 0  # the parts of the last [table] header: where its keys start
    keys = 1  # the parts of the key being read
    slot = 0  # the depth of the value being read
    in_key, in_header, fresh = True, False, True  # fresh: at a top-level line's start
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == "\n":
            if not stack:
                in_key, in_header, fresh, keys = True, False, True, 1
            continue
        starts_header, fresh = token == "[" and fresh and not stack, False
        if token[0] in "\"'#":  # a quoted key's part, a string value or a comment
            continue
        if starts_header or (token == "[" and in_header):  # [table] or [[array of tables]]
            in_header, keys = True, 1 if starts_header else 2
        elif token == ".":
            keys += 1 if in_key or in_header else 0  # else a float's point
        elif token == "]" and in_header:
            in_header, header, keys = False, keys, 0
        elif token == "=" and in_key:
            in_key, slot = False, (stack[-1][1] if stack else header) + keys
        elif token in ("[", "{") and not in_key:
            stack.append((token, slot))
            slot += 1
            in_key, keys = token == "{", 1
        elif token == ",":
            in_key, keys = bool(stack) and stack[-1][0] == "{", 1
            slot = stack[-1][1] + 1 if stack else slot
        elif token in ("]", "}") and stack:
            stack.pop()
            in_key = False
        if in_header:
            depth = keys
        elif in_key:
            depth = (stack[-1][1] if stack else header) + keys
        else:
            depth = slot
        if depth > limit:
            return True
    return False


def parse_toml(raw: bytes, label: str) -> dict[str, Any]:
    """The TOML document in ``raw`` (a file's bytes, already capped); ``TomlUnusable``
    with one line naming ``label`` when it is not UTF-8, nested too deep or not TOML."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TomlUnusable(f"{label}: not valid UTF-8 text ({err.reason})") from None
    text = text.removeprefix(BOM)
    if too_deep(text):
        raise TomlUnusable(
            f"{label}: nested too deep (more than {MAX_DEPTH} levels of tables, arrays and "
            "dotted keys): not parsed"
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TomlUnusable(one_line(f"{label}: TOML syntax error: {err}", joined_by=" ")) from None
