"""The GCS internal KV from inside a Ray process (the Ledger actor, a probe, a trial).

These processes are already connected to the cluster, so they use Ray's own internal-KV
calls; raytop itself, outside the cluster, uses ``wire.gcs.GcsKv``. Both sides use the
namespace in ``wire.kv_keys``.
"""

from __future__ import annotations

from raytop.wire.kv_keys import KV_NAMESPACE


def kv_put_in_cluster(key: str, value: bytes) -> None:
    """From inside a Ray process (the ledger actor)."""
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(key.encode(), value, overwrite=True, namespace=KV_NAMESPACE)


def kv_get_in_cluster(key: str) -> bytes | None:
    """From inside a Ray process (a probe's flush thread)."""
    from ray.experimental import internal_kv

    return internal_kv._internal_kv_get(key.encode(), namespace=KV_NAMESPACE)


def kv_del_in_cluster(key: str) -> None:
    from ray.experimental import internal_kv

    internal_kv._internal_kv_del(key.encode(), namespace=KV_NAMESPACE)
