"""``evolve``: a frozen dataclass with some fields changed, at a refresh's rate.

``dataclasses.replace`` calls ``__init__`` with every field (and ``__post_init__``): ~20 µs
for a ``Worker``, which at 2,000 ranks and a few copies a refresh is tens of milliseconds
of a refresh's CPU (``benchmarks/scale_bench.py``). ``evolve`` copies the instance's
``__dict__`` instead (~1 µs). Only for plain frozen dataclasses (no ``__slots__``) whose
``__post_init__`` only normalises what the changed fields do not touch.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def evolve(obj: T, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes`` (field names, checked) set."""
    fields = obj.__dataclass_fields__  # type: ignore[attr-defined]
    for name in changes:
        if name not in fields:
            raise TypeError(f"{type(obj).__name__} has no field {name!r}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new
