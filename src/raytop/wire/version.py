"""The Ray line raytop's private Ray calls were verified on, and the check before them.

raytop reads the GCS and hooks into Train through APIs Ray may change in any release; a
clear refusal on another Ray line beats a wrong reading or a crash deep inside Ray.
"""

from __future__ import annotations

VERIFIED_RAY_LINE = "2.58."


class RayUnsupported(RuntimeError):
    """The installed Ray is not the line the private calls were verified on."""


def ray_version() -> str:
    import ray

    return ray.__version__


def check_ray_version() -> None:
    version = ray_version()
    if not version.startswith(VERIFIED_RAY_LINE):
        raise RayUnsupported(
            f"raytop reads Ray internals verified on Ray {VERIFIED_RAY_LINE}x; found Ray {version}"
        )
