"""The GCS's change signals (``wire.gcs_pubsub.Changes``): a table is read whole until the
subscription is made, once after it, then only after a message of its channel, a lost
subscription, another GCS, or its longest wait; never left unread on a doubt.

The GCS here is a real gRPC server on loopback answering Ray's own pubsub messages
(``ControlPlanePubSubGcsService``) as the GCS's publisher does: a poll is held until a
message for the subscriber is published. The real GCS's channels are read in
tests/integration/test_gcs_changes.py."""

from __future__ import annotations

import threading
import time
from concurrent import futures

import grpc
import pytest
from ray.core.generated import gcs_service_pb2, pubsub_pb2

from raytop.wire import gcs_pubsub
from raytop.wire.gcs import CREATOR_GONE_REREAD_S, GcsReader
from raytop.wire.gcs_pubsub import FULL_READ_EVERY_S, Changes
from tests.unit.test_folder_watch import wait_until


class Publisher:
    """A gRPC server standing for the GCS's publisher: ``publish`` queues a message of a
    channel for every subscriber to it; a poll is answered with the queued messages (after
    ``max_processed_sequence_id``), or held until there are some."""

    def __init__(self, publisher_id: bytes = b"gcs-1") -> None:
        self.publisher_id = publisher_id
        self.subscribed: dict[bytes, set[int]] = {}
        self.messages: list[pubsub_pb2.PubMessage] = []
        self.polls = 0
        self._wake = threading.Condition()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))

        def handler(answer, request_type):
            return grpc.unary_unary_rpc_method_handler(
                answer, request_deserializer=request_type.FromString,
                response_serializer=lambda reply: reply.SerializeToString(),
            )  # fmt: skip

        self.server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "ray.rpc.ControlPlanePubSubGcsService", {
                "GcsSubscriberCommandBatch": handler(
                    self._command, gcs_service_pb2.GcsSubscriberCommandBatchRequest),
                "GcsSubscriberPoll": handler(self._poll, gcs_service_pb2.GcsSubscriberPollRequest),
            })])  # fmt: skip
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"
        self.server.start()

    def _command(self, request, context):
        with self._wake:
            channels = self.subscribed.setdefault(request.subscriber_id, set())
            for command in request.commands:
                if command.HasField("subscribe_message"):
                    channels.add(command.channel_type)
                else:
                    channels.discard(command.channel_type)
        return gcs_service_pb2.GcsSubscriberCommandBatchReply()

    def _poll(self, request, context):
        with self._wake:
            self.polls += 1
            self._wake.notify_all()
            channels = self.subscribed.get(request.subscriber_id, set())
            after = request.max_processed_sequence_id
            if request.publisher_id != self.publisher_id:
                after = 0  # a subscriber new to this publisher gets what it queued
            while context.is_active():
                ready = [m for m in self.messages
                         if m.channel_type in channels and m.sequence_id > after]  # fmt: skip
                if ready:
                    return gcs_service_pb2.GcsSubscriberPollReply(
                        pub_messages=ready, publisher_id=self.publisher_id
                    )
                self._wake.wait(0.05)
        return gcs_service_pb2.GcsSubscriberPollReply(publisher_id=self.publisher_id)

    def publish(self, channel: int) -> None:
        with self._wake:
            sequence = len(self.messages) + 1
            self.messages.append(pubsub_pb2.PubMessage(channel_type=channel, sequence_id=sequence,
                                                       key_id=b"x"))  # fmt: skip
            self._wake.notify_all()

    def wait_for_polls(self, count: int) -> None:
        with self._wake:
            assert self._wake.wait_for(lambda: self.polls >= count, timeout=10), self.polls

    def close(self) -> None:
        self.server.stop(0)


@pytest.fixture
def publisher():
    server = Publisher()
    yield server
    server.close()


@pytest.fixture
def changes(publisher):
    made = []

    def start(clock=time.monotonic):
        signals = Changes(lambda: grpc.insecure_channel(publisher.address), clock=clock)
        made.append(signals)
        signals.start()
        return signals

    yield start
    for signals in made:
        signals.close()


def quiet(signals: Changes) -> None:
    """Read every table once after the subscription: from here on only changes signal."""
    wait_until(lambda: signals._subscribed)
    for table in FULL_READ_EVERY_S:
        signals.changed(table)


def test_every_table_is_read_until_subscribed_then_once_then_only_on_change(publisher, changes):
    signals = changes()
    wait_until(lambda: signals._subscribed)
    assert all(signals.changed(t) for t in FULL_READ_EVERY_S)  # once after subscribing
    publisher.wait_for_polls(1)
    assert not any(signals.changed(t) for t in FULL_READ_EVERY_S)
    channels = set(publisher.subscribed[signals._subscriber_id])
    assert channels == {pubsub_pb2.GCS_ACTOR_CHANNEL, pubsub_pb2.GCS_NODE_INFO_CHANNEL}


@pytest.mark.parametrize(
    ("channel", "signalled"),
    [(pubsub_pb2.GCS_ACTOR_CHANNEL, {"actors", "groups"}),
     (pubsub_pb2.GCS_NODE_INFO_CHANNEL, {"nodes", "groups"})],
)  # fmt: skip
def test_a_message_signals_its_table_and_the_groups_once(publisher, changes, channel, signalled):
    signals = changes()
    quiet(signals)
    publisher.publish(channel)
    wait_until(lambda: signals._last_sequence == 1)
    assert {t for t in FULL_READ_EVERY_S if signals.changed(t)} == signalled
    assert not any(signals.changed(t) for t in FULL_READ_EVERY_S)  # read: signal cleared


def test_a_message_of_a_channel_not_followed_signals_nothing(publisher, changes):
    signals = changes()
    quiet(signals)
    publisher.subscribed[signals._subscriber_id].add(pubsub_pb2.GCS_JOB_CHANNEL)
    publisher.publish(pubsub_pb2.GCS_JOB_CHANNEL)
    wait_until(lambda: signals._last_sequence == 1)
    assert not any(signals.changed(t) for t in FULL_READ_EVERY_S)


def test_another_gcs_on_the_address_signals_every_table(publisher, changes):
    signals = changes()
    quiet(signals)
    publisher.publish(pubsub_pb2.GCS_ACTOR_CHANNEL)
    wait_until(lambda: signals._last_sequence == 1)
    quiet(signals)
    publisher.publisher_id = b"gcs-2"  # restarted: it numbers its messages afresh
    publisher.messages.clear()
    publisher.publish(pubsub_pb2.GCS_JOB_CHANNEL)
    publisher.subscribed[signals._subscriber_id].add(pubsub_pb2.GCS_JOB_CHANNEL)
    publisher.publish(pubsub_pb2.GCS_JOB_CHANNEL)
    wait_until(lambda: signals._publisher_id == b"gcs-2")
    assert all(signals.changed(t) for t in FULL_READ_EVERY_S)


def test_a_gcs_gone_means_every_table_is_read_at_every_refresh(publisher, changes):
    signals = changes()
    quiet(signals)
    publisher.close()
    wait_until(lambda: not signals._subscribed)
    for _ in range(3):
        assert all(signals.changed(t) for t in FULL_READ_EVERY_S)


def test_a_reader_that_failed_reads_every_table_again_until_resubscribed(publisher, changes):
    signals = changes()
    quiet(signals)
    signals.lost()
    assert all(signals.changed(t) for t in FULL_READ_EVERY_S)


def test_each_table_is_read_whole_at_its_longest_wait_without_messages(publisher, changes):
    now = [1000.0]
    signals = changes(clock=lambda: now[0])
    quiet(signals)
    now[0] += FULL_READ_EVERY_S["groups"]
    assert [t for t in FULL_READ_EVERY_S if signals.changed(t)] == ["groups"]
    now[0] += FULL_READ_EVERY_S["actors"]
    assert all(signals.changed(t) for t in FULL_READ_EVERY_S)


def test_a_poll_with_no_answer_renews_the_subscription_and_signals_nothing(
    publisher, changes, monkeypatch
):
    monkeypatch.setattr(gcs_pubsub, "POLL_DEADLINE_S", 0.3)
    signals = changes()
    quiet(signals)
    publisher.subscribed.clear()  # the GCS forgot us (a subscriber that stopped polling)
    wait_until(lambda: signals._subscriber_id in publisher.subscribed)
    assert not any(signals.changed(t) for t in FULL_READ_EVERY_S)
    publisher.publish(pubsub_pb2.GCS_ACTOR_CHANNEL)
    wait_until(lambda: signals._last_sequence == 1)
    assert signals.changed("actors")


def test_close_unsubscribes_and_ends_the_thread(publisher, changes):
    signals = changes()
    quiet(signals)
    publisher.wait_for_polls(1)
    signals.close()
    assert not signals._thread.is_alive()
    assert publisher.subscribed[signals._subscriber_id] == set()
    assert not any(t.name == "raytop-gcs-changes" and t.is_alive()
                   for t in threading.enumerate())  # fmt: skip


def test_a_group_whose_creator_is_gone_is_read_again_until_ray_removes_it(monkeypatch):
    """No message says Ray removed a dead creator's group: while one is held, a following
    reader reads the groups at every refresh (else the view calls it leaked for seconds);
    with none, only on a signal."""
    reader = GcsReader("127.0.0.1:1", follow=True)
    dead = {"pg_id": "a", "creator_dead": True, "detached": False}
    answers = [[dead], [dead], [], []]
    read: list[str] = []

    def answer(table, *args, **kwargs):
        read.append(table)
        return answers.pop(0), {}

    monkeypatch.setattr(reader, "_read", answer)
    monkeypatch.setattr(reader, "_changed", lambda table: False)  # no signal at all
    assert reader.placement_groups() == [dead]  # the first read
    assert reader.placement_groups() == [dead]  # read again: still there
    assert reader.placement_groups() == []  # read again: removed
    assert reader.placement_groups() == []  # none dead: not read
    assert read == ["groups"] * 3


def test_a_group_still_held_after_the_window_is_a_leak_read_at_the_usual_pace(monkeypatch):
    """A group Ray never removes (a real leak) is read at every refresh only for
    ``CREATOR_GONE_REREAD_S`` after its creator was first seen gone, then on a signal (or
    the usual 5 s): a lasting leak does not cost a whole read of the groups each refresh.
    Another group's creator dying later opens the window again."""
    reader = GcsReader("127.0.0.1:1", follow=True)
    now = [1000.0]
    reader.clock = lambda: now[0]
    leaked = {"pg_id": "a", "creator_dead": True, "detached": False}
    later = {"pg_id": "b", "creator_dead": True, "detached": False}
    held = [[leaked]]
    read: list[float] = []

    def answer(table, *args, **kwargs):
        read.append(now[0])
        return list(held[0]), {}

    signal = [False]
    monkeypatch.setattr(reader, "_read", answer)
    monkeypatch.setattr(reader, "_changed", lambda table: signal[0])
    for step in range(0, 30, 2):  # a refresh every 2 s for 30 s
        now[0] = 1000.0 + step
        assert reader.placement_groups() == [leaked]
    assert read == [1000.0 + s for s in range(0, int(CREATOR_GONE_REREAD_S), 2)]
    now[0], signal[0], held[0] = 1040.0, True, [leaked, later]  # a signal: read, b is new
    reader.placement_groups()
    signal[0] = False
    now[0] = 1042.0
    reader.placement_groups()  # b's window: read again, a's long closed
    assert read[-2:] == [1040.0, 1042.0]
