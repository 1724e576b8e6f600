"""Why an embedded head ended during its start, read from its log (``launch.head_start``), and
how many starts a lost port earns (``launch.cluster.start_embedded``)."""

from __future__ import annotations

import os

import pytest

from raytop.launch import cluster
from raytop.launch.head_start import MAX_REASON_CHARS, HeadExit, exit_reason, serves
from raytop.launch.spec import ClusterSection

# The end of a real Ray 2.60 head's log whose client server port another socket held.
CLIENT_PORT_HELD = (
    '  File ".../grpc/_common.py", line 179, in validate_port_binding_result\n'
    "    raise RuntimeError(_ERROR_MESSAGE_PORT_BINDING_FAILED % address)\n"
    "RuntimeError: Failed to bind to address 127.0.0.1:57031; set GRPC_VERBOSITY=debug "
    "environment variable to see detailed error message.\n"
    "\x1b[39m\n"
    "2026-12-07 04:07:56,464\tERR scripts.py:128 -- \x1b[31m----- END "
    "ray_client_server.err tail (exit code(s)=1) -----\x1b[39m\n"
    "2026-12-07 04:07:56,464\tERR scripts.py:1315 -- \x1b[31mRemaining processes will be "
    "killed.\x1b[39m\n"
)


def test_a_port_held_by_another_process_is_named_with_the_logs_words(tmp_path):
    log = tmp_path / "cluster.log"
    log.write_text(CLIENT_PORT_HELD)
    why = exit_reason(log)
    assert why.port_taken
    assert why.reason.startswith("RuntimeError: Failed to bind to address 127.0.0.1:57031")


@pytest.mark.parametrize(
    "line",
    ["OSError: [Errno 98] Address already in use",
     "ValueError: Ray component worker_ports is trying to use a port number 6379 that is "
     "used by other components.",
     "\x1b[31mport 6379 is already in use\x1b[39m"],
)  # fmt: skip
def test_other_words_for_a_taken_port(tmp_path, line):
    log = tmp_path / "cluster.log"
    log.write_text(f"starting\n{line}\n")
    why = exit_reason(log)
    assert why.port_taken == ("in use" in line)
    assert "\x1b" not in why.reason and why.reason


def test_any_other_end_gives_its_last_error_line_and_no_retry(tmp_path):
    log = tmp_path / "cluster.log"
    log.write_text("ok\nValueError: first\nTypeError: --num-cpus must be an int\nbye\n")
    assert exit_reason(log) == HeadExit("TypeError: --num-cpus must be an int", False)
    log.write_text("x" * 10 + "Exception: " + "y" * 5000)
    assert len(exit_reason(log).reason) == MAX_REASON_CHARS


def test_a_log_that_cannot_be_read_names_nothing(tmp_path):
    assert exit_reason(tmp_path / "missing.log") == HeadExit("", False)
    os.mkfifo(tmp_path / "fifo")  # never blocks: regular files only
    assert exit_reason(tmp_path / "fifo") == HeadExit("", False)
    (tmp_path / "empty.log").write_text("")
    assert exit_reason(tmp_path / "empty.log") == HeadExit("", False)


def test_a_lost_port_earns_new_starts_up_to_the_limit(monkeypatch):
    starts: list[int] = []
    said: list[str] = []
    target = cluster.Target("127.0.0.1:1", embedded=True, loopback_only=True)

    def lost(times: int):
        def start(_cluster, _progress):
            starts.append(1)
            if len(starts) <= times:
                raise cluster.HeadPortTaken(f"lost port {len(starts)}")
            return target

        return start

    monkeypatch.setattr(cluster, "_start_head", lost(cluster.PORT_ATTEMPTS - 1))
    assert cluster.start_embedded(ClusterSection(num_cpus=1), said.append) is target
    assert len(starts) == cluster.PORT_ATTEMPTS
    assert said == [f"lost port {n}; starting it again on new ports"
                    for n in range(1, cluster.PORT_ATTEMPTS)]  # fmt: skip

    starts.clear()
    monkeypatch.setattr(cluster, "_start_head", lost(cluster.PORT_ATTEMPTS))
    with pytest.raises(cluster.HeadPortTaken, match=f"lost port {cluster.PORT_ATTEMPTS}"):
        cluster.start_embedded(ClusterSection(num_cpus=1))
    assert len(starts) == cluster.PORT_ATTEMPTS


def test_serves_sees_only_the_heads_own_listening_processes(tmp_path):
    import signal
    import socket
    import subprocess
    import sys

    listen = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
              "s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)")  # fmt: skip
    # The head's ``ray start`` stands in as a shell whose child listens, as the client
    # server is the head's grandchild.
    head = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{listen}" & wait'],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    other = socket.socket()  # a port someone else holds: never the head's
    other.bind(("127.0.0.1", 0))
    other.listen()
    try:
        port = int(head.stdout.readline())
        assert serves(head.pid, port)
        assert not serves(head.pid, other.getsockname()[1])
    finally:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        other.close()
    assert not serves(head.pid, port)  # ended
