"""``jsonfile.read_capped``: the one bounded reader of raytop's own and the user's small
files. A FIFO, device or socket is refused without blocking, a file over its cap is not
read, and each refusal says truthfully why (``Unread``)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from raytop.jsonfile import (
    DIRECTORY,
    MISSING,
    NOT_REGULAR,
    TOO_LARGE,
    UNREADABLE,
    Unread,
    read_capped,
    read_json,
)
from tests.unit.bounded import answered_within, raised_within


def refusal(path: Path, max_bytes: int = 1024) -> Unread:
    return raised_within(2, lambda: read_capped(path, max_bytes), Unread)


def test_a_regular_file_is_read_whole(tmp_path):
    (tmp_path / "a").write_bytes(b"hello")
    assert read_capped(tmp_path / "a", 5) == b"hello"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    err = refusal(tmp_path / "pipe")
    assert (err.kind, err.what) == (NOT_REGULAR, "a FIFO")
    assert str(err) == f"{tmp_path / 'pipe'}: not a regular file (a FIFO): not read"


def test_a_device_behind_a_link_is_refused(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    err = refusal(tmp_path / "zero")
    assert str(err) == f"{tmp_path / 'zero'}: not a regular file (a character device): not read"


def test_a_socket_is_named_as_one(tmp_path):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        err = refusal(tmp_path / "sock")
    assert (err.kind, err.reason) == (NOT_REGULAR, "not a regular file (a socket): not read")


def test_a_folder_is_not_regular_and_says_so(tmp_path):
    err = refusal(tmp_path)
    assert (err.kind, err.what) == (NOT_REGULAR, DIRECTORY)


def test_missing(tmp_path):
    err = refusal(tmp_path / "none")
    assert (err.kind, err.reason) == (MISSING, "not found")


def test_over_the_cap_is_not_read_and_the_cap_is_said(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 1025)
    err = refusal(tmp_path / "big", 1024)
    assert err.kind == TOO_LARGE
    assert err.reason == "1,025 bytes, over the 1,024 bytes cap: not read"
    (tmp_path / "exact").write_bytes(b"x" * 1024)
    assert len(read_capped(tmp_path / "exact", 1024)) == 1024


@pytest.mark.parametrize("name", ["a\0b", "a\ud800b"], ids=["nul", "lone-surrogate"])
def test_a_name_no_system_call_takes_is_one_reason(tmp_path, name):
    err = refusal(tmp_path / name)
    assert err.kind == UNREADABLE and err.reason.startswith("not a usable file name (")


def test_read_json_says_nothing_of_what_read_capped_refuses(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert answered_within(2, lambda: read_json(tmp_path / "pipe")) == ("value", None)
    assert read_json(tmp_path / "ok.json") == {"a": 1}
    assert read_json(tmp_path) is None


def test_a_log_is_opened_without_waiting_on_a_fifo_and_only_as_a_file(tmp_path):
    """The driver's and the cluster's logs are opened for writing in folders anyone may
    write: a FIFO planted there (no reader) must not block the launch, a device is
    refused, a file is appended to or truncated as asked."""
    from raytop.jsonfile import open_log

    log = tmp_path / "driver.log"
    log.write_bytes(b"before\n")
    with open_log(log, "ab") as f:
        f.write(b"after\n")
    assert log.read_bytes() == b"before\nafter\n"
    with open_log(log, "wb") as f:
        f.write(b"fresh\n")
    assert log.read_bytes() == b"fresh\n"
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    with pytest.raises(OSError):  # ENXIO: no reader; never a wait
        open_log(fifo, "ab")
    with pytest.raises(OSError, match="not a regular file"):
        open_log(Path("/dev/null"), "ab")
