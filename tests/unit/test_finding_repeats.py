"""Repeated findings of one kind on one run are one finding with a count, the first and the
latest occurrence: a run colliding in 30 checkpoints is one ERROR line, not 30, in `check`,
the text face and `status --json` (which keeps a capped list of occurrences)."""

from __future__ import annotations

import json

from raytop.diagnose import diagnose
from raytop.diagnose.repeats import fold
from raytop.faces.check import health
from raytop.faces.text import progress_line, status_text
from raytop.model import CheckpointRecord, Cluster, Finding, Severity, Snapshot, TrainRun
from raytop.model.finding import MAX_OCCURRENCES, about

EPOCHS = 30


def checkpoint(i: int, **copies) -> CheckpointRecord:
    return CheckpointRecord(f"checkpoint_{i:06d}", "committed", report_index=i + 1, ranks=(0, 1),
                            files=1, bytes=200, **copies)  # fmt: skip


def snapshot_of(*runs: TrainRun) -> Snapshot:
    return Snapshot(taken_at=100.0, cluster=Cluster("127.0.0.1:6379", True), runs=runs)


def colliding_run(run_id: str = "r1", name: str = "TorchTrainer_1") -> TrainRun:
    checkpoints = tuple(checkpoint(i, collisions={"model.pt": (0, 1)}) for i in range(EPOCHS))
    return TrainRun(run_id, name, "a", 2, checkpoints=checkpoints)


def test_thirty_colliding_checkpoints_are_one_finding_with_count_first_and_latest():
    findings = diagnose(snapshot_of(colliding_run()))
    (finding,) = findings
    assert (finding.kind, finding.severity, finding.count) == (
        "checkpoint_collision", Severity.ERROR, EPOCHS
    )  # fmt: skip
    assert (finding.first, finding.latest) == ("checkpoint_000000", "checkpoint_000029")
    assert finding.occurrences == tuple(f"checkpoint_{i:06d}" for i in range(10, EPOCHS))
    assert len(finding.occurrences) == MAX_OCCURRENCES
    assert finding.evidence["dir_name"] == "checkpoint_000029"  # the latest's evidence


def test_runs_and_kinds_are_folded_apart():
    replicated = TrainRun("r2", "TorchTrainer_2", "a", 2, checkpoints=tuple(
        checkpoint(i, replicated={"model.pt": (0, 1)}, redundant_bytes=100) for i in range(3)
    ))  # fmt: skip
    findings = diagnose(snapshot_of(colliding_run(), colliding_run("r3", "TorchTrainer_3"),
                                    replicated))  # fmt: skip
    assert [(f.kind, f.subject, f.count) for f in findings] == [
        ("checkpoint_collision", "run TorchTrainer_1", EPOCHS),
        ("checkpoint_collision", "run TorchTrainer_3", EPOCHS),
        ("checkpoint_replicated", "run TorchTrainer_2", 3),
    ]


def test_findings_that_name_no_occurrence_are_never_folded():
    once = Finding("budget_exhausted", Severity.WARNING, "run x", "worker", {"run_id": "x"})
    twice = Finding("budget_exhausted", Severity.WARNING, "run x", "preemption", {"run_id": "x"})
    assert fold([once, twice]) == [once, twice]
    a = Finding("checkpoint_failed", Severity.ERROR, "run x", "m1", {"run_id": "x"}, **about("c1"))
    b = Finding("checkpoint_failed", Severity.ERROR, "run x", "m2", {"run_id": "x"}, **about("c2"))
    (folded,) = fold([a, once, b])[:1]
    assert (folded.message, folded.count, folded.first, folded.latest) == ("m2", 2, "c1", "c2")
    assert fold([a, once, b])[1] is once


def test_check_and_the_text_face_show_the_count_once():
    snapshot = snapshot_of(colliding_run())
    snapshot = Snapshot(snapshot.taken_at, snapshot.cluster, runs=snapshot.runs,
                        findings=diagnose(snapshot))  # fmt: skip
    lines, code = health(snapshot)
    assert code == 14
    (line,) = lines
    assert line.startswith("checkpoint_collision run TorchTrainer_1: ranks 0, 1 all wrote model.pt")
    assert line.endswith("×30 (first checkpoint_000000, latest checkpoint_000029)")
    text = status_text(snapshot)
    assert text.count("checkpoint_collision") == 1
    assert "×30 (first checkpoint_000000, latest checkpoint_000029)" in text
    assert "×30" in progress_line(snapshot)


def test_json_carries_the_count_and_a_capped_list_and_reads_back():
    snapshot = snapshot_of(colliding_run())
    snapshot = Snapshot(snapshot.taken_at, snapshot.cluster, runs=snapshot.runs,
                        findings=diagnose(snapshot))  # fmt: skip
    data = json.loads(json.dumps(snapshot.to_json()))
    (finding,) = data["findings"]
    assert (finding["count"], finding["first"], finding["latest"]) == (
        EPOCHS, "checkpoint_000000", "checkpoint_000029"
    )  # fmt: skip
    assert len(finding["occurrences"]) == MAX_OCCURRENCES
    assert Snapshot.from_json(data).findings == snapshot.findings
    # A snapshot of an older raytop (no repeat fields) reads as findings that happened once.
    old = {k: v for k, v in finding.items() if k not in ("count", "first", "latest",
                                                          "occurrences")}  # fmt: skip
    (read,) = Snapshot.from_json({**data, "findings": [old]}).findings
    assert (read.count, read.first, read.occurrences, read.line()) == (1, None, (), read.message)
