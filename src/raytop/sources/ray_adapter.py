"""The only module that touches private Ray APIs (DESIGN decision 6).

Cluster reads go to the GCS directly, without ``ray.init``: no driver job is registered
and each call takes milliseconds (RAY_NOTES d, i). Every private call is checked against
the Ray line this code was verified on.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

VERIFIED_RAY_LINE = "2.58."


class RayUnsupported(RuntimeError):
    pass


class ClusterUnreachable(RuntimeError):
    pass


def ray_version() -> str:
    import ray

    return ray.__version__


def check_ray_version() -> None:
    version = ray_version()
    if not version.startswith(VERIFIED_RAY_LINE):
        raise RayUnsupported(
            f"raytop reads Ray internals verified on Ray {VERIFIED_RAY_LINE}x; found Ray {version}"
        )


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterUnreachable(f"not a GCS address (host:port): {address!r}")
    return host, int(port)


def probe_tcp(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast (seconds, not Ray's 15 s of retries) when nothing listens there."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ClusterUnreachable(f"cannot reach a Ray cluster at {address}: {exc}") from exc


def local_cluster_address() -> str | None:
    """The GCS address of the cluster last started on this machine with ``ray start``."""
    from ray._private import services

    return services.find_bootstrap_address(None)


class GcsReader:
    """Reads nodes and resources straight from the GCS; reconnects after a failure."""

    def __init__(self, address: str) -> None:
        check_ray_version()
        self.address = address
        self._state: Any = None

    def _global_state(self) -> Any:
        if self._state is None:
            import ray._raylet as raylet
            from ray._private.state import GlobalState

            state = GlobalState()
            options = raylet.GcsClientOptions.create(
                self.address, None, allow_cluster_id_nil=True, fetch_cluster_id_if_nil=False
            )
            state._initialize_global_state(options)
            self._state = state
        return self._state

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            # A dead GCS can make the accessor wait; check the socket before every read.
            probe_tcp(self.address)
            return getattr(self._global_state(), fn)(*args)
        except Exception as exc:
            # Drop the client at once: Ray's GCS client ends the whole process when the
            # GCS stays unreachable for 60 s (gcs_rpc_server_reconnect_timeout_s).
            self.reset()
            if isinstance(exc, ClusterUnreachable):
                raise
            raise ClusterUnreachable(
                f"Ray cluster at {self.address} stopped answering: {exc}"
            ) from exc

    def reset(self) -> None:
        if self._state is not None:
            with contextlib.suppress(Exception):
                self._state.disconnect()
        self._state = None

    def nodes(self) -> list[dict[str, Any]]:
        """``[{node_id, address, alive, is_head, resources_total, resources_available,
        labels}]``."""
        table = self._call("node_table")
        available = self._call("available_resources_per_node")
        nodes = []
        for row in table:
            node_id = row["NodeID"]
            total = {k: float(v) for k, v in row.get("Resources", {}).items()}
            nodes.append(
                {
                    "node_id": node_id,
                    "address": row.get("NodeManagerAddress", ""),
                    "alive": bool(row.get("Alive")),
                    "is_head": "node:__internal_head__" in total,
                    "resources_total": total,
                    "resources_available": {
                        k: float(v) for k, v in available.get(node_id, {}).items()
                    },
                    "labels": dict(row.get("Labels", {})),
                }
            )
        return nodes
