"""The GCS's tables over gRPC (``wire.gcs_rpc``, ``wire.gcs.GcsReader``): a reply's rows
split as protobuf itself would parse them, and a GCS that answers badly, or not at all,
is a ``ClusterUnreachable`` in one line, never the end of raytop's process.

The GCS here is a real gRPC server on loopback answering Ray's own reply messages: Ray's
C++ accessor, which raytop read these tables with before, ended the process on any reply
that was not OK (tests/integration/test_faults.py restarts a real GCS under a reader).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent import futures

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ray.core.generated import gcs_pb2, gcs_service_pb2

from raytop.wire import gcs, gcs_rpc
from raytop.wire.gcs import ClusterUnreachable, GcsReader
from raytop.wire.gcs_rpc import ReplyError, split_reply
from raytop.wire.gcs_tables import available_per_node

ids = st.binary(min_size=0, max_size=28)
actor_rows = st.builds(
    gcs_pb2.ActorTableData,
    actor_id=ids,
    job_id=ids,
    class_name=st.text(max_size=40),
    pid=st.integers(0, 2**32 - 1),
    state=st.sampled_from([gcs_pb2.ActorTableData.ALIVE, gcs_pb2.ActorTableData.DEAD]),
)
replies = st.builds(
    gcs_service_pb2.GetAllActorInfoReply,
    status=st.builds(
        gcs_service_pb2.GcsStatus, code=st.integers(-5, 30), message=st.text(max_size=30)
    ),
    actor_table_data=st.lists(actor_rows, max_size=8),
    total=st.integers(0, 2**40),
    num_filtered=st.integers(0, 2**40),
)


@settings(max_examples=200, deadline=None)
@given(replies)
def test_a_replys_rows_are_split_as_protobuf_parses_them(reply):
    status, rows = split_reply(reply.SerializeToString(), 1, 2)
    assert gcs_service_pb2.GcsStatus.FromString(status) == reply.status
    assert [gcs_pb2.ActorTableData.FromString(r) for r in rows] == list(reply.actor_table_data)


@settings(max_examples=300, deadline=None)
@given(replies, st.data())
def test_bytes_that_are_not_a_whole_reply_raise_reply_error_and_nothing_else(reply, data):
    whole = reply.SerializeToString()
    cut = data.draw(st.integers(0, max(len(whole) - 1, 0)))
    noise = data.draw(st.binary(max_size=64))
    for sample in (whole[:cut], noise, whole[:cut] + noise):
        with contextlib.suppress(ReplyError):
            split_reply(sample, 1, 2)


class Gcs:
    """A gRPC server on loopback standing for the GCS's node service: answers
    ``GetAllNodeInfo`` with ``self.reply`` (bytes), or never while ``self.silent``;
    ``GetAllAvailableResources`` with no rows."""

    def __init__(self) -> None:
        self.reply = b""
        self.silent = threading.Event()
        self.released = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))

        def handler(answer):
            return grpc.unary_unary_rpc_method_handler(
                answer, request_deserializer=bytes, response_serializer=bytes
            )

        self.server.add_generic_rpc_handlers([
            grpc.method_handlers_generic_handler(
                "ray.rpc.NodeInfoGcsService", {"GetAllNodeInfo": handler(self._answer)}),
            grpc.method_handlers_generic_handler(
                "ray.rpc.NodeResourceInfoGcsService",
                {"GetAllAvailableResources": handler(lambda request, context: b"")}),
        ])  # fmt: skip
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"
        self.server.start()

    def _answer(self, request, context):
        if self.silent.is_set():
            self.released.wait(10)
        return self.reply

    def close(self) -> None:
        self.released.set()
        self.server.stop(0)


@pytest.fixture
def fake_gcs():
    server = Gcs()
    yield server
    server.close()


def node_reply(code: int = 0, message: str = "") -> bytes:
    node = gcs_pb2.GcsNodeInfo(
        node_id=b"\x01" * 28,
        node_manager_address="10.0.0.7",
        state=gcs_pb2.GcsNodeInfo.ALIVE,
        resources_total={"CPU": 4.0, "node:__internal_head__": 1.0},
    )
    return gcs_service_pb2.GetAllNodeInfoReply(
        status=gcs_service_pb2.GcsStatus(code=code, message=message), node_info_list=[node]
    ).SerializeToString()


def test_a_gcs_answering_not_ok_is_unreachable_and_the_next_good_answer_is_read(fake_gcs):
    reader = GcsReader(fake_gcs.address)
    fake_gcs.reply = node_reply(
        16, "WrongClusterID: Perhaps the client is accessing GCS after it has restarted."
    )
    with pytest.raises(ClusterUnreachable) as raised:
        reader.nodes()
    assert "WrongClusterID" in str(raised.value) and "\n" not in str(raised.value)
    fake_gcs.reply = node_reply()
    (node,) = reader.nodes()
    assert (node["address"], node["alive"], node["is_head"]) == ("10.0.0.7", True, True)
    assert node["resources_total"]["CPU"] == 4.0


@pytest.mark.parametrize(("reply", "said"), [
    (node_reply()[:-3], "ends inside"),
    # A whole reply (field 2, three bytes) whose row is not a node: an unended number.
    (b"\x12\x03\xff\xff\xff", "GcsNodeInfo"),
], ids=["cut short", "row not a node"])  # fmt: skip
def test_a_reply_that_is_not_a_reply_is_unreachable_in_one_line(fake_gcs, reply, said):
    fake_gcs.reply = reply
    with pytest.raises(ClusterUnreachable) as raised:
        GcsReader(fake_gcs.address).nodes()
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_gcs_that_does_not_answer_is_unreachable_after_the_read_deadline(fake_gcs, monkeypatch):
    monkeypatch.setattr(gcs, "READ_DEADLINE_S", 0.5)
    fake_gcs.silent.set()
    with pytest.raises(ClusterUnreachable) as raised:
        GcsReader(fake_gcs.address).nodes()
    assert str(raised.value) == (
        f"Ray cluster at {fake_gcs.address} accepted the connection but did not answer in 0.5 s"
    )


def test_a_reply_over_the_cap_is_not_read_and_said_in_one_line(fake_gcs, monkeypatch):
    """A reply is untrusted: over ``MAX_REPLY_BYTES`` gRPC refuses it before it is held
    (Ray's own channel would take 512 MiB), and raytop says so, naming the cap."""
    monkeypatch.setattr(gcs_rpc, "MAX_REPLY_BYTES", 200)
    fake_gcs.reply = gcs_service_pb2.GetAllNodeInfoReply(
        status=gcs_service_pb2.GcsStatus(code=0),
        node_info_list=[gcs_pb2.GcsNodeInfo(node_id=bytes([i]) * 28, labels={"x": "y" * 50})
                        for i in range(4)],
    ).SerializeToString()  # fmt: skip
    assert len(fake_gcs.reply) > 200
    with pytest.raises(ClusterUnreachable) as raised:
        GcsReader(fake_gcs.address).nodes()
    said = str(raised.value)
    assert said.startswith(f"Ray cluster at {fake_gcs.address}: GetAllNodeInfo: RESOURCE_EXHAUSTED")
    assert "Received message larger than max" in said  # gRPC's own words: why
    assert said.endswith(": not read (raytop reads at most 200 bytes a table)")
    assert "\n" not in said
    fake_gcs.reply = node_reply()  # under the cap: read
    (node,) = GcsReader(fake_gcs.address).nodes()
    assert node["address"] == "10.0.0.7"


def test_a_nodes_free_resources_are_parsed_again_only_when_its_row_changed():
    """``available_per_node``: the rows Ray's protobuf parses, by node; a row of the very
    bytes of the last read keeps its parsed figures (the same dict)."""

    def row(node: bytes, cpus: float) -> bytes:
        return gcs_pb2.AvailableResources(
            node_id=node, resources_available={"CPU": cpus}
        ).SerializeToString()

    first, known = available_per_node([row(b"\x01" * 28, 4.0), row(b"\x02" * 28, 2.0)], {})
    assert first == {"01" * 28: {"CPU": 4.0}, "02" * 28: {"CPU": 2.0}}
    again, known = available_per_node([row(b"\x01" * 28, 4.0), row(b"\x02" * 28, 1.0)], known)
    assert again["01" * 28] is first["01" * 28]  # the same bytes: not parsed again
    assert again["02" * 28] == {"CPU": 1.0} and len(known) == 2  # the old row forgotten
