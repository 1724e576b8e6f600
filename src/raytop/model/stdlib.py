"""What raytop takes from Python 3.11's standard library, for Python 3.10 as well.

raytop is installed into the image that runs the cluster (its Train workers import the
probe), so it runs on that image's Python: 3.10 to 3.13. These names came in 3.11:
``enum.StrEnum``, ``tomllib`` and ``typing.NotRequired``. On 3.10 they come from
``tomli`` (the package tomllib was made from; a dependency only there) and
``typing_extensions`` (which Ray and Textual already require), and ``StrEnum`` is the
few lines below, with 3.11's behaviour: ``str()`` and ``format()`` give the value.
``Traversable`` (a packaged file, for the themes) moved to ``importlib.resources.abc``.

Stdlib only on 3.11 and later (``model`` floor).
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
    from importlib.resources.abc import Traversable
    from typing import NotRequired

    import tomllib
else:  # pragma: no cover - Python 3.10 (make test-compat)
    from importlib.abc import Traversable

    import tomli as tomllib
    from typing_extensions import NotRequired

    class StrEnum(str, Enum):
        """3.11's ``enum.StrEnum``: members are strings and print as their value."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


__all__ = ["NotRequired", "StrEnum", "Traversable", "tomllib"]
