"""The probe's side of a checkpoint's files, without Ray: sizes and content hashes under
the caps (a FIFO refused, never waited on), what two ranks' identical or different files
become once read back; and one probe per worker process, whoever registered it (the
cluster's RAY_TRAIN_CALLBACKS and raytop's own trainable both add one)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from contextlib import ExitStack

import pytest

from raytop.diagnose.checkpoints import pipeline
from raytop.model import untrusted_ledger_page
from raytop.model.records import CheckpointUpload
from raytop.probe import checkpoint_files, report_probe, run_probe
from raytop.probe.checkpoint_files import FileHasher, list_files, start_upload
from raytop.wire.train_hooks import RunIdentity, WorkerIdentity

IDENTITY = WorkerIdentity(
    run_id="r", run_name="exp-t1", attempt_id="a", world_rank=0, world_size=2, local_rank=0,
    node_rank=0, node_id="n1", gpu_ids=[], placement_group_id=None, run_path=None,
    declared={}, restored_from=None,
)  # fmt: skip


def blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def folder(tmp_path, name: str, files: dict[str, bytes]) -> str:
    root = tmp_path / name
    root.mkdir()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return str(root)


def uploaded(root: str, dir_name: str = "checkpoint_1") -> CheckpointUpload:
    """One upload through the probe's path: listed, hashed while 'uploading', ended."""
    record = CheckpointUpload(dir_name=dir_name, report=1, mode="SYNC", custom_upload=False,
                              files=list_files(root), sync_s=None, start=time.time(),
                              end=None, error=None)  # fmt: skip
    start_upload(record, root).ended()
    return record


def test_small_files_are_hashed_and_large_ones_in_a_thread_before_the_upload_ends(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(checkpoint_files, "INLINE_BYTES", 10)
    root = folder(tmp_path, "c", {"model.pt": b"w" * 3891, "sub/opt.pt": b"o" * 20})
    hasher = FileHasher(root, list_files(root))
    hasher.start()
    assert hasher._thread is not None  # over the inline bytes: its own thread
    assert hasher.result() == {"model.pt": blake(b"w" * 3891), "sub/opt.pt": blake(b"o" * 20)}


def test_the_caps_leave_files_unhashed(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint_files, "HASH_MAX_FILE_BYTES", 100)
    monkeypatch.setattr(checkpoint_files, "HASH_MAX_CHECKPOINT_BYTES", 150)
    files = {"a": 90, "big": 101, "b": 50, "c": 20}
    assert checkpoint_files.to_hash(files) == {"a": 90, "b": 50}  # "c" is past the 150 bytes
    monkeypatch.setattr(checkpoint_files, "HASH_MAX_FILES", 1)
    assert checkpoint_files.to_hash(files) == {"a": 90}


def test_a_fifo_or_a_file_that_changed_size_is_not_hashed_and_nothing_blocks(tmp_path):
    root = folder(tmp_path, "c", {"model.pt": b"x" * 10, "grew.pt": b"y"})
    os.mkfifo(os.path.join(root, "pipe"))
    files = list_files(root)
    with open(os.path.join(root, "grew.pt"), "ab") as f:
        f.write(b"more")
    done = threading.Event()
    result: dict = {}

    def run() -> None:
        hasher = FileHasher(root, files)
        hasher.start()
        result.update(hasher.result())
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(5), "hashing waited on a FIFO"
    assert result == {"model.pt": blake(b"x" * 10)}


def test_an_upload_that_ends_early_keeps_only_the_hashes_taken_by_then(tmp_path, monkeypatch):
    root = folder(tmp_path, "c", {"model.pt": b"x" * 10})
    started = threading.Event()
    release = threading.Event()

    def slow_hash(path, size, stop):
        started.set()
        release.wait(5)
        return "0" * 32

    monkeypatch.setattr(checkpoint_files, "INLINE_BYTES", 0)
    monkeypatch.setattr(checkpoint_files, "file_hash", slow_hash)
    hasher = FileHasher(root, list_files(root))
    hasher.start()
    assert started.wait(5)
    assert hasher.result(timeout=0.05) == {}  # the folder may change from here on
    release.set()
    hasher._thread.join(5)
    assert hasher.result(timeout=0) == {}  # a hash finished after the end is not kept


def read_back(*records: CheckpointUpload):
    """Two ranks' uploads through the wire and the validator, into the pipeline."""
    ranks = {str(rank): {"rank": rank, "checkpoints": [record]}
             for rank, record in enumerate(records)}  # fmt: skip
    page = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 2,
            "first_seen_at": 1.0, "placement_group_id": None, "ranks": ranks}  # fmt: skip
    read = untrusted_ledger_page.ledger_page(json.loads(json.dumps(page)))["ranks"]
    uploads = {int(k): v["checkpoints"] for k, v in read.items()}
    (checkpoint,) = pipeline(uploads, None, None, now=time.time())
    return checkpoint


def test_identical_files_of_two_ranks_read_back_as_replicated_and_different_ones_collide(
    tmp_path,
):
    same = read_back(uploaded(folder(tmp_path, "r0", {"model.pt": b"w" * 64})),
                     uploaded(folder(tmp_path, "r1", {"model.pt": b"w" * 64})))  # fmt: skip
    assert (same.replicated, same.collisions, same.redundant_bytes) == ({"model.pt": (0, 1)},
                                                                         {}, 64)  # fmt: skip
    differ = read_back(uploaded(folder(tmp_path, "r2", {"model.pt": b"a" * 64})),
                       uploaded(folder(tmp_path, "r3", {"model.pt": b"b" * 64})))  # fmt: skip
    assert (differ.replicated, differ.collisions) == ({}, {"model.pt": (0, 1)})


@pytest.fixture
def fresh_process(monkeypatch):
    """A worker process no probe has initialised yet (the module's globals restored after)."""
    monkeypatch.setattr(report_probe, "_STATE", None)
    monkeypatch.setattr(report_probe, "_OWNER", None)
    monkeypatch.setattr(report_probe, "train_worker_identity", lambda: IDENTITY)
    monkeypatch.setenv("RAYTOP_PROBE_FLUSH_S", "3600")  # the flush thread never sends
    yield
    if report_probe._STATE is not None:
        report_probe._STATE.finish()


def test_two_report_probes_in_one_worker_count_each_report_once(fresh_process):
    # Train's list: the RAY_TRAIN_CALLBACKS one first, then the RunConfig's (raytop's).
    from_env, from_trainable = report_probe.ReportProbe(), report_probe.ReportProbe()
    for probe in (from_env, from_trainable):
        probe.after_init_train_context()
    for _ in range(3):
        with ExitStack() as stack:  # Train enters every callback's hook, nested
            for probe in (from_env, from_trainable):
                stack.enter_context(probe.on_report())
    state = report_probe._STATE
    assert (state.entered, state.exited) == (3, 3)
    assert from_trainable._state() is None  # inert: no state, no flush thread of its own
    assert sum(t.name == "raytop-probe" and t.is_alive() for t in threading.enumerate()) >= 1
    from_trainable.before_worker_shutdown()  # the inert one's shutdown stops nothing
    assert state._thread.is_alive()
    from_env.before_worker_shutdown()
    assert not state._thread.is_alive()


def test_two_run_probes_in_one_controller_record_the_run_once(monkeypatch):
    identity = RunIdentity("r", "exp-t1", {"max_failures": 0})
    monkeypatch.setattr(run_probe, "train_run_identity", lambda context: identity)
    sent: list[dict] = []

    class Ledger:
        class update_run:  # noqa: N801 - an actor method's shape: ``.remote(message)``
            @staticmethod
            def remote(message):
                sent.append(message)

    monkeypatch.setattr(run_probe, "get_or_create_ledger", lambda: Ledger)
    first, second = run_probe.RunProbe(), run_probe.RunProbe()
    for probe in (first, second):
        probe.after_controller_start(object())
    assert first._recorder is not None and second._recorder is None
    assert len(sent) == 1


def test_a_run_probe_whose_ledger_died_sends_its_whole_record_to_the_next(monkeypatch):
    """A call to a dead actor fails only through its ref: the RunProbe looks at its last
    send's first, and gives a Ledger made anew the whole record (before, every change went
    on to the dead handle, and the run's attempts were gone from the view for good)."""
    identity = RunIdentity("r", "exp-t1", {"max_failures": 0})
    monkeypatch.setattr(run_probe, "train_run_identity", lambda context: identity)
    ledgers: list[list[dict]] = []  # what each Ledger made so far was sent
    dead: set[int] = set()  # the Ledgers killed
    failed: set[object] = set()  # the refs of calls made to a dead one

    def make_ledger():
        received: list[dict] = []
        ledgers.append(received)
        number = len(ledgers) - 1

        class Ledger:
            class update_run:  # noqa: N801 - an actor method's shape: ``.remote(message)``
                @staticmethod
                def remote(message):
                    ref = object()
                    if number in dead:
                        failed.add(ref)
                    else:
                        received.append(message)
                    return ref

        return Ledger

    monkeypatch.setattr(run_probe, "get_or_create_ledger", make_ledger)
    monkeypatch.setattr(run_probe, "call_failed", lambda ref: ref in failed)
    probe = run_probe.RunProbe()
    probe.after_controller_start(object())
    probe._guard(lambda: probe._recorder.state("SCHEDULING", None, 1.0))
    for _ in range(3):
        probe._guard(lambda: probe._recorder.report([{"loss": 1.0}], checkpoint=False))
    assert len(ledgers) == 1 and ledgers[0][-1]["attempts"][0]["reports_taken"] == 3
    dead.add(0)  # the Ledger is killed; the next send still goes to it, and fails
    for _ in range(2):
        probe._guard(lambda: probe._recorder.report([{"loss": 1.0}], checkpoint=False))
    assert len(ledgers) == 2 and len(ledgers[1]) == 1  # one send lost, then the new one
    assert ledgers[1][0]["attempts"][0]["reports_taken"] == 5  # the whole record
    assert probe.dropped == 1
