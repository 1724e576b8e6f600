"""What Ray's dashboard says of the hosts (model.untrusted_dashboard): the answer recorded
from a real cluster's ``GET /nodes?view=summary`` (Ray 2.58.1, one node, after its agent's
first report) is accepted as Ray wrote it; every other shape, a figure out of range, NaN, a
list where an object belongs, is refused with a message naming where."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from raytop.model import HostStats, untrusted, untrusted_dashboard
from raytop.model.cluster import HOST_FROM_RAY

RECORDED = json.loads(
    (Path(__file__).parents[1] / "data" / "dashboard" / "nodes_summary.json").read_bytes()
)
NODE_ID = RECORDED["data"]["summary"][0]["raylet"]["nodeId"]


def answer(**node_changes) -> dict:
    """The recorded answer with its one node's keys replaced (``None``: removed)."""
    data = copy.deepcopy(RECORDED)
    node = data["data"]["summary"][0]
    for key, value in node_changes.items():
        if value is None:
            node.pop(key, None)
        else:
            node[key] = value
    return data


def invalid(data) -> str:
    with pytest.raises(untrusted.Invalid) as exc:
        untrusted_dashboard.node_summary(data)
    return str(exc.value)


def test_the_recorded_answer_gives_the_nodes_figures_as_ray_wrote_them():
    node = RECORDED["data"]["summary"][0]
    stats = untrusted_dashboard.node_summary(copy.deepcopy(RECORDED))
    assert stats == {
        NODE_ID: HostStats(
            cpu_percent=node["cpu"],
            cpus=node["cpus"][0],  # logical, as psutil.cpu_count() is for raytop's own host
            memory_used=node["mem"][3],
            memory_total=node["mem"][0],
            load_1m=node["loadAvg"][0][0],
            source=HOST_FROM_RAY,
        )
    }
    (figures,) = stats.values()
    assert figures.cpus >= 1 and 0 < figures.memory_used <= figures.memory_total
    assert 0.0 <= figures.cpu_percent <= 100.0


def test_a_node_whose_agent_has_not_reported_yet_has_no_figures_and_no_fault():
    """Before the agent's first report (and for a dead node) the entry has ``raylet`` and
    ``tpus`` only: seen on the real cluster in its first seconds."""
    data = copy.deepcopy(RECORDED)
    node = data["data"]["summary"][0]
    data["data"]["summary"] = [{"raylet": node["raylet"], "tpus": []}, node]
    assert list(untrusted_dashboard.node_summary(data)) == [NODE_ID]
    data["data"]["summary"] = [{"raylet": node["raylet"], "tpus": []}]
    assert untrusted_dashboard.node_summary(data) == {}


def test_absent_load_and_an_unknown_cpu_count_are_not_faults():
    figures = untrusted_dashboard.node_summary(answer(loadAvg=None, cpus=[None, None]))[NODE_ID]
    assert figures.load_1m is None and figures.cpus == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "top level: expected a dict, got a list"),
        ({**RECORDED, "result": False, "msg": "Traceback …\nboom"},
         "result: the dashboard did not answer ok: Traceback …"),
        ({"result": True}, "data: expected a dict, got null"),
        ({"result": True, "data": {"summary": {}}}, "data.summary: expected a list, got a dict"),
        ({"result": True, "data": {"summary": [[]]}},
         "data.summary[0]: expected a dict, got a list"),
        ({"result": True, "data": {"summary": [{"cpu": 1}]}},
         "data.summary[0].raylet: expected a dict, got null"),
        ({"result": True, "data": {"summary": [{"raylet": {"nodeId": "../../x"}}]}},
         "data.summary[0].raylet.nodeId: '../../x' is not a node id"),
        ({"result": True, "data": {"summary": [{}] * (untrusted_dashboard.MAX_NODES + 1)}},
         f"data.summary: {untrusted_dashboard.MAX_NODES + 1} entries, over the cap of "
         f"{untrusted_dashboard.MAX_NODES}"),
        (answer(cpu=math.nan), "data.summary[0].cpu: expected a finite number, got a number"),
        (answer(cpu=math.inf), "data.summary[0].cpu: expected a finite number, got a number"),
        (answer(cpu="12"), "data.summary[0].cpu: expected a finite number, got a string"),
        (answer(cpu=True), "data.summary[0].cpu: expected a finite number, got a bool"),
        (answer(cpu=250.0), "data.summary[0].cpu: 250 is over 100"),
        (answer(cpu=-1), "data.summary[0].cpu: -1 is below 0"),
        (answer(cpu=None), "data.summary[0]: missing key 'cpu'"),
        (answer(cpus={"logical": 8}), "data.summary[0].cpus: expected a list, got a dict"),
        (answer(cpus=[8]), "data.summary[0].cpus: 1 entries, expected 2"),
        (answer(cpus=["8", 4]), "data.summary[0].cpus[0]: expected an integer, got a string"),
        (answer(cpus=[-2, 1]), "data.summary[0].cpus[0]: -2 is below 0"),
        (answer(cpus=[10**9, 1]), "data.summary[0].cpus[0]: 1000000000 is over the cap of 65536"),
        (answer(mem=None), "data.summary[0].mem: expected a list, got null"),
        (answer(mem={"total": 1}), "data.summary[0].mem: expected a list, got a dict"),
        (answer(mem=[1, 2, 3]), "data.summary[0].mem: 3 entries, expected 4"),
        (answer(mem=[100, 50, 50.0, math.nan]),
         "data.summary[0].mem[3]: expected a finite number, got a number"),
        (answer(mem=[100, 50, 50.0, -1]), "data.summary[0].mem[3]: -1 is below 0"),
        (answer(mem=[100, 0, 200.0, 200]),
         "data.summary[0].mem: used 200 is more than the total 100"),
        (answer(mem=[2**70, 0, 0.0, 1]),
         "data.summary[0].mem[0]: 1.18059e+21 is over 1.15292e+18"),
        (answer(loadAvg=[1.0, 2.0, 3.0]),
         "data.summary[0].loadAvg: 3 entries, expected 2"),
        (answer(loadAvg=[{"1m": 1.0}, None]),
         "data.summary[0].loadAvg[0]: expected a list, got a dict"),
        (answer(loadAvg=[[-1.0, 0.0, 0.0], None]),
         "data.summary[0].loadAvg[0][0]: -1 is below 0"),
        (answer(loadAvg=[[math.nan, 0.0, 0.0], None]),
         "data.summary[0].loadAvg[0][0]: expected a finite number, got a number"),
    ],
)  # fmt: skip
def test_other_shapes_are_refused_naming_where(data, message):
    assert invalid(data) == message


def test_nan_written_by_json_is_refused_too():
    """Python's json writes NaN (and reads it back): a dashboard may send it."""
    raw = json.dumps(answer(cpu=math.nan)).encode()
    assert b"NaN" in raw
    assert invalid(untrusted.parse(raw, untrusted_dashboard.MAX_DASHBOARD_BYTES)).endswith(
        "expected a finite number, got a number"
    )


def test_an_answer_over_its_size_cap_is_refused_unread():
    with pytest.raises(untrusted.Refused, match="over the 8,388,608 bytes"):
        untrusted.parse(b" " * (untrusted_dashboard.MAX_DASHBOARD_BYTES + 1),
                        untrusted_dashboard.MAX_DASHBOARD_BYTES)  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "address"),
    [
        (b"127.0.0.1:43625", ("http", "127.0.0.1", 43625)),  # what Ray 2.58 writes
        (b"10.0.0.5:8265", ("http", "10.0.0.5", 8265)),
        (b"head-0.ray.svc:8265", ("http", "head-0.ray.svc", 8265)),
        (b"[::1]:8265", ("http", "::1", 8265)),
        (b"https://dash.example:443", ("https", "dash.example", 443)),
        ("http://10.0.0.5:8265", ("http", "10.0.0.5", 8265)),
    ],
)
def test_the_dashboard_address_is_host_and_port(raw, address):
    assert untrusted_dashboard.dashboard_address(raw) == address


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"8265", "'8265' is not host:port"),
        (b"head", "'head' is not host:port"),
        (b"10.0.0.5:http", "'10.0.0.5:http' is not host:port"),
        (b"10.0.0.5:0", "'10.0.0.5:0': port 0 is out of range"),
        (b"10.0.0.5:70000", "'10.0.0.5:70000': port 70000 is out of range"),
        (b"user@evil:80", "'user@evil:80' is not host:port"),
        (b"http://10.0.0.5:8265/admin", "'http://10.0.0.5:8265/admin' is not host:port"),
        (b"file:///etc/passwd", "'file:///etc/passwd' is not an http address"),
        (b"x" * 300 + b":1", "302 characters, over the cap of 256"),
        (42, "top level: expected bytes, got a number"),
    ],
)
def test_other_addresses_are_refused(raw, message):
    with pytest.raises(untrusted.Invalid) as exc:
        untrusted_dashboard.dashboard_address(raw)
    assert str(exc.value) == message
