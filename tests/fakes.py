"""Stand-ins for the cluster's GCS internal KV store, with the calls raytop's readers make
(``wire.gcs.GcsKv``'s get / get_from / multi_get / multi_get_from / keys_from /
job_table / put), over plain dicts of bytes;
and for Ray's dashboard head: a tiny HTTP server on 127.0.0.1 (``FakeDashboard``) that the
real ``wire.dashboard`` client asks. The real ones are tested against a real cluster in
tests/integration."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
        self.jobs: list[dict] = []  # the job table's rows, as ``wire.jobs.job_row`` gives them

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def get_from(self, namespace: str, key: str, timeout_s: float = 2.0) -> bytes | None:
        self.gets_from.append((namespace, key))
        return self.namespaces.get(namespace, {}).get(key)

    def multi_get(self, keys: list[str]) -> dict[str, bytes]:
        self.multi_gets.append(keys)
        return {k: self.data[k] for k in keys if k in self.data}

    def multi_get_from(self, namespace: str, keys: list[str]) -> dict[str, bytes]:
        held = self.namespaces.get(namespace, {})
        return {k: held[k] for k in keys if k in held}

    def keys_from(self, namespace: str, prefix: str) -> list[str]:
        return [k for k in self.namespaces.get(namespace, {}) if k.startswith(prefix)]

    def job_table(self) -> list[dict]:
        return list(self.jobs)

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = value


def kv_for(address: str | None) -> FakeKv:
    """A KV store whose ``dashboard`` namespace says where the dashboard listens (as Ray's
    dashboard/head.py writes it), or says nothing."""
    found = {"dashboard": {"dashboard": address.encode()}} if address else {}
    return FakeKv({}, namespaces=found)


class FakeDashboard:
    """A stand-in dashboard head: answers ``status``/``body`` (after ``delay_s``, or
    dripping a byte every ``drip_s``) to every path, or ``bodies[path]`` when the path is
    there, and records the paths asked."""

    def __init__(self, body: bytes) -> None:
        self.status, self.body, self.delay_s, self.drip_s = 200, body, 0.0, 0.0
        self.bodies: dict[str, bytes] = {}
        self.length: int | None = None  # a Content-Length to claim (None: the body's; -1: none)
        self.paths: list[str] = []
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                dashboard.paths.append(self.path)
                body = dashboard.bodies.get(self.path, dashboard.body)
                time.sleep(dashboard.delay_s)
                self.send_response(dashboard.status)
                self.send_header("Content-Type", "application/json")
                length = dashboard.length if dashboard.length is not None else len(body)
                if length >= 0:
                    self.send_header("Content-Length", str(length))
                self.end_headers()
                try:
                    if dashboard.drip_s:
                        for byte in body[:30]:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(dashboard.drip_s)
                    else:
                        self.wfile.write(body)
                except OSError:
                    pass  # the client gave up

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Clock:
    """A clock a test moves by hand (``clock.now += 5``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedAnswers:
    """A stand-in for an HTTP client: each ask takes the next answer (bytes, or an
    exception to raise), the last one repeating; ``asked`` counts the asks."""

    def __init__(self, *answers: bytes | Exception) -> None:
        self.answers = list(answers)
        self.asked = 0

    def next_answer(self) -> bytes:
        self.asked += 1
        answer = self.answers[min(self.asked, len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer
