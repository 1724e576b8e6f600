"""Stand-ins for the cluster's GCS internal KV store, with the calls raytop's readers make
(``wire.gcs.GcsKv``'s get / get_from / multi_get / keys / put), over plain dicts of bytes.
The real store is tested against a real cluster in tests/integration."""

from __future__ import annotations


class FakeKv:
    def __init__(
        self,
        data: dict[str, bytes] | None = None,
        namespaces: dict[str, dict[str, bytes]] | None = None,
    ) -> None:
        self.data: dict[str, bytes] = {} if data is None else data
        self.multi_gets: list[list[str]] = []  # what each multi_get asked for
        # Ray's own namespaces (``get_from``), e.g. {"dashboard": {"dashboard": b"host:port"}}
        self.namespaces: dict[str, dict[str, bytes]] = namespaces or {}
        self.gets_from: list[tuple[str, str]] = []  # what each get_from asked for

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def get_from(self, namespace: str, key: str, timeout_s: float = 2.0) -> bytes | None:
        self.gets_from.append((namespace, key))
        return self.namespaces.get(namespace, {}).get(key)

    def multi_get(self, keys: list[str]) -> dict[str, bytes]:
        self.multi_gets.append(keys)
        return {k: self.data[k] for k in keys if k in self.data}

    def keys(self, prefix: str) -> list[str]:
        return [k for k in self.data if k.startswith(prefix)]

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = value
