"""Connect to a cluster, or start (and later stop) the embedded one.

Address precedence: ``--address`` > ``RAY_ADDRESS`` > the embedded cluster raytop started
and recorded > the cluster last started on this machine. With none of these reachable,
``raytop run`` starts ``ray start --head --block`` with the spec's logical resources. The
``--block`` process owns the cluster: SIGTERM to it stops exactly that cluster and
nothing else on the machine (``ray stop`` would stop every cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from raytop.home import raytop_home
from raytop.jsonfile import open_log, read_json, write_json_atomic
from raytop.launch.head_start import exit_reason, serves
from raytop.launch.spec import ClusterSection
from raytop.launch.start_progress import finished_of, waiting_of
from raytop.model import untrusted
from raytop.model.visible import visible
from raytop.process_identity import same_start, start_stamp
from raytop.wire import gcs as ray_adapter
from raytop.wire.address_file import address_file, forget
from raytop.wire.gcs import ClusterUnreachable
from raytop.wire.version import check_ray_version

EMBEDDED_START_TIMEOUT_S = 90.0
EMBEDDED_STOP_TIMEOUT_S = 45.0
PORT_ATTEMPTS = 3  # starts of the head, when another process took a port it was given

# Ray 2.58's `ray start` rewrites a loopback --node-ip-address to the host's routable address
# and binds its servers there and on every interface, unless this is in its environment
# (services.get_node_ip_address then keeps 127.0.0.1, as on macOS). Every driver that joins
# such a cluster needs it too, or Ray rewrites its address and `ray.init` hangs
# (docs/RELIABILITY.md, R6). Only a worker node's `ray start --address` is refused with it,
# which the single-node embedded cluster never runs.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# Ray 2.58's `ray start --block`, on SIGTERM, first drains its node for up to 30 s and waits
# until the node is idle. The embedded head is never idle once a run has reported (the
# detached ledger actor lives there), so every stop waited out the whole 30 s; and there is
# no other node to drain onto. 0 disables the drain (ray/_private/node.py
# `_drain_node_before_shutdown`): the stop is immediate, as before Ray added it.
NO_DRAIN_ENV = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}


@dataclass(frozen=True)
class Target:
    """A cluster to talk to: its GCS address, whether raytop started it, and whether it is
    bound to loopback only (its drivers then need ``LOOPBACK_ENV``)."""

    address: str
    embedded: bool
    loopback_only: bool = False


def _cluster_record_path() -> Path:
    return raytop_home() / "cluster.json"


class ClusterRecordUnproven(ClusterUnreachable):
    """``cluster.json`` names a live pid that is not provably the cluster raytop started:
    nothing was signalled and the record is kept. The message is one line for the user."""


def _valid_record(record: object) -> tuple[int, int] | None:
    """(pid, port) of a well-shaped ``cluster.json`` (``model.untrusted.cluster_record``),
    else None."""
    try:
        untrusted.cluster_record(record)
    except untrusted.Invalid:
        return None
    pid, address = int(record["pid"]), record["address"]  # type: ignore[index]
    if pid <= 1:
        return None
    _, _, port = address.rpartition(":")
    if not port.isdigit():
        return None
    return pid, int(port)


def _identity(record: dict, pid: int, port: int) -> tuple[psutil.Process | None, str | None]:
    """(the proven process, None), (None, None) when the pid is gone, or (None, why) when
    a live pid is not provably ``ray start --head --block --port=<port>`` started by raytop."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None, None
        started = process.create_time()
        argv = process.cmdline()
    except psutil.NoSuchProcess:
        return None, None
    except (psutil.Error, OSError):
        return None, "it cannot be inspected"
    recorded = record.get("pid_create_time")
    if not isinstance(recorded, (int, float)) or isinstance(recorded, bool):
        return None, "cluster.json records no start time (an older raytop)"
    if not same_start(record, pid, started):
        return None, f"it started at {started:.2f}, recorded {float(recorded):.2f}"
    head = next((i for i, a in enumerate(argv) if os.path.basename(a) == "ray"), None)
    rest = argv[head + 1 :] if head is not None else []
    if not (rest[:1] == ["start"] and {"--head", "--block", f"--port={port}"} <= set(rest)):
        return None, f"its command line is not `ray start --head --block --port={port}`"
    return process, None


def _proven(record: object) -> psutil.Process | None:
    shape = _valid_record(record)
    if shape is None:
        return None
    return _identity(record, *shape)[0]  # type: ignore[arg-type]


def embedded_record() -> dict | None:
    """The embedded cluster raytop started, if its owning process provably still runs."""
    record = read_json(_cluster_record_path())
    if _proven(record) is None:
        return None
    return record


def normalise_address(address: str) -> str:
    if address.startswith("ray://"):
        raise ClusterUnreachable(
            f"{address}: Ray Client addresses are not supported; give the GCS address "
            "(host:port, e.g. 10.0.0.5:6379) or 'auto'"
        )
    if address == "auto":
        found = ray_adapter.local_cluster_address()
        if not found:
            raise ClusterUnreachable("--address auto: no Ray cluster was started on this machine")
        return found
    if ":" not in address:
        return f"{address}:6379"
    return address


def resolve(cli_address: str | None) -> Target | None:
    """The cluster to use, or None when nothing is reachable and none was named.

    A named address (flag or RAY_ADDRESS) that cannot be reached raises
    ClusterUnreachable within a few seconds: the user asked for that cluster.
    """
    check_ray_version()  # another Ray line is refused before anything is asked of it
    named = cli_address or os.environ.get("RAY_ADDRESS") or None
    if named:
        address = normalise_address(named)
        ray_adapter.probe_named(address)
        record = embedded_record()
        if record and record["address"] == address:
            return _embedded_target(record)
        return Target(address, embedded=False)
    record = embedded_record()
    if record:
        try:
            ray_adapter.probe_tcp(record["address"])
            return _embedded_target(record)
        except ClusterUnreachable:
            pass
    found = ray_adapter.local_cluster_address()
    if found:
        try:
            ray_adapter.probe_tcp(found, timeout_s=1.0)
            return Target(found, embedded=False)
        except ClusterUnreachable:
            pass
    return None


def resolve_for_history(cli_address: str | None) -> tuple[Target | None, str | None]:
    """The cluster to show beside history from storage (``--storage``): the one named
    (flag or RAY_ADDRESS), else the embedded one raytop recorded; never a search for
    others. (None, why) when it cannot be reached: history needs no cluster, so that is
    no error. No record and no name: (None, None) at once, no GCS is tried."""
    named = cli_address or os.environ.get("RAY_ADDRESS") or None
    if named:
        try:
            return resolve(named), None
        except ClusterUnreachable as exc:
            return None, str(exc)
    record = embedded_record()
    if record is None:
        return None, None
    try:
        ray_adapter.probe_tcp(record["address"], timeout_s=1.0)
    except ClusterUnreachable as exc:
        return None, str(exc)
    return _embedded_target(record), None


def _embedded_target(record: dict) -> Target:
    # A cluster.json of an older raytop has no "loopback_only": that cluster is bound to the
    # host's address, and a driver given LOOPBACK_ENV would not find it.
    return Target(
        record["address"], embedded=True, loopback_only=record.get("loopback_only") is True
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_executable() -> str:
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else (shutil.which("ray") or "ray")


EMBEDDED_TASK = "starting the embedded Ray cluster"
AUTH_MODE_ENV = "RAY_AUTH_MODE"


def auth_env() -> dict[str, str]:
    """The token-authentication mode the embedded cluster is started with: the user's
    ``RAY_AUTH_MODE`` when set (every process raytop starts inherits it, so the cluster and
    its clients agree), else ``disabled``, as Ray 2.60 is on a machine with no token.

    Why it is said at all: Ray 2.60's ``ray start --head`` turns token authentication on
    by itself when a token exists on the machine (``~/.ray/auth_token``, which any local
    ``ray.init()`` of Ray 2.60 writes), while a client given an explicit address sends the
    token only under ``RAY_AUTH_MODE=token``. Left to itself, an embedded cluster started
    after any local ``ray.init()`` refused raytop's own readers, its detached driver and a
    user's ``RAY_ADDRESS=… python script.py`` alike ("InvalidAuthToken"). The cluster
    listens on loopback only. Ray lines without token authentication ignore the variable."""
    return {} if AUTH_MODE_ENV in os.environ else {AUTH_MODE_ENV: "disabled"}


class HeadPortTaken(ClusterUnreachable):
    """The head ended during start because another process had bound one of its ports
    between raytop picking it and Ray binding it (``head_start``)."""


def start_embedded(
    cluster: ClusterSection, progress: Callable[[str], None] = lambda _msg: None
) -> Target:
    """Start a local head node on loopback with logical resources and wait for it; a start
    that lost one of its ports to another process is tried again on new ones, saying so.
    ``progress``: plain lines, or a ``start_progress.Progress`` that also shows the wait."""
    for _ in range(PORT_ATTEMPTS - 1):
        try:
            return _start_head(cluster, progress)
        except HeadPortTaken as exc:
            progress(f"{exc}; starting it again on new ports")
    return _start_head(cluster, progress)


def _start_head(cluster: ClusterSection, progress: Callable[[str], None]) -> Target:
    port = _free_port()
    address = f"127.0.0.1:{port}"
    cmd = [
        _ray_executable(), "start", "--head", "--block",
        # Each worker's port picked by the OS: in Ray's default range (10002-19999), shared
        # by every cluster on the host, two clusters starting workers at once can pick the
        # same port, and a worker that cannot bind it ends its process (seen: a Tune driver
        # died with "Failed to start the grpc server" beside a second cluster).
        "--min-worker-port=0", "--max-worker-port=0",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={_free_port()}",
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--ray-client-server-port={(client_port := _free_port())}",
        "--disable-usage-stats",
    ]  # fmt: skip
    if cluster.num_cpus is not None:
        cmd.append(f"--num-cpus={cluster.num_cpus}")
    if cluster.num_gpus is not None:
        cmd.append(f"--num-gpus={cluster.num_gpus}")
    if cluster.resources:
        cmd.append(f"--resources={json.dumps(cluster.resources)}")
    log_path = raytop_home() / "cluster.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)  # reading never creates the home
    with open_log(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **LOOPBACK_ENV, **NO_DRAIN_ENV, **auth_env()},
        )  # fmt: skip
    write_json_atomic(
        _cluster_record_path(),
        {"address": address, "pid": proc.pid, **start_stamp(proc.pid),
         "started_at": time.time(), "log": str(log_path), "loopback_only": True,
         "address_file": str(address_file())},
    )  # fmt: skip
    progress(f"starting an embedded Ray cluster at {address} (log: {log_path})")
    reader = ray_adapter.GcsReader(address)
    deadline = time.monotonic() + EMBEDDED_START_TIMEOUT_S
    started = time.monotonic()
    waiting, what = waiting_of(progress), "waiting for the GCS"
    while True:
        waiting(EMBEDDED_TASK, what)
        if proc.poll() is not None:
            _cluster_record_path().unlink(missing_ok=True)
            why = exit_reason(log_path)
            raise (HeadPortTaken if why.port_taken else ClusterUnreachable)(
                f"the embedded Ray cluster exited during start (code {proc.returncode})"
                f"{': ' + visible(why.reason) if why.reason else ''}; see {log_path}"
            )
        try:
            alive = any(n["alive"] for n in reader.nodes())
            if alive and serves(proc.pid, client_port):  # head_start: it may end until then
                break
            what = (
                f"the head node is up; waiting for its Ray client server (port {client_port})"
                if alive
                else "the GCS answers; waiting for the head node"
            )
        except ClusterUnreachable:
            pass
        if time.monotonic() > deadline:
            stop_embedded()
            raise ClusterUnreachable(
                f"the embedded Ray cluster did not come up in {EMBEDDED_START_TIMEOUT_S:.0f} s; "
                f"see {log_path}"
            )
        time.sleep(0.5)
    reader.reset()
    finished_of(progress)(f"cluster up at {address} in {time.monotonic() - started:.0f} s")
    progress(
        "it listens on loopback only; to join it from your own script: "
        f"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_ADDRESS={address} python your_script.py"
    )
    return Target(address, embedded=True, loopback_only=True)


def stop_embedded(progress: Callable[[str], None] = lambda _msg: None) -> bool:
    """Stop the cluster raytop started; False when none is recorded. Never touches others:
    the recorded pid is signalled only while provably that ``ray start --head --block``
    (start time and command line); otherwise ClusterRecordUnproven, the record kept."""
    path = _cluster_record_path()
    record = read_json(path)
    if record is None:
        return False
    shape = _valid_record(record)
    if shape is None:
        raise ClusterRecordUnproven(f"{path} is not a valid cluster record; nothing signalled")
    pid, port = shape
    process, why = _identity(record, pid, port)
    if why is not None:
        raise ClusterRecordUnproven(
            f"the recorded cluster pid {pid} is not the one raytop started ({why}); not signalled"
        )
    if process is not None:
        progress(f"stopping the embedded Ray cluster at {record['address']} (pid {pid})")
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGTERM)  # psutil re-checks the start time first
        deadline = time.monotonic() + EMBEDDED_STOP_TIMEOUT_S
        while _still(process) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.2)
        # Proven again, and its own group leader (start_new_session): only then the group.
        if _identity(record, pid, port)[0] is not None and _group_leader(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _reap(pid)
    # As `ray stop` does: a plain ray.init() would otherwise try to join the dead address.
    forget(Path(str(record.get("address_file") or address_file())), str(record.get("address")))
    path.unlink(missing_ok=True)
    return True


def _still(process: psutil.Process) -> bool:
    """Whether ``process`` (the same one: psutil compares start times) still runs."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _group_leader(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _reap(pid: int) -> None:
    """Collect the exit status when we are the parent (tests), so the pid really goes."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
