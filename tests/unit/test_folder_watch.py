"""A watched local storage watches the folders it reads, inside its root, and no others;
counted for real: the inotify watches this process holds, read from /proc/self/fdinfo."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from raytop.pipeline.collect import SnapshotCollector
from raytop.sources import folder_watch
from raytop.sources.local_storage import LocalStorage


def wait_until(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def watched_inodes() -> set[tuple[int, int]]:
    """(device, inode) of every folder any inotify watch of this process is on."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            lines = Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
        except OSError:  # closed meanwhile
            continue
        for line in lines:
            if line.startswith("inotify wd:"):
                fields = dict(part.split(":", 1) for part in line.split()[1:])
                found.add((int(fields["sdev"], 16), int(fields["ino"], 16)))
    return found


def inode(path: Path) -> tuple[int, int]:
    """``path``'s (device, inode) as the kernel writes them in fdinfo."""
    info = os.stat(path)
    return (os.major(info.st_dev) << 20) | os.minor(info.st_dev), info.st_ino


def tree(top: Path, wide: int, deep: int) -> list[Path]:
    """``wide`` chains of ``deep`` folders under ``top``, a file at each end; all the folders."""
    for i in range(wide):
        leaf = top.joinpath(f"d{i}", *(f"n{j}" for j in range(deep)))
        leaf.mkdir(parents=True)
        (leaf / "x.json").write_text("1")
    return [Path(root) for root, _dirs, _files in os.walk(top)]


@pytest.fixture
def storages():
    made: list[LocalStorage] = []
    yield made
    for storage in made:
        storage.close()


def test_the_watch_never_follows_a_symlink_out_of_the_experiment(tmp_path, storages):
    big = tmp_path / "elsewhere"
    outside = [inode(f) for f in tree(big, wide=60, deep=4)]  # 300 folders and more
    experiment = tmp_path / "exp"
    (experiment / "trial").mkdir(parents=True)
    (experiment / "trial" / "result.json").write_text("[1]")
    os.symlink(big, experiment / "big")  # a link out, and one to /
    os.symlink("/", experiment / "root")
    storage = LocalStorage(experiment, max_age_s=60)
    storages.append(storage)
    assert storage.listing("") is not None and storage.listing("big/d0") is not None
    assert storage.read_json("big/d0/n0/n1/n2/n3/x.json") == (1, None)
    assert storage.listing("root/etc") is not None
    assert storage.read_json("trial/result.json") == ([1], None)
    ours = {inode(experiment), inode(experiment / "trial")}
    wait_until(lambda: ours <= watched_inodes())  # the folders read inside: watched
    watched = watched_inodes()
    assert not watched & set(outside)  # was 300+: one per folder of the linked tree
    assert inode(Path("/")) not in watched and inode(Path("/etc")) not in watched


@pytest.mark.waits  # a file's max age
def test_a_file_outside_is_re_read_at_max_age_as_on_nfs(tmp_path, storages):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "s.json").write_text("1")
    (tmp_path / "exp").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "exp" / "link")
    storage = LocalStorage(tmp_path / "exp", max_age_s=3.0)
    storages.append(storage)
    wait_until(lambda: storage.watching)
    assert storage.read_json("link/s.json") == (1, None)
    (tmp_path / "elsewhere" / "s.json").write_text("2")
    time.sleep(0.5)  # ten debounces: a watch that saw it would have said so
    assert storage.read_json("link/s.json") == (1, None)  # no watch sees it: kept...
    wait_until(lambda: storage.read_json("link/s.json")[0] == 2)  # ...until its max age


def test_the_watch_grows_with_the_folders_read_and_misses_no_change(tmp_path, storages):
    """Reading a new folder restarts the watch on the larger set; the old watch stops
    only once the new one is up, so a change made meanwhile is still seen."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("1")
    (tmp_path / "s.json").write_text("1")
    storage = LocalStorage(tmp_path, max_age_s=60)
    storages.append(storage)
    wait_until(lambda: storage.watching)
    assert inode(tmp_path / "a") not in watched_inodes()  # not read: not watched
    assert storage.read_json("s.json") == (1, None)
    reads = storage.reads
    assert storage.read_json("s.json") == (1, None) and storage.reads == reads
    assert storage.read_json("a/x.json") == (1, None)  # a second folder: a new watcher
    (tmp_path / "s.json").write_text("2")  # while the new watcher starts
    wait_until(lambda: storage.read_json("s.json")[0] == 2, timeout_s=5)
    wait_until(lambda: inode(tmp_path / "a") in watched_inodes())
    wait_until(lambda: storage._watch.since(str(tmp_path / "a")))
    assert storage.read_json("a/x.json") == (1, None)
    reads = storage.reads
    assert storage.read_json("a/x.json") == (1, None) and storage.reads == reads  # trusted
    (tmp_path / "a" / "x.json").write_text("2")
    wait_until(lambda: storage.read_json("a/x.json")[0] == 2, timeout_s=5)
    # The folder replaced by another of its name: its watch went with it; re-watched.
    shutil.rmtree(tmp_path / "a")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("3")
    wait_until(lambda: storage.read_json("a/x.json")[0] == 3, timeout_s=5)
    wait_until(lambda: inode(tmp_path / "a") in watched_inodes())


def test_watches_stop_at_the_cap_with_one_warning_naming_the_root(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_watch, "MAX_WATCHED_FOLDERS", 5)
    experiment = tmp_path / "results" / "sweep"
    experiment.mkdir(parents=True)
    trials = [f"t{i:02d}" for i in range(12)]
    rows = [[json.dumps({"trial_id": t, "status": "TERMINATED"}),
             json.dumps({"last_result": {"loss": 1.0}})] for t in trials]  # fmt: skip
    state = {"trial_data": rows, "runner_data": {"_metric": "loss"}}
    (experiment / "experiment_state-2026.json").write_text(json.dumps(state))
    for t in trials:
        (experiment / f"fn_{t}_0").mkdir()
        (experiment / f"fn_{t}_0" / "result.json").write_text('{"loss": 0.5}\n')
    collector = SnapshotCollector(
        None, experiments=[], storage_roots=[str(tmp_path / "results")], watch=True
    )
    try:
        collector.collect()
        (exp,) = collector.collect().experiments
        assert all(t.metric_history == (0.5,) for t in exp.trials)
        assert exp.warnings == (
            f"{experiment}: 8 folder(s) read past the 5 watched: their files are read again "
            "every 5 s",
        )  # the root and 4 trial folders watched, the other 8 trials' not
        ours = {inode(experiment), *(inode(experiment / f"fn_{t}_0") for t in trials)}
        wait_until(lambda: len(ours & watched_inodes()) == 5)
    finally:
        collector.close()


def test_a_watch_that_cannot_start_says_so_and_its_folders_are_read_afresh(
    tmp_path, storages, monkeypatch
):
    """The user's inotify limit reached (watchfiles raises): the folders it could not
    watch are one warning, and their files are read from the disk each time."""
    import watchfiles

    real_watch = watchfiles.watch

    def limited(*folders, **kwargs):
        if len(folders) > 1:
            raise OSError("OS file watch limit reached. about [...]")
        return real_watch(*folders, **kwargs)

    monkeypatch.setattr(watchfiles, "watch", limited)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("1")
    storage = LocalStorage(tmp_path, max_age_s=60)
    storages.append(storage)
    wait_until(lambda: storage.watching)  # the root alone: within the limit
    assert storage.read_json("a/x.json") == (1, None)
    wait_until(lambda: storage.notices() != ())
    assert storage.notices() == (
        f"{tmp_path}: 1 folder(s) cannot be watched (OS file watch limit reached. about "
        "[...]): their files are read again at every refresh",
    )
    reads = storage.reads
    assert storage.read_json("a/x.json") == (1, None) and storage.reads == reads + 1
    assert storage.watching  # the root's watch runs on
