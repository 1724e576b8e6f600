"""Whether a GCS refuses raytop for Ray's token authentication, asked of the GCS itself.

Ray 2.60 can require a token of every client (docs/RAY_FACTS.md#token-auth). A client
without it fails in Ray's GCS client with "Failed to connect to GCS" or an
``InvalidAuthToken`` error, depending on the call, and raytop would only say the cluster
stopped answering. After such a failure, one ``GetClusterId`` call over plain gRPC (about
2 ms) with the token Ray itself would send (none unless ``RAY_AUTH_MODE=token``) tells:
``UNAUTHENTICATED`` is the GCS's own refusal. Anything else (it answers, the call fails
another way, this Ray has no token authentication) is no evidence, and the failure is
said as it was. The token is sent, never kept or shown.
"""

from __future__ import annotations

import os
from typing import Any

from raytop.wire import capabilities as caps
from raytop.wire.version import import_ray

AUTH_TIMEOUT_S = 2.0
TOKEN_PLACES = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"


def _token_metadata() -> tuple[tuple[str, str], ...]:
    """The gRPC metadata Ray's own clients send ((): none, or this Ray has no tokens)."""
    if not all(caps.has(name) for name in caps.TOKEN_METADATA):  # before 2.60: no tokens
        return ()
    try:
        # heavy: Ray's private token helpers, checked above
        from ray._private.authentication.authentication_utils import is_token_auth_enabled
        from ray._private.authentication.grpc_authentication_client_interceptor import (
            _get_authentication_metadata_tuple,
        )

        return _get_authentication_metadata_tuple() if is_token_auth_enabled() else ()
    except Exception:  # no token to load
        return ()


def _refused(address: str, metadata: tuple[tuple[str, str], ...]) -> bool:
    """The GCS at ``address`` answered ``GetClusterId`` with UNAUTHENTICATED."""
    # heavy: gRPC and Ray's generated stubs, only after a failure
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    channel: Any = grpc.insecure_channel(address)
    try:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=AUTH_TIMEOUT_S,
                          metadata=metadata)  # fmt: skip
    except grpc.RpcError as exc:
        return exc.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        channel.close()
    return False


def auth_refusal(address: str) -> str | None:
    """Why the GCS at ``address`` refuses raytop, in one line naming what to set (never
    the token), or None when it does not (or this cannot be told)."""
    if not all(caps.has(name) for name in caps.CLUSTER_ID_CALL):
        return None
    try:
        import_ray()
        metadata = _token_metadata()
        if not _refused(address, metadata):
            return None
    except Exception:  # a malformed address, or gRPC failing before any answer
        return None
    if metadata:
        fix = f"the token raytop sent (from {TOKEN_PLACES}) is not the cluster's"
    elif os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        fix = f"RAY_AUTH_MODE=token is set but no token was found in {TOKEN_PLACES}"
    else:
        fix = f"set RAY_AUTH_MODE=token, with the cluster's token in {TOKEN_PLACES}"
    return f"the Ray cluster at {address} requires Ray's token authentication: {fix}"
