"""A Ray cluster of several nodes on one machine, all on loopback (issue 11).

The head is raytop's own embedded cluster (``launch.cluster.start_embedded``, with its own
``RAYTOP_HOME`` so the session's ``cluster.json`` is left alone); each worker node is a
``ray start --address=<head> --node-ip-address=127.0.0.1 --block`` process of its own
session (so killing its process group is a node crash), with its own ports and a custom
resource naming it (``node_b: 1``).

Why a worker is not plain ``ray start``: the head keeps 127.0.0.1 only because
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is in its environment (``LOOPBACK_ENV``,
docs/RELIABILITY.md R6). A worker node needs the same, or ``ray start`` rewrites both its own
``--node-ip-address`` and the head's 127.0.0.1 address to the host's routable address, where
the head does not listen; but with the variable ``ray start --address`` refuses to start a
worker node at all ("Multi-node Ray clusters are not supported on Windows and OSX",
``ray/scripts/scripts.py``). ``WORKER_NODE`` runs Ray's own CLI with the variable set and
shows only that one check (``scripts.ray_constants.ENABLE_RAY_CLUSTER``) a copy of
``ray_constants`` that says clusters are enabled; ``services.get_node_ip_address`` still
sees the real module and keeps 127.0.0.1, as do the raylet, the agents and every worker
process, which inherit the variable.

Worker nodes are started one after the other: two ``ray start`` at once on one host pick the
same ``raylet.1`` / ``plasma_store.1`` socket names in the shared session folder, and the
second raylet never registers (measured: "The current node timed out during startup").
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.conftest import own_tmpdir, run_raytop

HEAD_RESOURCE = "head_node"
NODE_START_TIMEOUT_S = 90.0
NODE_STOP_TIMEOUT_S = 30.0
# The GCS marks a SIGKILLed node dead only after missed health checks: Ray's defaults
# (every 3 s, 5 misses, 10 s timeout) take 15-50 s; these take about 3-6 s. Given to the
# head only (the GCS reads them at start).
FAST_HEALTH_CHECKS = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}

# A worker node's ports, each picked free by raytop's own picker (Ray's defaults are shared by
# every node on the host); the node counts as started once its processes listen on all.
PORT_FLAGS = (
    "node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port",
)  # fmt: skip


class NodePortTaken(AssertionError):
    """A worker node ended during its start: another process had taken one of its ports."""


WORKER_NODE = """
import sys, types
import ray._private.ray_constants as constants
import ray.scripts.scripts as scripts
view = types.ModuleType(constants.__name__)
view.__dict__.update(constants.__dict__)
view.ENABLE_RAY_CLUSTER = True  # only scripts.py's worker-node refusal sees this
scripts.ray_constants = view
sys.argv[0] = "ray"
sys.exit(scripts.main())
"""


def free_port() -> int:
    from raytop.launch.cluster import _free_port

    return _free_port()


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class WorkerNode:
    name: str
    process: subprocess.Popen
    log: Path
    node_id: str = ""
    killed_at: float | None = None

    def running(self) -> bool:
        return self.process.poll() is None


@dataclass
class LocalCluster:
    """A head (raytop's embedded cluster) and worker nodes, on loopback."""

    home: Path
    cpus_per_node: int = 2
    address: str = ""
    workers: dict[str, WorkerNode] = field(default_factory=dict)

    def start(self, *names: str) -> None:
        from raytop.launch.cluster import start_embedded
        from raytop.launch.spec import ClusterSection

        self.home.mkdir(parents=True, exist_ok=True)
        head = ClusterSection(num_cpus=self.cpus_per_node, resources={HEAD_RESOURCE: 1})
        # Its own Ray temp dir (its nodes share it), never the shared cluster's.
        with environment(RAYTOP_HOME=str(self.home), RAY_TMPDIR=own_tmpdir("nodes"),
                         **FAST_HEALTH_CHECKS):  # fmt: skip
            self.address = start_embedded(head).address
        for name in names:
            self.add_worker(name)
        self.wait_alive(1 + len(names), "every node in `raytop status --json`", via_cli=True)

    def add_worker(self, name: str) -> WorkerNode:
        """Start (or start again) worker node ``name`` and wait until the GCS has it alive
        and its processes listen on every port it was given; a start that lost a port to
        another process (``launch.head_start``, as for the head) is tried again."""
        from raytop.launch.cluster import PORT_ATTEMPTS

        for _ in range(PORT_ATTEMPTS - 1):
            try:
                return self._start_worker(name)
            except NodePortTaken as exc:
                print(f"{exc}; starting it again on new ports")
        return self._start_worker(name)

    def _start_worker(self, name: str) -> WorkerNode:
        from raytop.launch.cluster import LOOPBACK_ENV, NO_DRAIN_ENV
        from raytop.launch.head_start import serves

        old = self.workers.get(name)
        ports = {flag: free_port() for flag in PORT_FLAGS}
        cmd = [
            sys.executable, "-c", WORKER_NODE, "start", "--block",
            f"--address={self.address}", "--node-ip-address=127.0.0.1",
            f"--num-cpus={self.cpus_per_node}", "--num-gpus=0",
            f"--resources={json.dumps({name: 1})}",
            "--object-store-memory=100000000",
            "--min-worker-port=0", "--max-worker-port=0",  # the OS picks each worker's port
            *(f"--{flag}={port}" for flag, port in ports.items()),
            "--disable-usage-stats",
        ]  # fmt: skip
        log = self.home / f"{name}.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **LOOPBACK_ENV, **NO_DRAIN_ENV,
                     "RAY_TMPDIR": own_tmpdir("nodes")},
            )  # fmt: skip
        node = self.workers[name] = WorkerNode(name, process, log)

        def joined() -> str | None:
            # A node killed a moment ago may still be alive to the GCS, holding `name` too.
            ids = [
                n["node_id"]
                for n in self.alive_nodes()
                if name in n["resources_total"] and n["node_id"] != (old and old.node_id)
            ]
            if not ids or not all(serves(process.pid, port) for port in ports.values()):
                return None
            return ids[0]

        node.node_id = self._wait(joined, f"worker node {name} to join")
        return node

    def alive_nodes(self) -> list[dict]:
        from raytop.wire.gcs import ClusterUnreachable, GcsReader

        reader = GcsReader(self.address)
        try:
            return [n for n in reader.nodes() if n["alive"]]
        except ClusterUnreachable:
            return []
        finally:
            reader.reset()

    def status(self) -> dict:
        result = run_raytop("status", "--json", "--address", self.address, timeout=60)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def wait_alive(self, count: int, what: str, via_cli: bool = False) -> None:
        def enough() -> bool:
            if via_cli:
                nodes = [n for n in self.status()["cluster"]["nodes"] if n["alive"]]
            else:
                nodes = self.alive_nodes()
            return len(nodes) >= count

        self._wait(enough, what)

    def _wait(self, predicate, what: str):
        deadline = time.monotonic() + NODE_START_TIMEOUT_S
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            exited = [w for w in self.workers.values() if w.killed_at is None and not w.running()]
            if exited:
                from raytop.launch.head_start import exit_reason

                why = exit_reason(exited[0].log)
                if why.port_taken:
                    raise NodePortTaken(f"worker node {exited[0].name} exited: {why.reason}")
                tail = exited[0].log.read_text(errors="replace")[-2000:]
                raise AssertionError(f"worker node {exited[0].name} exited: {tail}")
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; log folder {self.home}")

    def node_id(self, name: str) -> str:
        """The node id of worker node ``name``, or of the head for ``HEAD_RESOURCE``."""
        if name in self.workers:
            return self.workers[name].node_id
        (node,) = [n for n in self.alive_nodes() if name in n["resources_total"]]
        return node["node_id"]

    def listening(self, name: str) -> set[str]:
        """The addresses worker node ``name``'s process tree listens on."""
        root = psutil.Process(self.workers[name].process.pid)
        found = set()
        for process in (root, *root.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                connections = process.net_connections(kind="inet")
                found |= {c.laddr.ip for c in connections if c.status == psutil.CONN_LISTEN}
        return found

    def kill(self, name: str) -> float:
        """A node crash: SIGKILL worker node ``name``'s whole process tree (the
        ``ray start --block`` process, its raylet and agents, and the raylet's workers,
        wherever their process group). Returns when it was killed (unix seconds)."""
        node = self.workers[name]
        tree: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            tree = psutil.Process(node.process.pid).children(recursive=True)
        node.killed_at = time.time()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.process.pid, signal.SIGKILL)
        for child in tree:
            with contextlib.suppress(psutil.Error):
                child.kill()  # psutil re-checks the pid is the same process first
        node.process.wait(timeout=NODE_STOP_TIMEOUT_S)
        return node.killed_at

    def revive(self) -> None:
        """Start again every worker node killed by a test."""
        for name, node in list(self.workers.items()):
            if not node.running():
                self.add_worker(name)

    def stop(self) -> None:
        from raytop.launch.cluster import stop_embedded

        for node in self.workers.values():
            if node.running():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.process.pid, signal.SIGTERM)
        for node in self.workers.values():
            try:
                node.process.wait(timeout=NODE_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait(timeout=NODE_STOP_TIMEOUT_S)
        with environment(RAYTOP_HOME=str(self.home)):
            stop_embedded()
