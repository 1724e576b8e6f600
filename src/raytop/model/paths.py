"""Paths of folders on storage: local paths and URIs (``s3://bucket/prefix?query``) alike.

One join and one split for both, so that a URI's query (``?endpoint_override=…``, as
pyarrow and Ray take it) always stays at the end; and the one rule for which names read
from storage may be joined into a path at all (``is_plain_name``). Pure: no I/O.
"""

from __future__ import annotations

import re


def is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def join_path(base: str, *parts: str) -> str:
    """``base/part/…``; a URI's query (``s3://b/p?endpoint_override=…``, as pyarrow and Ray
    take it) stays at the end."""
    path, sep, query = base.partition("?") if is_uri(base) else (base, "", "")
    return "/".join([path.rstrip("/"), *parts]) + sep + query


def split_path(path: str) -> tuple[str, str]:
    """(parent, name) of a folder path or URI; a URI's query stays on the parent."""
    bare, sep, query = path.partition("?") if is_uri(path) else (path, "", "")
    parent, _, name = bare.rstrip("/").rpartition("/")
    return parent + sep + query, name


def local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


# One file or folder name, as raytop's own names are (the experiment's, a trial's): what
# may be joined into a path. The message's wording of the rule.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,255}")
PLAIN_NAME_RULE = "letters, digits, '_', '-', '.'"


def is_plain_name(name: object) -> bool:
    """Whether ``name`` may be joined into a path as one folder or file name: ASCII letters,
    digits, ``_ - .``, 1 to 255 of them, not ``.`` or ``..``.

    Names read from files anyone may write (a trial id in Tune's state or the probe's
    table) are joined into paths only when plain: ``../x`` or ``a/b`` would lead out of the
    experiment folder, and a NUL or a lone surrogate makes every ``os`` call raise instead
    of answering. Tune's own trial ids (``a1b2c3d4_00001``) always are plain."""
    return (
        isinstance(name, str)
        and _PLAIN_NAME.fullmatch(name) is not None
        and name not in (".", "..")
    )


def quoted(text: str, limit: int = 64) -> str:
    """A name or path read from storage, quoted for a message: its ``repr`` (control
    characters and lone surrogates as escapes, so that the line can be printed whatever it
    holds), cut at ``limit`` characters."""
    return repr(text[:limit]) + ("…" if len(text) > limit else "")
