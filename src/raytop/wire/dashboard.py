"""Ray's dashboard head, over HTTP: the one place raytop asks it anything.

raytop asks it three things, all enrichment, never a dependency (a cluster may run
without a dashboard):

- ``GET /nodes?view=summary``: for the nodes elsewhere, the host figures (CPU, memory,
  load) each node's Ray agent tells the head every ~5 s; raytop measures its own host itself.
- ``GET /api/train/v2/runs/v1``: Train V2's own state of its runs, attempts and workers
  (``dashboard/modules/train/train_head.py`` ``get_train_v2_runs``: what Train's
  ``TrainStateActor`` holds, named ``train_v2_state_actor`` in namespace
  ``_train_state_actor``), kept only for runs whose driver set
  ``RAY_TRAIN_ENABLE_STATE_TRACKING=1``. Without that actor it answers HTTP 500; despite
  its name, ``/api/train/v2/runs`` is Train V1's.
- ``GET /worker/traceback?pid=&node_id=&native=``: the Python stack of a worker with no
  probe on a node other than raytop's (``dashboard/modules/reporter/reporter_head.py``
  ``get_traceback``: the node's agent runs ``py-spy dump``, ``--native`` when ``native=1``).
  Only when the head runs with ``RAY_DASHBOARD_ENABLE_PROFILING=1``: otherwise HTTP 403
  "Profiling is disabled…"; py-spy's failure there is HTTP 500 with its output. Asked only
  for a stacks request, with its own deadline (py-spy takes a moment).

Where it listens is a value of the GCS KV store: namespace ``dashboard``, key
``dashboard`` (``ray._private.ray_constants.KV_NAMESPACE_DASHBOARD`` / ``DASHBOARD_ADDRESS``,
written by ``dashboard/head.py`` once it serves), read through the collector's own KV
client. Ray writes it even when the head serves no HTTP (``include_dashboard=False``
starts a dashboard process without a server): then nothing listens there, and the answer
is "did not answer". The address is read again after every failure: a restarted head may
listen elsewhere.

Each request has one deadline for the whole exchange (connect, send, every read), not a
timeout per socket call, and reads at most a size cap: a slow or hostile server costs the
collector's thread at most ``FETCH_DEADLINE_S``. The body is returned unparsed; its
validation is ``model.untrusted_dashboard``'s. What is asked only of a Ray whose dashboard
serves it (``wire.capabilities``: ``TRAIN_RUNS``, ``TRACEBACK``; the address's KV key,
``DASHBOARD_ADDRESS``): of another, the answer is ``DashboardUnreachable`` naming what it
lacks, without a request.
"""

from __future__ import annotations

import http.client
import time
import urllib.parse
from typing import Any

from raytop.model import untrusted, untrusted_dashboard, untrusted_train_state
from raytop.wire import capabilities as caps
from raytop.wire.gcs import ClusterUnreachable, GcsKv
from raytop.wire.version import check_ray_version, import_ray

NODE_SUMMARY_PATH = "/nodes?view=summary"
TRAIN_RUNS_PATH = "/api/train/v2/runs/v1"
TRACEBACK_PATH = "/worker/traceback"
MAX_TRACEBACK_BYTES = 1_000_000
MAX_ERROR_BODY = 4_000  # what is read of an error answer's body, for its reason
FETCH_DEADLINE_S = 1.0
READ_CHUNK = 64 * 1024
KV_ADDRESS_LABEL = "Ray's dashboard address (KV namespace dashboard, key dashboard)"


class DashboardUnreachable(RuntimeError):
    """No dashboard answered: none in the cluster, not reachable from here (bound to the
    head's loopback, a port-forward missing), or an error status. Not a fault of the
    cluster: the nodes elsewhere just have no host figures, the Train runs raytop did not
    start only what the actor table says. The message completes "Ray's dashboard …":
    "at http://10.0.0.5:8265 did not answer (Connection refused)". ``status``: the HTTP
    status it answered instead of 200 (404: a Ray without the route; 500: e.g. Train keeps
    no state to serve), None when nothing answered in time. An answered status was quick:
    asking again costs little, unlike a deadline run out. ``detail``: the start of that
    answer's body (at most ``MAX_ERROR_BODY`` bytes, as text), where Ray says why."""

    def __init__(self, message: str, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class DashboardClient:
    """``node_summary()`` and ``train_runs()`` from the dashboard head whose address the
    cluster's KV store holds. Raises ``DashboardUnreachable``, or ``untrusted.Invalid``
    when the address is not ``host:port`` or the answer is over its size cap."""

    def __init__(self, kv: GcsKv, deadline_s: float = FETCH_DEADLINE_S) -> None:
        check_ray_version()
        self._kv = kv
        self._deadline_s = deadline_s
        self._address: tuple[str, str, int] | None = None

    def url(self, path: str) -> str:
        """What the warnings name: the URL of ``path``, or the KV value while no address
        is known."""
        if self._address is None:
            return KV_ADDRESS_LABEL
        return _base_url(*self._address) + path

    @property
    def endpoint(self) -> str:
        return self.url(NODE_SUMMARY_PATH)

    @property
    def train_runs_endpoint(self) -> str:
        return self.url(TRAIN_RUNS_PATH)

    def _where(self) -> tuple[str, str, int]:
        if self._address is None:
            _require(caps.DASHBOARD_ADDRESS, "address could not be read")
            import_ray()
            # heavy: Ray (~1 s), only when the dashboard address is looked up
            from ray._private import ray_constants

            namespace = ray_constants.KV_NAMESPACE_DASHBOARD
            if isinstance(namespace, bytes):
                namespace = namespace.decode()
            try:
                raw = self._kv.get_from(
                    namespace, ray_constants.DASHBOARD_ADDRESS, timeout_s=self._deadline_s
                )
            except ClusterUnreachable as exc:
                raise DashboardUnreachable(f"address could not be read ({exc})") from None
            if raw is None:
                raise DashboardUnreachable("is not in this cluster (no address in its KV store)")
            try:
                self._address = untrusted_dashboard.dashboard_address(raw)
            except UnicodeDecodeError:
                raise untrusted.Invalid("not text (binary bytes?)") from None
        return self._address

    def node_summary(self) -> bytes:
        """The body of ``GET /nodes?view=summary`` (at most
        ``untrusted_dashboard.MAX_DASHBOARD_BYTES``)."""
        return self._get(NODE_SUMMARY_PATH, untrusted_dashboard.MAX_DASHBOARD_BYTES)

    def train_runs(self) -> bytes:
        """The body of ``GET /api/train/v2/runs/v1`` (at most
        ``untrusted_train_state.MAX_TRAIN_STATE_BYTES``)."""
        _require(caps.TRAIN_RUNS, "is not asked for Train's runs")
        return self._get(TRAIN_RUNS_PATH, untrusted_train_state.MAX_TRAIN_STATE_BYTES)

    def traceback(self, pid: int, node_id: str, native: bool, deadline_s: float) -> bytes:
        """The body of ``GET /worker/traceback`` for worker ``pid`` on node ``node_id``
        (hex): py-spy's dump, at most ``MAX_TRACEBACK_BYTES``, within ``deadline_s``."""
        _require(caps.TRACEBACK, "is not asked for stacks")
        query = urllib.parse.urlencode(
            {"pid": int(pid), "node_id": node_id, "native": 1 if native else 0}
        )
        return self._get(f"{TRACEBACK_PATH}?{query}", MAX_TRACEBACK_BYTES, deadline_s)

    def _get(self, path: str, max_bytes: int, deadline_s: float | None = None) -> bytes:
        scheme, host, port = self._where()
        try:
            return fetch(scheme, host, port, path, deadline_s or self._deadline_s, max_bytes)
        except DashboardUnreachable as exc:
            self._address = None  # read it again next time
            raise DashboardUnreachable(
                f"at {_base_url(scheme, host, port)} {exc}", exc.status, exc.detail
            ) from None


def _require(names: tuple[str, ...], what: str) -> None:
    """``DashboardUnreachable`` ("… ``what`` (this Ray has no …)") unless this Ray has
    every capability in ``names``."""
    lack = caps.first_lack(names)
    if lack is not None:
        raise DashboardUnreachable(f"{what} ({lack})")


def _base_url(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def _left(deadline: float, deadline_s: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DashboardUnreachable(f"did not answer in full within {deadline_s:g} s")
    return left


def fetch(scheme: str, host: str, port: int, path: str, deadline_s: float,
          max_bytes: int) -> bytes:  # fmt: skip
    """The body of a 200 answer to ``GET path``, all of it within ``deadline_s``;
    ``DashboardUnreachable`` for anything else, ``untrusted.Refused`` above ``max_bytes``."""
    deadline = time.monotonic() + deadline_s
    kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    conn: Any = kind(host, port, timeout=deadline_s)
    try:
        conn.connect()
        sock = conn.sock  # the response reads from it after the connection lets it go
        sock.settimeout(_left(deadline, deadline_s))
        conn.request("GET", path, headers={"Accept": "application/json",
                                           "Accept-Encoding": "identity",
                                           "Connection": "close"})  # fmt: skip
        sock.settimeout(_left(deadline, deadline_s))
        response = conn.getresponse()
        if response.status != 200:
            sock.settimeout(_left(deadline, deadline_s))
            detail = response.read(MAX_ERROR_BODY).decode("utf-8", errors="replace")
            raise DashboardUnreachable(
                f"answered HTTP {response.status} {response.reason}", response.status, detail
            )
        length = response.getheader("Content-Length")
        if length and length.isascii() and length.isdigit():
            untrusted.check_size(int(length), max_bytes)
        body = bytearray()
        while True:
            sock.settimeout(_left(deadline, deadline_s))
            chunk = response.read1(READ_CHUNK)
            if not chunk:
                return bytes(body)
            body += chunk
            untrusted.check_size(len(body), max_bytes)
    except (OSError, http.client.HTTPException) as exc:
        if time.monotonic() >= deadline:  # a socket call ran out the deadline
            raise DashboardUnreachable(f"did not answer in full within {deadline_s:g} s") from None
        why = (str(exc).strip() or type(exc).__name__).splitlines()[0][:200]
        raise DashboardUnreachable(f"did not answer ({why})") from None
    finally:
        conn.close()
