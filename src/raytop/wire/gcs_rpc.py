"""The GCS's tables over gRPC: nodes, available resources, actors, placement groups.

Read the way Ray's own State API reads them (``ray.util.state``'s data source): Ray's
generated stubs over a Python gRPC channel made as ``ray._private.gcs_utils.
create_gcs_channel`` makes it (Ray's ``init_grpc_channel``: its TLS and token
authentication), but with a reply capped at ``MAX_REPLY_BYTES`` where Ray's own allows
512 MiB: a reply is untrusted input, and one over the cap is an error naming it, never
read. Not through Ray's
C++ ``GlobalStateAccessor``: that client has no per-call timeout, and it ends the whole
process on any reply that is not OK. A GCS that died while a read was in flight and came
back on the same address answers the old client "WrongClusterID", and the accessor's
check then aborted raytop (``global_state_accessor.cc:111``; docs/RELIABILITY.md, "A GCS
restarted in place under a read", and the frozen-GCS test of
tests/integration/test_faults.py). Here a failed call is an exception, every call has a
deadline, and the channel is closed and made anew after a failure.

The replies are kept as bytes and split into their rows' serialized bytes
(``split_reply``): the readers parse only rows whose bytes changed since the last read
(``wire.gcs_tables``), where parsing the whole reply would build every row again.
"""

from __future__ import annotations

from typing import Any

from raytop.wire.version import import_ray

# The largest reply read: 64 MiB is ~8 times the four tables of a 10,000-trial sweep on
# 500 nodes (benchmarks/scale_bench.py: 2,500 alive actors, 2,000 groups, 9 MB in all).
MAX_REPLY_BYTES = 64 * 1024 * 1024

# service stub, method, request message, the reply's repeated field of rows
TABLES: dict[str, tuple[str, str, str, str]] = {
    "nodes": ("NodeInfoGcsService", "GetAllNodeInfo", "GetAllNodeInfoRequest", "node_info_list"),
    "available": ("NodeResourceInfoGcsService", "GetAllAvailableResources",
                  "GetAllAvailableResourcesRequest", "resources_list"),
    "actors": ("ActorInfoGcsService", "GetAllActorInfo", "GetAllActorInfoRequest",
               "actor_table_data"),
    "groups": ("PlacementGroupInfoGcsService", "GetAllPlacementGroup",
               "GetAllPlacementGroupRequest", "placement_group_table_data"),
}  # fmt: skip


class ReplyError(RuntimeError):
    """The GCS answered a read with a status that is not OK, or with bytes that are not
    its reply, or the call failed in gRPC."""


class TooLarge(ReplyError):
    """The read ended RESOURCE_EXHAUSTED: as a rule a reply over ``MAX_REPLY_BYTES``,
    refused by gRPC before it is held."""


class NoAnswer(ReplyError):
    """The read's deadline passed with no answer: a GCS that accepts connections and does
    not answer (frozen, stopping, overloaded)."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The base-128 varint at ``at`` in ``data`` and the offset after it."""
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ReplyError("a reply ends inside a number")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def split_reply(data: bytes, status_field: int, rows_field: int) -> tuple[bytes, list[bytes]]:
    """A serialized reply's status message and its repeated rows, each as its own bytes
    (protobuf's wire format: a key ``field << 3 | type``, then the value; the status and
    the rows are length-delimited, type 2). Other fields are skipped."""
    status, rows = b"", []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        field, kind = key >> 3, key & 7
        if kind == 0:
            _, at = _varint(data, at)
        elif kind == 1:
            at += 8
        elif kind == 5:
            at += 4
        elif kind == 2:
            size, at = _varint(data, at)
            value = data[at : at + size]
            if len(value) != size:
                raise ReplyError("a reply ends inside a field")
            at += size
            if field == rows_field:
                rows.append(value)
            elif field == status_field:
                status = value
        else:
            raise ReplyError(f"a reply has a field of wire type {kind}")
    if at != len(data):
        raise ReplyError("a reply ends inside a field")
    return status, rows


def _said(method: str, exc: Any) -> str:
    """A gRPC error as one line: its status and details, not its debug string."""
    code = exc.code() if callable(getattr(exc, "code", None)) else None
    name = getattr(code, "name", "") or "error"
    details = exc.details() if callable(getattr(exc, "details", None)) else ""
    return f"{method}: {name}" + (f" ({details[:200]})" if details else "")


class _RawReplies:
    """A channel whose calls hand back the reply's bytes: Ray's stubs name the methods
    and serialize the requests, and ``split_reply`` takes the replies apart."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        kwargs["response_deserializer"] = None
        if len(args) > 1:  # (request_serializer, response_deserializer, ...) by position
            args = (args[0], None, *args[2:])
        return self._channel.unary_unary(method, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # the stubs' other calls, if they make any
        return getattr(self._channel, name)


class GcsTables:
    """One channel to the GCS and the four reads raytop makes of it."""

    def __init__(self, address: str, channel: Any = None) -> None:
        import_ray()
        # heavy: Ray's generated gRPC modules (~1 s), only once a cluster is read
        import grpc  # Ray's own dependency, as Ray's State API uses it
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        self._pb = gcs_service_pb2
        self._grpc = grpc
        self._channel = channel if channel is not None else capped_channel(address)
        raw = _RawReplies(self._channel)
        self._calls = {
            table: getattr(getattr(gcs_service_pb2_grpc, f"{service}Stub")(raw), method)
            for table, (service, method, _request, _rows) in TABLES.items()
        }

    def rows(self, table: str, timeout_s: float, **request: Any) -> list[bytes]:
        """The serialized rows of ``table`` (a key of ``TABLES``), asked with ``request``'s
        fields; a gRPC error, a missed deadline or a status that is not OK raises."""
        service, method, request_name, rows_name = TABLES[table]
        reply_type = (
            self._pb.DESCRIPTOR.services_by_name[service].methods_by_name[method].output_type
        )
        try:
            data = self._calls[table](getattr(self._pb, request_name)(**request), timeout=timeout_s)
        except self._grpc.RpcError as exc:
            if exc.code() == self._grpc.StatusCode.DEADLINE_EXCEEDED:
                raise NoAnswer(f"{method}: no answer in {timeout_s:g} s") from None
            if exc.code() == self._grpc.StatusCode.RESOURCE_EXHAUSTED:
                # gRPC's own words say why (a reply over the cap: "Received message larger
                # than max"); the cap is said beside them, not claimed as the cause.
                raise TooLarge(f"{_said(method, exc)}: not read (raytop reads at most "
                               f"{MAX_REPLY_BYTES:,} bytes a table)") from None  # fmt: skip
            raise ReplyError(_said(method, exc)) from None
        status, rows = split_reply(
            bytes(data),
            reply_type.fields_by_name["status"].number,
            reply_type.fields_by_name[rows_name].number,
        )
        answer = self._pb.GcsStatus.FromString(status)
        if answer.code != 0:
            raise ReplyError(f"{method}: {answer.message or f'status {answer.code}'}")
        return rows

    def close(self) -> None:
        self._channel.close()


def capped_channel(address: str) -> Any:
    """A channel to the GCS as Ray's ``create_gcs_channel`` makes one (its options: no
    HTTP proxy, keepalive), but receiving at most ``MAX_REPLY_BYTES`` a reply."""
    # heavy: Ray's gRPC helpers, only once a cluster is read
    from ray._private import gcs_utils, ray_constants
    from ray._private.grpc_utils import init_grpc_channel

    ray_options = getattr(gcs_utils, "_GRPC_OPTIONS", None)
    if ray_options is None:  # a Ray whose options are not there: its global ones at least
        ray_options = list(getattr(ray_constants, "GLOBAL_GRPC_OPTIONS", ()))
    options = [(k, v) for k, v in ray_options if k != "grpc.max_receive_message_length"]
    options.append(("grpc.max_receive_message_length", MAX_REPLY_BYTES))
    return init_grpc_channel(address, options=options)
