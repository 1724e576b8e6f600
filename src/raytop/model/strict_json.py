"""Strict JSON out: what ``raytop status --json`` prints must parse anywhere.

Python writes ``NaN`` and ``Infinity`` bare, which is not JSON (RFC 8259): ``jq``, Go and
JavaScript reject the whole document. A metric of ``nan`` is ordinary in training (a loss
that diverged), and Tune stores it as Python writes it. So every non-finite number becomes
``null``, and the document says where (``non_finite``: JSON Pointers, RFC 6901), so a
reader can tell "NaN" from "not reported".

The walk is also where two other promises are kept for machines: strings have their
credentials redacted (``visible.redact``: the snapshot carries storage URIs as given), and
no value is nested deeper than ``MAX_DEPTH`` (readers cut deeper values on the way in; a
deeper one is replaced by a string saying so rather than failing the dump). The walk is
iterative: depth costs no Python stack.

Pure and stdlib only (``model`` floor).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from raytop.model.visible import redact

MAX_DEPTH = 64
MAX_NOTED = 100  # pointers listed in ``non_finite``; ``count`` says how many there were
TOO_DEEP = f"<nested deeper than {MAX_DEPTH} levels: not shown>"


def _pointer(where: tuple | None) -> str:
    """The JSON Pointer of a place kept as a chain ``(parent chain, name)``: built only
    for the few places noted, not for every value walked."""
    parts: list[str] = []
    while where is not None:
        where, name = where
        parts.append("/" + name.replace("~", "~0").replace("/", "~1"))
    return "".join(reversed(parts))


def strict(data: Any) -> tuple[Any, dict[str, Any]]:
    """(``data`` as JSON values: dataclasses as dicts (``dataclasses.asdict``'s shape, with
    no recursion), tuples as lists, every non-finite float ``None``, every string
    redacted; where the non-finite numbers were: ``{"count", "paths"}``)."""
    paths: list[str] = []
    count = 0
    root: list[Any] = [None]
    # (container to fill, key or index in it, value, depth, where: (parent's, name))
    stack: list[tuple[Any, Any, Any, int, Any]] = [(root, 0, data, 0, None)]
    while stack:
        parent, key, value, depth, where = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                count += 1
                if len(paths) < MAX_NOTED:
                    paths.append(_pointer(where))
                value = None
        elif isinstance(value, str):
            value = redact(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            stack.append((parent, key, value, depth, where))  # walked as the dict it is
            continue
        elif isinstance(value, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                value = TOO_DEEP
            elif isinstance(value, dict):
                out: dict[str, Any] = {}
                for k, v in value.items():
                    name = redact(k if isinstance(k, str) else str(k))
                    out[name] = None
                    stack.append((out, name, v, depth + 1, (where, name)))
                value = out
            else:
                items: list[Any] = [None] * len(value)
                for i, v in enumerate(value):
                    stack.append((items, i, v, depth + 1, (where, str(i))))
                value = items
        elif not (value is None or isinstance(value, (bool, int))):
            value = redact(str(value))
        parent[key] = value
    return root[0], {"count": count, "paths": sorted(paths)}


def dumps(data: Any) -> str:
    """``data`` as strict JSON text, ASCII only (no raw control byte, no lone surrogate:
    JSON escapes them), indented for a human reading it too."""
    return json.dumps(data, indent=2, allow_nan=False, ensure_ascii=True)
