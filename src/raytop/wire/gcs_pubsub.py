"""Which GCS tables changed since they were last read: the GCS's actor and node channels.

A watching raytop (the TUI, ``run --no-tui``) reads the GCS every refresh. Its actor table
(~0.8 MB at 10,000 trials) and node table (~0.2 MB at 500 nodes) rarely change between two
refreshes, and the GCS has no "what changed since" for a read. It does publish every
change of an actor (its registration, each state it goes through) and of a node, on
``GCS_ACTOR_CHANNEL`` and ``GCS_NODE_INFO_CHANNEL``, to whoever subscribed: Ray's
dashboard keeps its actor table that way (``dashboard/modules/node/node_head.py``: it
subscribes, then reads the table whole once, then follows the messages;
docs/RAY_FACTS.md#gcs-change-channels). The placement groups (~0.8 MB at 2,000 groups)
have no channel: they are read again with either table, and every 5 s.

Here the messages are only a signal: a table is read again, whole, at the first refresh
after a message of its channel; the messages' contents (often only the changed fields of
an actor) are never merged into anything. ``Changes`` subscribes from a thread of its own,
long-polling the GCS as Ray's own subscribers do (``ray._private.gcs_pubsub``, the same
requests over Ray's generated stubs), and reports a table changed when:

- a message of its channel came (the GCS publishes after storing the change, so a read
  made after the message was seen reflects it);
- it is not subscribed yet, or its subscription failed or was lost (a poll that failed,
  the GCS's publisher id changed: a restarted GCS knows no subscriber): the table may
  have changed unseen, as it may while raytop resubscribes;
- ``FULL_READ_EVERY_S`` passed since its last read: a message the GCS dropped (its
  publisher drops a subscriber's oldest messages past a size cap) is never waited for
  longer than that.

So a table is never shown older than one refresh after a change the GCS published, and
nothing here decides what the table holds.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from raytop.wire.version import import_ray

# How often a table is read whole at least, messages or not. The placement groups have no
# channel: they are read again with the actors or nodes (a trial's group is made and
# removed about when its actor is), and every 5 s for the rest (a group that waits, then
# is placed when a task frees what it needs; one a driver made before its actor).
FULL_READ_EVERY_S = {"actors": 60.0, "nodes": 60.0, "groups": 5.0}
SIGNALLED_BY = {"actors": ("actors", "groups"), "nodes": ("nodes", "groups")}
POLL_DEADLINE_S = 30.0  # a long poll is given up (and the subscription renewed) after it
COMMAND_DEADLINE_S = 5.0  # to subscribe or unsubscribe
RETRY_AFTER_S = 1.0  # after a failed subscribe or poll
CHANNELS = {"actors": "GCS_ACTOR_CHANNEL", "nodes": "GCS_NODE_INFO_CHANNEL"}


class Changes:
    """The actor and node tables' change signals, for one GCS address. ``channel`` makes
    a gRPC channel to it (``wire.gcs_rpc``'s, so that its options and its reply cap are
    the reads'); the thread starts at ``start`` and ends at ``close``."""

    def __init__(self, channel: Callable[[], Any], clock: Callable[[], float] = time.monotonic):
        import_ray()
        # heavy: Ray's generated gRPC modules, only once a watched cluster is read
        import grpc  # Ray's own dependency
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc, pubsub_pb2

        self._grpc, self._pb, self._pubsub = grpc, gcs_service_pb2, pubsub_pb2
        self._stub_of = gcs_service_pb2_grpc.ControlPlanePubSubGcsServiceStub
        self._make_channel = channel
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._channel: Any = None
        # the GCS's channel numbers → our table names
        self._table_of = {getattr(pubsub_pb2, name): table for table, name in CHANNELS.items()}
        # A subscriber id as Ray's make them: 28 random bytes (a UniqueID).
        self._subscriber_id = random.randbytes(28)
        self._subscribed = False
        self._publisher_id = b""
        self._last_sequence = 0
        self._dirty = set(FULL_READ_EVERY_S)  # changed (or possibly changed) since last read
        self._read_at: dict[str, float] = {}

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._follow, name="raytop-gcs-changes",
                                            daemon=True)  # fmt: skip
            self._thread.start()

    def changed(self, table: str) -> bool:
        """Whether ``table`` is to be read whole now; True clears its signal (the caller
        reads it now: a change published from here on signals it again)."""
        now = self._clock()
        with self._lock:
            due = (
                not self._subscribed
                or table in self._dirty
                or table not in self._read_at
                or now - self._read_at[table] >= FULL_READ_EVERY_S[table]
            )
            if due:
                self._dirty.discard(table)
                self._read_at[table] = now
            return due

    def lost(self) -> None:
        """The caller's reads failed (the GCS may be restarting): every table is read
        whole from now until the subscription is made again."""
        with self._lock:
            self._subscribed = False
            self._dirty.update(FULL_READ_EVERY_S)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            channel, subscribed = self._channel, self._subscribed
            self._channel, self._subscribed = None, False
        if channel is not None:
            # So that the GCS keeps no messages for us; a GCS gone, a channel closed: then
            # there is nothing to undo.
            with contextlib.suppress(Exception):
                if subscribed:
                    self._stub_of(channel).GcsSubscriberCommandBatch(
                        self._command("unsubscribe_message"), timeout=1.0
                    )
            channel.close()  # ends a poll in flight
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    # -- the thread ------------------------------------------------------------------------

    def _command(self, kind: str) -> Any:
        commands = [self._pubsub.Command(channel_type=channel, **{kind: {}})
                    for channel in self._table_of]  # fmt: skip
        return self._pb.GcsSubscriberCommandBatchRequest(
            subscriber_id=self._subscriber_id, commands=commands
        )

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                with self._lock:
                    if self._stop.is_set():
                        return
                    if self._channel is None:
                        self._channel = self._make_channel()
                    stub = self._stub_of(self._channel)
                if not self._subscribed:
                    self._subscribe(stub)
                    with self._lock:  # from here on, messages say what changes
                        self._subscribed, self._publisher_id, self._last_sequence = True, b"", 0
                        self._dirty.update(FULL_READ_EVERY_S)
                self._poll(stub)
            except Exception:  # a failed call, a channel that cannot be made: try again
                if self._stop.is_set():
                    return
                self.lost()
                with self._lock:
                    channel, self._channel = self._channel, None
                if channel is not None:
                    channel.close()
                self._stop.wait(RETRY_AFTER_S)

    def _subscribe(self, stub: Any) -> None:
        """Subscribe to both channels (the GCS keeps one subscription per channel and
        subscriber id: subscribing again changes nothing)."""
        stub.GcsSubscriberCommandBatch(self._command("subscribe_message"),
                                       timeout=COMMAND_DEADLINE_S)  # fmt: skip

    def _poll(self, stub: Any) -> None:
        request = self._pb.GcsSubscriberPollRequest(
            subscriber_id=self._subscriber_id,
            max_processed_sequence_id=self._last_sequence,
            publisher_id=self._publisher_id,
        )
        try:
            reply = stub.GcsSubscriberPoll(request, timeout=POLL_DEADLINE_S)
        except self._grpc.RpcError as exc:
            if exc.code() != self._grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
            # Nothing published for a while: subscribe again, in case the GCS dropped us
            # as a subscriber that stopped polling (a failure of that is a lost one).
            self._subscribe(stub)
            return
        with self._lock:
            if reply.publisher_id != self._publisher_id:
                if self._publisher_id:  # another GCS: what it holds was never signalled
                    self._dirty.update(FULL_READ_EVERY_S)
                self._publisher_id, self._last_sequence = reply.publisher_id, 0
            for message in reply.pub_messages:
                if message.sequence_id <= self._last_sequence:
                    continue  # sent again after a poll that failed in flight
                self._last_sequence = message.sequence_id
                channel = self._table_of.get(message.channel_type)
                self._dirty.update(SIGNALLED_BY.get(channel, ()))
