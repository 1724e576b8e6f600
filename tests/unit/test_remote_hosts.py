"""The host figures of nodes elsewhere, from Ray's dashboard, without a cluster: a tiny HTTP
server on 127.0.0.1 stands in for the dashboard head (serving the answer recorded from a
real one), a stand-in KV store says where it listens, and the real ``wire.dashboard``
client, ``sources.remote_hosts`` and the collector's join do the rest. The node on this
host keeps psutil's figures; the node at 203.0.113.9 (TEST-NET-3: never this host) gets
the dashboard's. A dashboard that is down, slow, wrong or too big never fails a refresh
and is not asked more than once per period."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from raytop.faces.text import status_text
from raytop.model import Snapshot, untrusted
from raytop.model.cluster import HOST_FROM_OS, HOST_FROM_RAY
from raytop.pipeline.collect import SnapshotCollector
from raytop.sources.dashboard_poll import MAX_BACKOFF_S
from raytop.sources.remote_hosts import CACHE_S, RemoteHosts
from raytop.wire.dashboard import NODE_SUMMARY_PATH, DashboardClient, DashboardUnreachable
from tests.fakes import Clock, FakeDashboard, FakeKv, ScriptedAnswers, kv_for

RECORDED = (Path(__file__).parents[1] / "data" / "dashboard" / "nodes_summary.json").read_bytes()
FAR_ID = json.loads(RECORDED)["data"]["summary"][0]["raylet"]["nodeId"]
HERE = {"node_id": "n1", "address": "127.0.0.1", "alive": True, "is_head": True,
        "resources_total": {"CPU": 4.0}, "resources_available": {"CPU": 2.0},
        "labels": {}}  # fmt: skip
FAR = {**HERE, "node_id": FAR_ID, "address": "203.0.113.9", "is_head": False}


@pytest.fixture
def dashboard() -> Iterator[FakeDashboard]:
    server = FakeDashboard(RECORDED)
    yield server
    server.stop()


class Gcs:
    def __init__(self, *nodes: dict) -> None:
        self._nodes = list(nodes)

    def nodes(self):
        return self._nodes

    def actors(self):
        return {}

    def placement_groups(self):
        return []

    def reset(self):
        pass


def collector(kv: FakeKv, *nodes: dict) -> SnapshotCollector:
    return SnapshotCollector(
        "127.0.0.1:1", experiments=[], gcs=(Gcs(*nodes), kv), dashboard=DashboardClient(kv)
    )


def unused_address() -> str:
    """An address nothing listens on (a port just let go)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    address = f"127.0.0.1:{server.server_address[1]}"
    server.server_close()
    return address


# -- the collector's join -------------------------------------------------------------------


def test_the_node_elsewhere_gets_the_dashboards_figures_and_the_local_one_psutils(dashboard):
    kv = kv_for(dashboard.address)
    collect = collector(kv, HERE, FAR)
    snapshot = collect.collect()
    here, there = snapshot.cluster.nodes
    assert here.host is not None and here.host.source == HOST_FROM_OS
    node = json.loads(RECORDED)["data"]["summary"][0]
    assert there.host is not None and there.host.source == HOST_FROM_RAY
    assert (there.host.cpu_percent, there.host.cpus, there.host.memory_used,
            there.host.memory_total, there.host.load_1m) == (
        node["cpu"], node["cpus"][0], node["mem"][3], node["mem"][0], node["loadAvg"][0][0]
    )  # fmt: skip
    assert snapshot.cluster.host_note is None and not snapshot.warnings
    assert dashboard.paths == [NODE_SUMMARY_PATH]
    assert kv.gets_from == [("dashboard", "dashboard")]
    # Refreshes within the period reuse the answer: one request, one address read.
    for _ in range(3):
        assert collect.collect().cluster.nodes[1].host == there.host
    assert dashboard.paths == [NODE_SUMMARY_PATH]
    assert kv.gets_from == [("dashboard", "dashboard")]
    # What status --json says reads back the same.
    back = Snapshot.from_json(json.loads(json.dumps(snapshot.to_json())))
    assert back.cluster.nodes[1].host == there.host


def test_a_cluster_all_on_this_host_asks_no_dashboard(dashboard):
    """A laptop cluster: the refresh costs what it did (no KV read, no request)."""
    kv = kv_for(dashboard.address)
    collect = collector(kv, HERE, {**HERE, "node_id": "n2", "is_head": False})
    for _ in range(3):
        nodes = collect.collect().cluster.nodes
        assert all(n.host is not None and n.host.source == HOST_FROM_OS for n in nodes)
    dead_far = {**FAR, "alive": False}
    (_, dead) = collector(kv, HERE, dead_far).collect().cluster.nodes
    assert dead.host is None
    assert dashboard.paths == [] and kv.gets_from == []


def test_a_dashboard_that_is_down_leaves_host_none_with_one_note_and_is_not_hammered():
    kv = kv_for(unused_address())
    collect = collector(kv, HERE, FAR)
    for _ in range(4):
        snapshot = collect.collect()
        here, there = snapshot.cluster.nodes
        assert here.host is not None and there.host is None
        assert snapshot.cluster.connected and not snapshot.warnings
        note = snapshot.cluster.host_note
        assert note is not None and "\n" not in note
        assert note.startswith("no host figures for 1 node(s) elsewhere: Ray's dashboard at ")
        assert "did not answer" in note
    # One try in the period: the address is read again before every try (it may move).
    assert kv.gets_from == [("dashboard", "dashboard")]


def test_a_cluster_without_a_dashboard_says_so_quietly():
    snapshot = collector(kv_for(None), HERE, FAR).collect()
    assert snapshot.cluster.nodes[1].host is None and not snapshot.warnings
    assert snapshot.cluster.host_note == (
        "no host figures for 1 node(s) elsewhere: Ray's dashboard is not in this cluster "
        "(no address in its KV store)"
    )
    assert f"  note: {snapshot.cluster.host_note}" in status_text(snapshot).splitlines()


def test_a_bad_answer_is_one_warning_naming_the_endpoint(dashboard):
    dashboard.body = json.dumps({"result": True, "data": {"summary": {"oops": 1}}}).encode()
    snapshot = collector(kv_for(dashboard.address), HERE, FAR).collect()
    assert snapshot.cluster.nodes[1].host is None and snapshot.cluster.host_note is None
    assert snapshot.warnings == (
        f"http://{dashboard.address}{NODE_SUMMARY_PATH}: data.summary: expected a list, got a dict",
    )


def test_a_bad_address_is_one_warning_naming_the_kv_value():
    snapshot = collector(kv_for("http://10.0.0.5:8265/x"), HERE, FAR).collect()
    (warning,) = snapshot.warnings
    assert warning.startswith("Ray's dashboard address (KV namespace dashboard, key dashboard): ")
    assert "is not host:port" in warning


# -- the HTTP exchange: one deadline, one size cap ---------------------------------------------


def test_an_error_status_is_no_answer(dashboard):
    dashboard.status = 500
    said = r"^at http://127\.0\.0\.1:\d+ answered HTTP 500"
    with pytest.raises(DashboardUnreachable, match=said):
        DashboardClient(kv_for(dashboard.address)).node_summary()


def test_a_slow_dashboard_costs_at_most_the_deadline(dashboard):
    client = DashboardClient(kv_for(dashboard.address), deadline_s=0.5)
    dashboard.delay_s = 1.0
    started = time.monotonic()
    with pytest.raises(DashboardUnreachable, match="did not answer in full within 0.5 s"):
        client.node_summary()
    assert time.monotonic() - started < 1.0
    dashboard.delay_s, dashboard.drip_s = 0.0, 0.05  # headers at once, then a byte at a time
    started = time.monotonic()
    with pytest.raises(DashboardUnreachable, match="did not answer in full within 0.5 s"):
        client.node_summary()
    assert time.monotonic() - started < 1.0


def test_an_answer_over_the_cap_is_refused(dashboard, monkeypatch):
    from raytop.model import untrusted_dashboard

    monkeypatch.setattr(untrusted_dashboard, "MAX_DASHBOARD_BYTES", 1000)
    client = DashboardClient(kv_for(dashboard.address))
    with pytest.raises(untrusted.Refused, match="over the 1,000 bytes cap"):
        client.node_summary()  # said by its Content-Length
    dashboard.length = -1  # no Content-Length: reading stops at the cap all the same
    with pytest.raises(untrusted.Refused, match="over the 1,000 bytes cap"):
        client.node_summary()
    dashboard.length = 10  # one that lies low: that much is read (and then does not parse)
    assert client.node_summary() == RECORDED[:10]


# -- the period: at most one ask per CACHE_S, less often while the dashboard is down ---------


class Answers(ScriptedAnswers):
    endpoint = "http://head:8265/nodes?view=summary"

    def node_summary(self) -> bytes:
        return self.next_answer()


def test_at_most_one_ask_per_period_and_a_bad_answer_keeps_the_last_good_figures():
    clock, client = Clock(), Answers(RECORDED, b'{"result": true, "data": []}', RECORDED)
    hosts = RemoteHosts(client, clock)
    good = hosts.stats()
    assert FAR_ID in good and client.asked == 1
    clock.now += CACHE_S - 0.1
    assert hosts.stats() == good and client.asked == 1
    clock.now += 0.1
    assert hosts.stats() == good and client.asked == 2  # bad: the last good copy
    assert hosts.warning == (
        "http://head:8265/nodes?view=summary: data: expected a dict, got a list; "
        "host figures of nodes elsewhere are from its last good answer"
    )
    clock.now += CACHE_S
    assert hosts.stats() == good and client.asked == 3 and hosts.warning is None


def test_a_dashboard_that_stays_down_is_asked_less_and_less_often():
    clock = Clock()
    client = Answers(DashboardUnreachable("at http://head:8265 did not answer (timed out)"))
    hosts = RemoteHosts(client, clock)
    asked_at = []
    for _ in range(400):  # 400 refreshes a second apart
        before = client.asked
        assert hosts.stats() == {}
        if client.asked != before:
            asked_at.append(clock.now - 1000.0)
        clock.now += 1.0
    gaps = [b - a for a, b in zip(asked_at, asked_at[1:], strict=False)]
    assert gaps[:4] == [CACHE_S, 2 * CACHE_S, 4 * CACHE_S, 8 * CACHE_S]
    assert max(gaps) == MAX_BACKOFF_S and min(gaps) >= CACHE_S
    assert hosts.note == "Ray's dashboard at http://head:8265 did not answer (timed out)"
    # Back: figures at the next ask, and the period is CACHE_S again.
    client.answers, client.asked = [RECORDED], 0
    clock.now += MAX_BACKOFF_S
    assert FAR_ID in hosts.stats() and hosts.note is None and client.asked == 1
    clock.now += CACHE_S
    hosts.stats()
    assert client.asked == 2


def test_figures_gone_when_the_dashboard_stops_answering():
    """Unreachable is not "bad": stale figures would be a guess, so none are shown."""
    clock = Clock()
    client = Answers(RECORDED, DashboardUnreachable("at http://head:8265 did not answer (x)"))
    hosts = RemoteHosts(client, clock)
    assert FAR_ID in hosts.stats()
    clock.now += CACHE_S
    assert hosts.stats() == {} and hosts.note and hosts.warning is None
