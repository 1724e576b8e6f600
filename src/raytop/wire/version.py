"""The Ray line raytop's private Ray calls were verified on, and the check before them.

raytop reads the GCS and hooks into Train through APIs Ray may change in any release; a
clear refusal on another Ray line beats a wrong reading or a crash deep inside Ray.
"""

from __future__ import annotations

import os
import sys
from typing import Any

VERIFIED_RAY_LINE = "2.58."

# Ray's GCS client ends its whole process once the GCS has been unreachable for
# gcs_rpc_server_reconnect_timeout_s (60 s), even a client that is no longer used, and Ray
# reads that from the environment once, when ``ray._raylet`` is imported (measured:
# docs/RELIABILITY.md, R1). raytop's own process must outlive the cluster it watches.
GIVE_UP_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
NEVER_GIVE_UP_S = str(10 * 365 * 24 * 3600)


class RayUnsupported(RuntimeError):
    """The installed Ray is not the line the private calls were verified on."""


def import_ray() -> Any:
    """``import ray``; the first time in this process with the GCS client's give-up time
    lifted, and the environment restored at once, so the cluster and the drivers raytop
    starts keep Ray's own. A process that imported Ray before (a Ray worker, the Tune
    driver, user code) keeps what it had: only raytop's reading processes call this first."""
    if "ray" not in sys.modules:
        saved = os.environ.get(GIVE_UP_ENV)
        os.environ.setdefault(GIVE_UP_ENV, NEVER_GIVE_UP_S)
        try:
            import ray  # noqa: F401
        finally:
            if saved is None:
                os.environ.pop(GIVE_UP_ENV, None)
    import ray

    return ray


def ray_version() -> str:
    return import_ray().__version__


def check_ray_version() -> None:
    version = ray_version()
    if not version.startswith(VERIFIED_RAY_LINE):
        raise RayUnsupported(
            f"raytop reads Ray internals verified on Ray {VERIFIED_RAY_LINE}x; found Ray {version}"
        )
