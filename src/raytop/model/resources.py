"""Resource names as Ray spells them. Pure, stdlib only.

Ray's resource names are case-sensitive: a bundle asking for ``cpu`` asks for a custom
resource no node has, and waits forever. People write ``cpu = 4`` in TOML all the same, so
every place that reads a resource name a user wrote (a spec's resource tables, a NODES.toml)
passes it through ``resource_name`` first.
"""

from __future__ import annotations


def resource_name(name: str) -> str:
    """``cpu``/``gpu`` in any case become ``CPU``/``GPU``; every other name (``memory``,
    custom ones such as ``TPU`` or ``hi_mem``) is kept as written."""
    return name.upper() if name.lower() in ("cpu", "gpu") else name
