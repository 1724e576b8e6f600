"""Loading a pickle that holds plain data only, without ever running code from it.

PyTorch's Flight Recorder writes its dumps as a pickled dict (``FlightRecorder<>::dump``
in torch's C++: ``version``, ``pg_config``, ``pg_status``, ``entries``…). A dump file is
untrusted input like any other: the folder it sits in can be written by whoever runs
code in the cluster, and ``pickle.load`` of a crafted file runs any function it names
(``__reduce__`` → ``os.system``). So raytop never uses the plain ``pickle`` module on it:

1. the size is capped before anything is read (``MAX_PICKLE_BYTES``);
2. every opcode is listed first (``pickletools.genops``, which builds nothing) and the
   file is refused if one of them could import or call anything (``GLOBAL``,
   ``STACK_GLOBAL``, ``REDUCE``, ``BUILD``, ``INST``, ``OBJ``, ``NEWOBJ*``, ``EXT*``,
   persistent ids) or build a type outside the plain ones (sets, bytearrays, buffers);
3. the unpickler itself refuses any class lookup and persistent id (``find_class``,
   ``persistent_load``), should step 2 ever miss one;
4. what it built is walked once (shared objects once, cycles allowed) and must be made
   of ``dict``, ``list``, ``tuple``, ``str``, ``bytes``, ``int``, ``float``, ``bool`` and
   ``None`` only, at most ``MAX_OBJECTS`` of them.

Any refusal is ``Invalid`` with one line saying why, for a warning naming the file.
Torch writes protocol 2 with none of the refused opcodes (checked on 2.13's dumps:
tests/data/flight_recorder). Stdlib only (``model`` layer).
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

from raytop.model.untrusted import Invalid, MiB, check_size

MAX_PICKLE_BYTES = 64 * MiB  # a 2,000-entry dump with stack frames is a few MiB
MAX_OBJECTS = 5_000_000

# Opcodes that only push plain values, build lists, tuples and dicts, or use the memo.
PLAIN_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "NONE", "NEWTRUE", "NEWFALSE", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING",
    "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
    "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET", "MEMOIZE",
})  # fmt: skip
# Why a refused opcode is refused, for the one-line warning.
_CALLS = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ", "NEWOBJ_EX",
          "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"}  # fmt: skip
PLAIN_TYPES = (dict, list, tuple, str, bytes, int, float, bool, type(None))


class _NoClasses(pickle.Unpickler):
    """Refuses every class or function a pickle names, and every persistent id."""

    def find_class(self, module: str, name: str) -> Any:
        raise Invalid(f"refused: the pickle names {module[:80]}.{name[:80]}")

    def persistent_load(self, pid: Any) -> Any:
        raise Invalid("refused: the pickle uses a persistent id")


def load_plain_pickle(data: bytes, max_bytes: int = MAX_PICKLE_BYTES) -> Any:
    """The plain data pickled in ``data``; ``Invalid`` (one line) for anything else:
    over ``max_bytes``, not a pickle, or a pickle that would import, call or build
    anything but dicts, lists, tuples, strings, bytes, numbers, booleans and None."""
    check_size(len(data), max_bytes)
    if not data:
        raise Invalid("empty: not a pickle")
    _check_opcodes(data)
    try:
        value = _NoClasses(io.BytesIO(data)).load()
    except Invalid:
        raise
    except RecursionError:
        raise Invalid("nested too deeply") from None
    except Exception as exc:  # a torn or crafted stream: whatever the unpickler says
        raise Invalid(f"not a readable pickle ({type(exc).__name__}: {_short(exc)})") from None
    _check_plain(value)
    return value


def _check_opcodes(data: bytes) -> None:
    try:
        for opcode, _arg, pos in pickletools.genops(data):
            name = opcode.name
            if name in PLAIN_OPCODES:
                continue
            if name in _CALLS:
                why = "imports or calls code"
            else:
                why = "builds a type other than plain data"
            raise Invalid(f"refused: the pickle {why} (opcode {name} at byte {pos})")
    except Invalid:
        raise
    except Exception as exc:  # ValueError from a truncated or garbled stream
        raise Invalid(f"not a pickle ({_short(exc)})") from None


def _check_plain(value: Any) -> None:
    """Walk what was built (each object once: shared ones and cycles are fine)."""
    seen: set[int] = set()
    stack = [value]
    count = 0
    while stack:
        item = stack.pop()
        if not isinstance(item, PLAIN_TYPES):
            raise Invalid(f"refused: holds a {type(item).__name__[:40]}, not plain data")
        if isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(item.keys() if isinstance(item, dict) else ())
            stack.extend(item.values() if isinstance(item, dict) else item)
        count += 1
        if count > MAX_OBJECTS:
            raise Invalid(f"over the cap of {MAX_OBJECTS:,} objects: not read")


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:160]
