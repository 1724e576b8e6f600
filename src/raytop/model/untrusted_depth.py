"""How deep untrusted JSON nests, checked where it comes in (``untrusted``).

Python's json parses an array 100,000 deep and the recursion fails later, far from the
read, in whatever walks the value (a comparison, a ``repr``, ``json.dumps`` of a
snapshot). So raytop's readers refuse a file nested too deep on its bytes
(``depth_over``, for ``untrusted.parse``), and cut a trial's config and metrics, which
nest as deep as the user made them, at ``MAX_VALUE_DEPTH`` (``cut_deep``).

Pure and stdlib only (``model`` layer).
"""

from __future__ import annotations

import json
from typing import Any

_NOT_SYNTAX = bytes(range(256)).translate(None, b'[]{}"')  # deleted: all but these
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")


def depth_over(raw: bytes | str, max_depth: int) -> bool:
    """Whether valid JSON ``raw`` nests deeper than ``max_depth``, found on its bytes at C
    speed (0.3 s for a 60 MiB state file of 100,000 trials, whose json.loads takes 0.47 s;
    0.14 s for a 25 MiB trials.json, where a walk of the parsed value would take 0.75 s, a
    Python step per container): escaped backslashes and quotes dropped, all but quotes and
    brackets dropped, what was inside strings dropped, then the innermost bracket pairs
    removed ``max_depth`` times: anything left was deeper."""
    if isinstance(raw, bytes) and json.detect_encoding(raw) not in ("utf-8", "utf-8-sig"):
        raw = raw.decode(json.detect_encoding(raw))  # UTF-16 or 32, as json.loads reads it
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    syntax = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(_ONE_BRACKET, _NOT_SYNTAX)
    brackets = b"".join(syntax.split(b'"')[::2])
    for _ in range(max_depth):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


MAX_VALUE_DEPTH = 32  # a trial's config and metrics: real ones nest a few levels
TOO_DEEP = f"<nested deeper than {MAX_VALUE_DEPTH} levels: cut>"


def cut_deep(value: Any, max_depth: int = MAX_VALUE_DEPTH) -> Any:
    """``value`` (parsed JSON) with every dict or list deeper than ``max_depth`` levels
    replaced by ``TOO_DEEP``: a config nested hundreds deep parses, but every ``repr`` and
    recursive walk of it later would fail (RecursionError) far from here. Iterative; a
    value within the limit comes back as the same object."""
    if not isinstance(value, (dict, list)):
        return value
    # Depth-first: find the containers at the limit first; copy only what leads to one.
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack and deepest <= max_depth:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    if deepest <= max_depth:
        return value
    return _cut(value, max_depth)


def _cut(value: Any, levels: int) -> Any:
    """A copy of ``value`` down to ``levels`` levels of containers (bounded recursion:
    ``levels`` is at most ``MAX_VALUE_DEPTH``)."""
    if not isinstance(value, (dict, list)):
        return value
    if levels <= 0:
        return TOO_DEEP
    if isinstance(value, dict):
        return {k: _cut(v, levels - 1) for k, v in value.items()}
    return [_cut(v, levels - 1) for v in value]
