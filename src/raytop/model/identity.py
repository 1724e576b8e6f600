"""Whether what a reader hands out is the very same objects as last time.

The readers keep what did not change and hand out the same objects again; what is made of
them is kept while they are (docs/ARCHITECTURE.md, "What a refresh keeps"). Comparing by
identity, not equality, is what makes that cheap: an unchanged run, row or trial is told
in one pointer comparison, never by walking it.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any


def same_items(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Both hold the very same objects, in the same order (``operator.is_`` mapped in C:
    a third of a generator's cost, and it is asked of every run at every refresh)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def same_values(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> bool:
    """Both map the same keys to the very same objects."""
    return len(a) == len(b) and all(b.get(k) is v for k, v in a.items())
