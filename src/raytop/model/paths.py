"""Paths of folders on storage: local paths and URIs (``s3://bucket/prefix?query``) alike.

One join and one split for both, so that a URI's query (``?endpoint_override=…``, as
pyarrow and Ray take it) always stays at the end. Pure: no I/O.
"""

from __future__ import annotations


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
