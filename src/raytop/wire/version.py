"""The Ray line raytop's private Ray calls were verified on, and the check before them.

raytop reads the GCS and hooks into Train through APIs Ray may change in any release; a
clear refusal on another Ray line beats a wrong reading or a crash deep inside Ray.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from typing import Any

# The Ray lines raytop's private Ray calls are verified on (major.minor). Another line is
# refused in one line, exit 2, unless ALLOW_ANY_RAY_ENV is "1": then raytop runs and says
# so in every snapshot's warnings (and the TUI's top bar).
SUPPORTED_RAY_LINES = ("2.58", "2.59", "2.60")
ALLOW_ANY_RAY_ENV = "RAYTOP_ANY_RAY"

# Ray's GCS client ends its whole process once the GCS has been unreachable for
# gcs_rpc_server_reconnect_timeout_s (60 s), even a client that is no longer used, and Ray
# reads that from the environment once, when ``ray._raylet`` is imported (measured:
# docs/RELIABILITY.md, R1). raytop's own process must outlive the cluster it watches.
GIVE_UP_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
NEVER_GIVE_UP_S = str(10 * 365 * 24 * 3600)


class RayUnsupported(RuntimeError):
    """The installed Ray is not a line the private calls were verified on."""


def import_ray() -> Any:
    """``import ray``; the first time in this process with the GCS client's give-up time
    lifted, and the environment restored at once, so the cluster and the drivers raytop
    starts keep Ray's own. A process that imported Ray before (a Ray worker, the Tune
    driver, user code) keeps what it had: only raytop's reading processes call this first.
    Every place in ``wire`` that imports from Ray on the reading side calls it first
    (``ray_version`` no longer imports Ray: the first import is wherever Ray is first
    needed; one that slipped past this let Ray end the TUI's process 60 s after its GCS
    went away, caught by the R1 fault test)."""
    if "ray" not in sys.modules:
        saved = os.environ.get(GIVE_UP_ENV)
        os.environ.setdefault(GIVE_UP_ENV, NEVER_GIVE_UP_S)
        try:
            # heavy: Ray (~1 s), imported once here with its give-up time set
            import ray  # noqa: F401
        finally:
            if saved is None:
                os.environ.pop(GIVE_UP_ENV, None)
    # the module Ray is by now (cheap: already in sys.modules)
    import ray

    return ray


def ray_version() -> str:
    """The installed Ray's version: from an imported Ray when there is one, else from its
    distribution's metadata, which costs milliseconds where ``import ray`` costs half a
    CPU-second (a command refused for its Ray line, or for an address that does not answer,
    never imports it). A Ray with no metadata (run from a source tree) is imported."""
    if "ray" not in sys.modules:
        try:
            return importlib.metadata.version("ray")
        except importlib.metadata.PackageNotFoundError:
            pass
    return import_ray().__version__


def ray_line(version: str) -> str:
    """``2.60.0`` → ``2.60``; a version of another shape is its own line."""
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else version


def unsupported(version: str) -> str | None:
    """Why ``version`` is not a supported line (one line, naming the supported lines and
    the override), or None."""
    if ray_line(version) in SUPPORTED_RAY_LINES:
        return None
    lines = ", ".join(f"{line}.x" for line in SUPPORTED_RAY_LINES)
    return (f"Ray {version} is not a line raytop supports ({lines}); "
            f"{ALLOW_ANY_RAY_ENV}=1 runs it anyway, unverified")  # fmt: skip


def unsupported_warning() -> str | None:
    """The warning every snapshot carries while raytop runs on an unsupported Ray line
    because the user asked (``ALLOW_ANY_RAY_ENV``); None on a supported line."""
    why = unsupported(ray_version())
    if why is None or os.environ.get(ALLOW_ANY_RAY_ENV) != "1":
        return None
    return f"Ray {ray_version()}: not a supported line, run anyway ({ALLOW_ANY_RAY_ENV}=1)"


def check_ray_version() -> None:
    """Refuse an unsupported Ray line (``RayUnsupported``) unless the user overrode it."""
    why = unsupported(ray_version())
    if why is not None and os.environ.get(ALLOW_ANY_RAY_ENV) != "1":
        raise RayUnsupported(why)
