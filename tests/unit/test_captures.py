"""Stacks captures (``pipeline.captures``): each answered stacks request is a folder that
outlives the cluster, written by raytop's process; read-only writes nothing and says so;
a name from the cluster never leaves its folder; an unwritable place is one line."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from raytop.model import Cluster, Experiment, ExperimentStatus, Snapshot, TrainRun, Worker
from raytop.pipeline.captures import (
    NOTHING_NOTE,
    READ_ONLY_NOTE,
    capture_targets,
    rank_file_name,
    save_capture,
)

TAKEN_AT = 1_767_000_000.5  # 2025-12-29T09:20:00Z


def run(name: str, run_id: str, *workers: Worker) -> TrainRun:
    return TrainRun(run_id=run_id, run_name=name, attempt_id="a1", world_size=len(workers),
                    workers=workers)  # fmt: skip


def answered(rank: int, native: str | None = None) -> Worker:
    return Worker(rank=rank, pid=100 + rank, node_id="n1", state="waiting",
                  stack=f'  File "loop.py", line {rank}, in train\n', stack_request="q1",
                  native_stack=native, native_stack_request="q1" if native else None)  # fmt: skip


def snapshot(*experiment_runs: tuple[TrainRun, ...], loose: tuple[TrainRun, ...] = ()):
    experiments = tuple(
        Experiment(name=f"exp{i}", path=f"/x/exp{i}", status=ExperimentStatus.RUNNING, runs=runs)
        for i, runs in enumerate(experiment_runs)
    )
    return Snapshot(taken_at=TAKEN_AT, cluster=Cluster(address="a", connected=True),
                    experiments=experiments, runs=loose)  # fmt: skip


def test_a_capture_is_one_file_per_answering_rank_and_an_index(tmp_path):
    rdir = tmp_path / "exp0" / ".raytop"
    train = run("exp0-t1", "r1", answered(0, native="Thread 9 (idle)\n    wait (libc.so.6)"),
                answered(1), Worker(rank=2))  # fmt: skip
    snap = snapshot((train,))
    capture = save_capture(snap, capture_targets(snap, [rdir], None), request="q1", native=True,
                           read_only=False)  # fmt: skip
    folder = rdir / "captures" / "20251229T092000Z"
    assert capture.saved_to == (str(folder),)
    assert capture.note == f"stacks saved to {folder}"
    assert sorted(os.listdir(folder)) == ["exp0-t1.rank0.txt", "exp0-t1.rank1.txt", "index.json"]
    rank0 = (folder / "exp0-t1.rank0.txt").read_text()
    assert "rank 0 of 3  pid 100  node n1" in rank0
    assert rank0.index("== Python stack ==") < rank0.index("== native stack (py-spy) ==")
    assert "wait (libc.so.6)" in rank0
    assert "native stack" not in (folder / "exp0-t1.rank1.txt").read_text()
    index = json.loads((folder / "index.json").read_text())
    assert index["request"] == "q1" and index["native"] is True
    assert [(e["rank"], e["file"], e["native"]) for e in index["ranks"]] == [
        (0, "exp0-t1.rank0.txt", True), (1, "exp0-t1.rank1.txt", False)]  # fmt: skip
    # A second capture in the same second gets its own folder.
    again = save_capture(snap, capture_targets(snap, [rdir], None), request="q2", native=False,
                         read_only=False)  # fmt: skip
    assert again.saved_to == (str(folder) + "-2",)


def test_read_only_writes_nothing_and_says_so(tmp_path):
    rdir = tmp_path / ".raytop"
    snap = snapshot((run("exp0-t1", "r1", answered(0)),))
    capture = save_capture(snap, capture_targets(snap, [rdir], None), request="q1", native=False,
                           read_only=True)  # fmt: skip
    assert capture.saved_to == () and capture.note == READ_ONLY_NOTE
    assert "read-only" in capture.note and not rdir.exists()


def test_runs_of_no_raytop_experiment_go_to_raytop_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    snap = snapshot(
        (run("named-t1", "r1", answered(0)),), loose=(run("script", "r2", answered(0)),)
    )
    targets = capture_targets(snap, [None], None)  # the experiment has no raytop dir either
    assert [(parent, [r.run_name for r in runs]) for parent, runs in targets] == [
        (tmp_path / "home", ["named-t1", "script"])]  # fmt: skip
    capture = save_capture(snap, targets, request="q1", native=False, read_only=False)
    (folder,) = capture.saved_to
    assert sorted(os.listdir(folder)) == ["index.json", "named-t1.rank0.txt", "script.rank0.txt"]
    # Only the asked run is saved when the request named one.
    (only,) = capture_targets(snap, [None], "r2")
    assert [r.run_name for r in only[1]] == ["script"]


def test_nothing_answered_is_nothing_saved(tmp_path):
    snap = snapshot((run("exp0-t1", "r1", Worker(rank=0)),))
    capture = save_capture(snap, capture_targets(snap, [tmp_path], None), request="q1",
                           native=False, read_only=False)  # fmt: skip
    assert capture.note == NOTHING_NOTE and not (tmp_path / "captures").exists()


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b", "..", "", "x" * 300, "ü\n\0"])
def test_a_run_name_from_the_cluster_never_leaves_the_folder(name):
    file_name = rank_file_name(name, 3)
    assert "/" not in file_name and "\0" not in file_name and len(file_name) <= 120
    assert file_name.endswith(".rank3.txt") and file_name not in (".", "..")


def test_an_unwritable_place_is_one_line_and_the_stacks_still_come(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    snap = snapshot((run("exp0-t1", "r1", answered(0)),))
    capture = save_capture(snap, capture_targets(snap, [blocker], None), request="q1",
                           native=False, read_only=False)  # fmt: skip
    assert capture.saved_to == ()
    assert capture.note.startswith(f"stacks not saved: cannot write {blocker}")
    assert "\n" not in capture.note


def test_the_capture_is_in_the_snapshot_json_and_back(tmp_path):
    snap = snapshot((run("exp0-t1", "r1", answered(0, native="n")),))
    capture = save_capture(snap, capture_targets(snap, [tmp_path], None), request="q1",
                           native=True, read_only=False)  # fmt: skip
    from dataclasses import replace

    data = json.loads(json.dumps(replace(snap, stacks_capture=capture).to_json()))
    assert data["stacks_capture"] == {"saved_to": list(capture.saved_to), "note": capture.note}
    worker = data["experiments"][0]["runs"][0]["workers"][0]
    assert worker["native_stack"] == "n" and worker["native_stack_request"] == "q1"
    back = Snapshot.from_json(data)
    assert back.stacks_capture == capture
    assert back.experiments[0].runs[0].workers[0].native_stack == "n"
    assert Snapshot.from_json(snap.to_json()).stacks_capture is None
    assert Path(capture.saved_to[0]).is_dir()


def test_the_plain_text_face_shows_both_stacks_and_where_they_were_saved(tmp_path):
    from dataclasses import replace

    from raytop.faces.text import stacks_text

    snap = snapshot((run("exp0-t1", "r1", answered(0, native="Thread 9 (idle)"), Worker(rank=1)),))
    capture = save_capture(snap, capture_targets(snap, [tmp_path], None), request="q1",
                           native=True, read_only=False)  # fmt: skip
    lines = stacks_text(replace(snap, stacks_capture=capture)).splitlines()
    assert lines[0] == "stacks of run exp0-t1 (attempt 1):"
    assert lines[1] == "  rank 0 · pid 100 · waiting"
    assert '      File "loop.py", line 0, in train' in lines  # indented under its rank
    assert "  rank 1 · pid ? · ?" in lines
    assert lines[lines.index("    -- native stack (py-spy) --") + 1] == "    Thread 9 (idle)"
    assert "    (no answer: process gone or busy in C code)" in lines
    assert lines[-1] == capture.note and lines[-1].startswith("stacks saved to ")


def test_a_rank_with_no_probe_says_who_took_its_stack(tmp_path):
    """py-spy's dump of a rank with no probe is captured as a probe's answer is, saying
    who took it; a rank whose stack could not be taken says why, and is no answer."""
    dumped = Worker(rank=0, pid=41, node_id="n1", stack='Thread 41 (idle): "MainThread"\n',
                    stack_request="q1", stack_by="py-spy")  # fmt: skip
    refused = Worker(rank=1, pid=42, node_id="n1", stack_request="q1", stack_by="py-spy",
                     stack_problem="the OS refused py-spy on pid 42 (ptrace: …)")  # fmt: skip
    bare = dataclasses.replace(run("bare", "actor-c1", dumped, refused), instrumented=False)
    snap = snapshot(loose=(bare,))
    capture = save_capture(snap, [(tmp_path, (bare,))], request="q1", native=False,
                           read_only=False)  # fmt: skip
    (folder,) = capture.saved_to
    assert sorted(os.listdir(folder)) == ["bare.rank0.txt", "index.json"]
    text = Path(folder, "bare.rank0.txt").read_text()
    assert "request q1  taken by py-spy" in text and 'Thread 41 (idle): "MainThread"' in text
    (entry,) = json.loads(Path(folder, "index.json").read_text())["ranks"]
    assert (entry["pid"], entry["by"]) == (41, "py-spy")
