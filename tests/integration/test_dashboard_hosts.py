"""Ray's dashboard on a real cluster: its address in the GCS KV store, its answer to
``GET /nodes?view=summary`` read through raytop's wire client and validated by the model
layer, and the collector giving a node it takes for "elsewhere" those figures. The shared
test cluster (``ray_cluster``: ``ray start --head`` with the dashboard on loopback) has one
node, on this host; here it is made to look remote."""

from __future__ import annotations

import time

import psutil
import pytest

from raytop.model import untrusted, untrusted_dashboard
from raytop.model.cluster import HOST_FROM_RAY
from raytop.pipeline.collect import SnapshotCollector
from raytop.sources.host import HostProbe
from raytop.wire.dashboard import NODE_SUMMARY_PATH, DashboardClient
from tests.conftest import wait_for

pytestmark = pytest.mark.ray

REPORT_WAIT_S = 60  # the agent reports every 5 s; its first report can lag a busy start


def test_the_real_dashboard_gives_the_head_nodes_host_figures(ray_cluster, monkeypatch):
    from raytop.wire.gcs import GcsKv, GcsReader

    (head,) = [n for n in GcsReader(ray_cluster.address).nodes() if n["is_head"]]
    client = DashboardClient(GcsKv(ray_cluster.address))

    def figures():
        started = time.monotonic()
        raw = client.node_summary()
        assert time.monotonic() - started < 1.5  # the 1 s deadline, and some slack
        data = untrusted.parse(raw, untrusted_dashboard.MAX_DASHBOARD_BYTES)
        return untrusted_dashboard.node_summary(data).get(head["node_id"])

    stats = wait_for(figures, REPORT_WAIT_S, "the head node's figures on the dashboard")
    assert client.endpoint.endswith(NODE_SUMMARY_PATH)
    assert client.endpoint.startswith("http://127.0.0.1:")  # the embedded head's loopback
    assert stats.source == HOST_FROM_RAY
    assert stats.cpus >= 1 and 0 < stats.memory_used <= stats.memory_total
    assert 0.0 <= stats.cpu_percent <= 100.0 and stats.load_1m is not None
    # The same host as psutil sees it (Ray's total is the cgroup's limit, if lower).
    assert stats.memory_total <= psutil.virtual_memory().total
    assert stats.cpus <= (psutil.cpu_count() or stats.cpus)

    # Through the collector: the node taken for one elsewhere gets these figures.
    monkeypatch.setattr(HostProbe, "is_local", lambda self, address: False)
    collector = SnapshotCollector(ray_cluster.address, experiments=[])

    def far_host():
        snapshot = collector.collect()
        (node,) = [n for n in snapshot.cluster.nodes if n.node_id == head["node_id"]]
        assert not snapshot.warnings and snapshot.cluster.host_note is None
        return node.host

    host = wait_for(far_host, 15, "the collector's figures of the head as a node elsewhere")
    assert host.source == HOST_FROM_RAY and host.cpus == stats.cpus
    assert 0 < host.memory_used <= host.memory_total == stats.memory_total
