"""A head whose port another process took between raytop picking it and Ray binding it
(seen on CI: a second cluster started beside the suite's and the three-node head ended
"during start (code 1)"): the start says why, in the log's own words, and is tried again
on new ports, on a real ``ray start --head``."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import own_ray_tmpdir

pytestmark = pytest.mark.ray


@pytest.mark.own_cluster
def test_a_head_that_loses_a_port_says_so_and_starts_on_new_ports(tmp_path, monkeypatch):
    from raytop.launch import cluster
    from raytop.launch.spec import ClusterSection
    from raytop.wire.gcs import GcsReader

    (tmp_path / "home").mkdir()
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    held = socket.socket()  # another process's server on the port raytop picked
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    picks: list[int] = []
    pick = cluster._free_port

    def free_port() -> int:
        # The fourth port of the first start is the Ray client server's (start_embedded's
        # order: GCS, dashboard, dashboard agent, client server).
        picks.append(taken if len(picks) == 3 else pick())
        return picks[-1]

    monkeypatch.setattr(cluster, "_free_port", free_port)
    said: list[str] = []
    try:
        with own_ray_tmpdir("ports"), held:
            target = cluster.start_embedded(ClusterSection(num_cpus=1), said.append)
        retry = [line for line in said if "starting it again on new ports" in line]
        assert len(retry) == 1, said
        assert "exited during start (code 1)" in retry[0], retry
        assert f"Failed to bind to address 127.0.0.1:{taken}" in retry[0], retry
        assert f"127.0.0.1:{picks[0]}" not in target.address  # the second start's own GCS port
        assert target.address == f"127.0.0.1:{picks[4]}" and taken not in picks[4:]
        assert cluster.embedded_record()["address"] == target.address
        reader = GcsReader(target.address)
        try:
            assert any(n["alive"] for n in reader.nodes())
        finally:
            reader.reset()
    finally:
        cluster.stop_embedded()
