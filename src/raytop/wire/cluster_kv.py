"""The GCS internal KV from inside a Ray process (the Ledger actor, a probe, a trial).

These processes are already connected to the cluster, so they use Ray's own internal-KV
calls; raytop itself, outside the cluster, uses ``wire.gcs.GcsKv``. Both sides use the
namespace in ``wire.kv_keys``. On a Ray without those calls (``wire.capabilities``:
``IN_CLUSTER_KV``) each raises ``RuntimeError`` naming what is missing, where it would
fail inside Ray: the ledger and the probes catch their own failures.
"""

from __future__ import annotations

from raytop.wire import capabilities as caps
from raytop.wire.kv_keys import KV_NAMESPACE


def _internal_kv():
    lack = caps.first_lack(caps.IN_CLUSTER_KV)
    if lack is not None:
        raise RuntimeError(lack)
    # heavy: Ray, already loaded in the Ray process this runs in
    from ray.experimental import internal_kv

    return internal_kv


def kv_put_in_cluster(key: str, value: bytes) -> None:
    """From inside a Ray process (the ledger actor)."""
    _internal_kv()._internal_kv_put(key.encode(), value, overwrite=True, namespace=KV_NAMESPACE)


def kv_get_in_cluster(key: str) -> bytes | None:
    """From inside a Ray process (a probe's flush thread)."""
    return _internal_kv()._internal_kv_get(key.encode(), namespace=KV_NAMESPACE)


def kv_del_in_cluster(key: str) -> None:
    _internal_kv()._internal_kv_del(key.encode(), namespace=KV_NAMESPACE)
