"""Storage reading: a watched local folder is re-read only after a change, a remote
(pyarrow) one at most once per period, and a half-written file keeps its last good copy."""

from __future__ import annotations

import json
import os
import time

import pytest

from raytop.sources.local_storage import LocalStorage
from raytop.sources.remote_storage import RemoteStorage
from raytop.sources.storage import RESOLVE_AGAIN_S, Storages


def wait_until(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_watched_folder_is_read_again_only_after_a_change(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"v": 1}))
    storage = LocalStorage(tmp_path, max_age_s=60)
    try:
        wait_until(lambda: storage.watching)
        assert storage.read_json("state.json") == ({"v": 1}, None)
        reads = storage.reads
        for _ in range(20):
            assert storage.read_json("state.json") == ({"v": 1}, None)
        assert storage.reads == reads  # unchanged: served from the cache
        (tmp_path / "state.json").write_text(json.dumps({"v": 2}))
        wait_until(lambda: storage.read_json("state.json")[0] == {"v": 2})
        assert storage.reads > reads
    finally:
        storage.close()


def test_a_new_file_changes_the_folder_listing(tmp_path):
    storage = LocalStorage(tmp_path, max_age_s=60)
    try:
        wait_until(lambda: storage.watching)
        assert storage.glob("", "experiment_state-*.json") == []
        (tmp_path / "experiment_state-2026.json").write_text("{}")
        (tmp_path / "checkpoint_000001").mkdir()
        wait_until(lambda: storage.glob("", "experiment_state-*.json") != [])
        wait_until(lambda: any(e.is_dir for e in storage.listing("") or []))
        assert storage.exists("experiment_state-2026.json")
    finally:
        storage.close()


def test_unwatched_reads_always_go_to_disk(tmp_path):
    (tmp_path / "a.json").write_text("1")
    storage = LocalStorage(tmp_path, watch=False)
    storage.read_json("a.json")
    (tmp_path / "a.json").write_text("2")
    assert storage.read_json("a.json") == (2, None)
    assert storage._watch is None


def test_a_half_written_file_keeps_the_last_good_copy(tmp_path):
    path = tmp_path / "run" / "checkpoint_manager_snapshot.json"
    path.parent.mkdir()
    storage = LocalStorage(tmp_path, watch=False)
    path.write_text(json.dumps({"n": 1}))
    assert storage.read_json("run/checkpoint_manager_snapshot.json") == ({"n": 1}, None)
    path.write_text('{"n": 2, "checkpoint_res')  # torn mid-write
    data, warning = storage.read_json("run/checkpoint_manager_snapshot.json", "run/snap")
    assert data == {"n": 1}
    assert warning == "run/snap is unreadable (partly written?); using the last good copy"
    fresh = LocalStorage(tmp_path, watch=False)
    assert fresh.read_json("run/checkpoint_manager_snapshot.json")[0] is None


def test_remote_storage_is_polled_at_most_once_per_period(tmp_path):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "experiment_state-1.json").write_text(json.dumps({"v": 1}))
    storage = RemoteStorage(f"file://{tmp_path}/exp", period_s=3600)
    assert storage.glob("", "experiment_state-*.json") == ["experiment_state-1.json"]
    assert storage.read_json("experiment_state-1.json") == ({"v": 1}, None)
    (tmp_path / "exp" / "experiment_state-1.json").write_text(json.dumps({"v": 2}))
    (tmp_path / "exp" / "experiment_state-2.json").write_text("{}")
    assert storage.read_json("experiment_state-1.json") == ({"v": 1}, None)  # within period
    assert storage.glob("", "experiment_state-*.json") == ["experiment_state-1.json"]
    polled = RemoteStorage(f"file://{tmp_path}/exp", period_s=0)
    assert polled.read_json("experiment_state-1.json") == ({"v": 2}, None)
    assert len(polled.glob("", "experiment_state-*.json")) == 2
    assert polled.read_json("missing.json") == (None, None)
    assert polled.listing("no/such/folder") is None


def test_paths_are_located_in_the_deepest_known_root(tmp_path):
    storages = Storages()
    experiment = storages.root(str(tmp_path / "exp"))
    storage, rel = storages.locate(str(tmp_path / "exp" / "train_runs" / "r1"))
    assert storage is experiment and rel == "train_runs/r1"
    elsewhere, rel = storages.locate(str(tmp_path / "other"))
    assert elsewhere is not experiment and rel == ""
    remote, rel = Storages().locate("s3://bucket/exp/train_runs/r1")
    assert isinstance(remote, RemoteStorage) and rel == ""


@pytest.mark.parametrize("watch", [False, True])
def test_a_folder_re_pointed_is_followed_within_its_resolution_time(tmp_path, watch):
    """A symlinked run folder re-pointed from one experiment to another: a one-shot reader
    follows it at its next collection; a watching one keeps the resolution it made for
    ``RESOLVE_AGAIN_S`` (a refresh resolves no path again), then follows it."""
    now = [0.0]
    storages = Storages(watch=watch, clock=lambda: now[0])
    first, second = storages.root(str(tmp_path / "a")), storages.root(str(tmp_path / "b"))
    (tmp_path / "a" / "run").mkdir(parents=True)
    (tmp_path / "b" / "run").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "a")
    storages.new_read()
    assert storages.locate(str(link / "run")) == (first, "run")
    link.unlink()
    link.symlink_to(tmp_path / "b")
    now[0] += RESOLVE_AGAIN_S - 0.1
    storages.new_read()
    assert storages.locate(str(link / "run")) == (second if not watch else first, "run")
    now[0] += 0.1
    storages.new_read()
    assert storages.locate(str(link / "run")) == (second, "run")
    storages.close()


def test_a_polled_remote_refreshes_in_the_background_without_blocking(tmp_path):
    (tmp_path / "s.json").write_text("1")
    storage = RemoteStorage(f"file://{tmp_path}", period_s=0.05)
    assert storage.read_json("s.json") == (1, None)  # the first read waits for the data
    (tmp_path / "s.json").write_text("2")
    time.sleep(0.1)
    assert storage.read_json("s.json") == (1, None)  # stale: returned at once, refreshed
    wait_until(lambda: storage.read_json("s.json")[0] == 2)


def test_an_unreachable_remote_is_a_warning_not_an_error():
    storage = RemoteStorage("nosuchfs://bucket/exp", period_s=0)
    data, warning = storage.read_json("experiment_state-1.json")
    assert data is None and warning.startswith("nosuchfs://bucket/exp: storage unreachable (")
    assert storage.listing("") is None and storage.glob("", "*.json") == []


def test_a_closed_watcher_stops_its_thread(tmp_path):
    storages = Storages(watch=True)
    storage = storages.root(str(tmp_path))
    wait_until(lambda: storage.watching)
    storages.close()
    wait_until(lambda: not storage._watch.alive())
    assert not storage.watching


def test_closing_a_watching_collector_stops_its_watchers(tmp_path):
    from raytop.pipeline.collect import SnapshotCollector

    collector = SnapshotCollector(None, experiments=[(str(tmp_path), None)], watch=True)
    collector.collect()
    watched = list(collector._storages._by_root.values())
    assert watched
    wait_until(lambda: all(s.watching for s in watched))
    collector.close()
    wait_until(lambda: not any(s._watch.alive() for s in watched))


# -- what a read says, when it cannot read -------------------------------------------------


def test_a_path_no_os_call_can_take_is_an_unreadable_entry_not_an_exception(tmp_path):
    """A trial id with a lone surrogate or a NUL byte, joined into a path, makes os.open
    and os.scandir raise UnicodeEncodeError / ValueError: each read says so, once."""
    storage = LocalStorage(tmp_path, watch=False)
    for bad, why in (("aa_\ud800", "a lone surrogate"), ("aa\x00b", "a NUL byte")):
        data, warning = storage.read_json(f"train_runs/{bad}/snap.json", "snap")
        assert data is None and why in warning and warning.startswith("snap: its path holds")
        tail = storage.read_tail(f"{bad}/result.json", 100, "result.json")
        assert tail.data is None and why in tail.warning
        assert storage.listing(bad) is None and storage.glob(bad, "*") == []
        located, rel = Storages().locate(str(tmp_path / bad / "x"))  # realpath raised
        assert located.listing(rel) is None
    assert storage.reads == 4  # refused, not re-read as if torn
    # An undecodable byte in a real file's name is not refused (Python's surrogateescape).
    name = os.fsdecode(b"r\xff.json")
    (tmp_path / name).write_text("[1]")
    assert storage.read_json(name) == ([1], None)
    remote = RemoteStorage(f"file://{tmp_path}", period_s=0)
    assert "a lone surrogate" in remote.read_json("aa_\ud800.json")[1]
    assert remote.listing("aa_\ud800") is None and remote.error is None


def test_a_folder_where_a_file_is_expected_is_said_to_be_one_unretried(tmp_path):
    (tmp_path / "experiment_state-2026.json").mkdir()
    storage = LocalStorage(tmp_path, watch=False)
    assert storage.read_json("experiment_state-2026.json") == (
        None, "experiment_state-2026.json: is a folder, not a file; no good copy yet",
    )  # fmt: skip
    assert storage.reads == 1
    tail = storage.read_tail("experiment_state-2026.json", 100)
    assert tail.warning == "experiment_state-2026.json: is a folder, not a file"
    remote = RemoteStorage(f"file://{tmp_path}", period_s=0)
    assert remote.read_json("experiment_state-2026.json") == (
        None, "experiment_state-2026.json: is a folder, not a file; no good copy yet",
    )  # fmt: skip
    assert remote.error is None and remote.unreachable() is None  # reachable: the folder's fault
    # A folder is never picked as Tune's newest state, even named later than the file.
    (tmp_path / "experiment_state-2025.json").write_text("{}")
    assert storage.glob("", "experiment_state-*.json") == ["experiment_state-2025.json"]
    assert remote.glob("", "experiment_state-*.json") == ["experiment_state-2025.json"]


def test_json_nested_too_deep_is_said_so_and_not_read_again_as_torn(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 65 + "]" * 65)
    storage = LocalStorage(tmp_path, watch=False)
    assert storage.read_json("deep.json") == (
        None, "deep.json: nested too deep (over 64 levels): not read; no good copy yet",
    )  # fmt: skip
    assert storage.reads == 1


def test_a_file_read_again_unchanged_is_the_same_object(tmp_path):
    """An age-only re-read hands back the very copy read before (callers keep what they
    made of it by identity); a changed file a new one, and a file gone the last good."""
    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 2]}))
    storage = LocalStorage(tmp_path, watch=False)  # every read goes to the disk
    first, _ = storage.read_json("a.json")
    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 2]}, indent=2))  # same content
    again, _ = storage.read_json("a.json")
    assert again is first and storage.reads == 2
    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 3]}))
    changed, _ = storage.read_json("a.json")
    assert changed == {"n": [1, 3]} and changed is not first
    (tmp_path / "a.json").unlink()
    assert storage.read_json("a.json")[0] is changed


def test_a_file_read_again_with_the_very_bytes_is_not_parsed_or_checked_again(tmp_path):
    """A re-read (a watched file's safety net, every max_age_s) of the very bytes of its
    last good read hands back that copy without parsing and checking it again; other
    bytes (the same content laid out anew too) are parsed and checked."""
    checked: list[object] = []

    def check(data):
        checked.append(data)
        return data

    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 2]}))
    storage = LocalStorage(tmp_path, watch=False)  # every read goes to the disk
    first, _ = storage.read_json("a.json", validate=check)
    again, warning = storage.read_json("a.json", validate=check)
    assert again is first and warning is None and len(checked) == 1 and storage.reads == 2
    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 2]}, indent=2))
    assert storage.read_json("a.json", validate=check)[0] is first and len(checked) == 2
    (tmp_path / "a.json").write_text("{torn")
    assert storage.read_json("a.json", validate=check)[1].endswith("using the last good copy")
    (tmp_path / "a.json").write_text(json.dumps({"n": [1, 2]}, indent=2))  # good again
    assert storage.read_json("a.json", validate=check) == (first, None) and len(checked) == 2


def test_a_file_is_read_whole_up_to_one_byte_past_its_cap_whatever_its_stat_said():
    """``untrusted.read_upto``: the bytes there are, in a buffer of the file's size, read
    on if it grew since its size was taken, never more than one byte past the cap; and a
    tail is at most its cap, grown or not."""
    import io

    from raytop.model.untrusted import read_upto

    assert read_upto(io.BytesIO(b"abcd"), 4, 10) == b"abcd"
    assert read_upto(io.BytesIO(b"abcdefgh"), 4, 10) == b"abcdefgh"  # grew since
    assert read_upto(io.BytesIO(b"abcdefghijklmnop"), 4, 10) == b"abcdefghijk"  # past the cap
    assert read_upto(io.BytesIO(b"ab"), 4, 10) == b"ab"  # shrank
    assert read_upto(io.BytesIO(b"abcdefghijklmnop"), 10, 10) == b"abcdefghijk"
    assert read_upto(io.BytesIO(b""), 0, 10) == b""


def test_a_tail_is_at_most_its_cap(tmp_path):
    (tmp_path / "result.json").write_bytes(b"x" * 250)
    storage = LocalStorage(tmp_path, watch=False)
    tail = storage.read_tail("result.json", 100)
    assert tail.data == b"x" * 100 and tail.mid_file
    (tmp_path / "short.json").write_bytes(b"y" * 40)
    short = storage.read_tail("short.json", 100)
    assert short.data == b"y" * 40 and not short.mid_file
