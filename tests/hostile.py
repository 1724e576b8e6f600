"""Hostile text for the faces' tests: every string of a snapshot as an adversary would
write it, and the checks that none of it reached the output raw.

``hostile(snapshot)`` appends ``TAIL`` to every string value in the model tree (trial
ids, config values, statuses, folder and file names, error lines, stacks, finding
subjects and messages …), dict keys included where they are names shown to the user
(config keys, metric names, labels). Logic keys are left as they are, so the faces take
the same paths as with honest text: finding kinds, worker and checkpoint states, retry
classes and the evidence's own keys (``HANG_KINDS``, ``"rank"``) decide what is drawn.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

# What an adversarial folder puts in a name, one character at a time (for generated
# text): ESC sequences (OSC 2 retitles the pane, CSI moves the cursor), C0 and C1 controls
# (U+009B is a one-character CSI), bidi overrides, zero-width characters, line and
# paragraph separators, lone surrogates, a tag character.
HOSTILE_CHARS = (
    "\x1b]2;PWNED\x07\x1b[1A\r\n\t\x00\x7f\x9b\x85\u202e\u2066\u200b\u200d\ufeff"
    "\u2028\u2029\ud800\udfff\U000e0041"
)
# An OSC 2 (retitle the pane) and a CSI (cursor up), a newline and what follows it (a
# forged line), C1 CSI, a bidi override, a zero-width space, a lone surrogate.
MARK = "FORGED"
TAIL = f"\x1b]2;PWNED\x07\x1b[1A\n{MARK} safe to tear down\x9b31m\u202e\u200b\ud800"
# Strings that steer logic, not text the user reads: kept honest.
LOGIC_FIELDS = frozenset({"kind", "state", "severity", "status_kind", "owner_kind", "source",
                          "scheduling_state", "mode", "phase"})  # fmt: skip
NAME_KEYED = frozenset({"config", "metrics", "labels"})  # dicts whose keys are shown
# Text that is lines by nature (a stack is shown line by line, in a panel of its own):
# its newlines are line breaks, so its tail carries everything but the newline.
MULTILINE_FIELDS = frozenset({"stack", "native_stack"})


def hostile(value: Any, field: str = "") -> Any:
    """``value`` with ``TAIL`` on every string the user reads (see the module)."""
    if isinstance(value, Enum) or field in LOGIC_FIELDS:
        return value
    if isinstance(value, str):
        return value + (TAIL.replace("\n", "\\n") if field in MULTILINE_FIELDS else TAIL)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f for f in dataclasses.fields(value) if f.init]
        return dataclasses.replace(
            value, **{f.name: hostile(getattr(value, f.name), f.name) for f in fields}
        )
    if isinstance(value, tuple):
        return tuple(hostile(v) for v in value)
    if isinstance(value, list):
        return [hostile(v) for v in value]
    if isinstance(value, dict):
        named = field in NAME_KEYED
        return {(hostile(k) if named and isinstance(k, str) else k): hostile(v)
                for k, v in value.items()}  # fmt: skip
    return value


def raw_in(text: str) -> list[str]:
    """What of ``TAIL`` got through ``text`` raw: control or invisible characters, and
    a ``MARK`` not right after the escaped newline (``\\n``): a newline inside a name
    that started a line of its own."""
    found = [f"{c!r}" for c in set(text) if c != "\n" and not c.isprintable()]
    # A panel may wrap a long name anywhere, so lines, spaces and box-drawing are
    # squeezed out first: an escaped newline then still sits right before the mark.
    squeezed = "".join(c for c in text if not (c.isspace() or 0x2500 <= ord(c) <= 0x259F))
    at = squeezed.find(MARK)
    while at != -1:
        if squeezed[max(0, at - 2) : at] != "\\n":
            found.append(squeezed[max(0, at - 40) : at + len(MARK)])
        at = squeezed.find(MARK, at + 1)
    return found
