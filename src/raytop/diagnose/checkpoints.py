"""The checkpoint pipeline of a Train run: each checkpoint's journey, and what went wrong.

Per checkpoint folder: which ranks attached files, how it was uploaded (SYNC / ASYNC / the
user's function), whether it is still uploading, on storage, committed to the run's
snapshot, validated, or failed, or pruned by Train's ``num_to_keep`` once newer ones were
committed.

The same relative path from several ranks is a collision (one overwrote the others) only
on positive evidence that the contents differ: the sizes differ, or two copies were hashed
(``model.records.HASH_MAX_*``) and the hashes differ. Every rank of a DDP run holds the same
weights, and Ray's own examples have every rank save them (``torch_linear_example``): the
same size and hash is replicated state, an INFO naming the redundant uploads; the same
size with a copy unhashed is an INFO saying it could not be compared.
"""

from __future__ import annotations

from typing import Any

from raytop.diagnose.checkpoint_copies import (
    DIFFER,
    SAME,
    UNKNOWN,
    collision,
    compare,
    redundant_bytes,
    replicated,
    uncompared,
)
from raytop.diagnose.refs import of_run
from raytop.model import CheckpointRecord, Finding, Severity, TrainRun
from raytop.model.finding import about
from raytop.model.records import CheckpointUpload, Wait

# An upload is also slow when it lasts this many of the run's usual report intervals
# (and at least SLOW_FLOOR_S: sub-second loops would otherwise flag every upload).
SLOW_INTERVALS = 10
SLOW_FLOOR_S = 30.0


def _waits_by_report(
    syncs: dict[int, tuple[Wait, ...]], reports: set[int]
) -> dict[int, dict[int, float]]:
    """Report number (of ``reports``) → rank → how long the rank waited in that report's
    barrier (its first finished entry for it): the ranks' entries walked once per pipeline,
    not again for each checkpoint (at 2,000 ranks, 32 entries each, that walk was ~6 ms a
    checkpoint)."""
    by_report: dict[int, dict[int, float]] = {}
    for rank, entries in syncs.items():
        for index, start, end in entries:
            if index in reports and end is not None:
                by_report.setdefault(index, {}).setdefault(rank, end - start)
    return by_report


def _barrier_times(
    report: int | None,
    ranks: dict[int, CheckpointUpload],
    waits_by_report: dict[int, dict[int, float]],
) -> dict[int, float]:
    """Rank → how long it waited in the report barrier of the checkpoint's report: from
    its upload record, else (a rank that attached nothing) from its recent barrier times."""
    waits = {r: rec["sync_s"] for r, rec in ranks.items() if rec.get("sync_s") is not None}
    if report is not None:
        for rank, wait in waits_by_report.get(report, {}).items():
            waits.setdefault(rank, wait)
    return dict(sorted(waits.items()))


def pipeline(
    uploads: dict[int, list[CheckpointUpload]],
    snapshot: dict[str, Any] | None,
    on_storage: set[str] | None,
    now: float,
    syncs: dict[int, tuple[Wait, ...]] | None = None,
) -> tuple[CheckpointRecord, ...]:
    """``uploads``: per rank, the probe's upload records; ``snapshot``: the run's
    checkpoint_manager_snapshot.json; ``on_storage``: the checkpoint folders in the run's
    storage folder (None: unknown, e.g. remote storage); ``syncs``: per rank, its recent
    report-barrier waits. Oldest checkpoint first."""
    by_dir: dict[str, dict[int, CheckpointUpload]] = {}
    for rank, records in uploads.items():
        for record in records:
            by_dir.setdefault(record["dir_name"], {})[rank] = record  # last attempt wins
    # Each checkpoint's report is its first rank's (below): only those reports' waits.
    reports = {next(iter(ranks.values()))["report"] for ranks in by_dir.values()}
    waits_by_report = _waits_by_report(syncs or {}, reports)
    snapshot = snapshot or {}
    committed = [r.get("checkpoint_dir_name") for r in snapshot.get("checkpoint_results", [])]
    validated = set(snapshot.get("validated_checkpoint_dir_names", []))
    failed_validation = set(snapshot.get("failed_validation_checkpoint_dir_names", []))
    timed_out = set(snapshot.get("timed_out_validation_checkpoint_dir_names", []))
    pending_validation = {
        s.get("checkpoint_dir_name") for s in snapshot.get("pending_validation_specs", [])
        if isinstance(s, dict)
    }  # fmt: skip
    records = []

    def started(dir_name: str) -> tuple[float, int, str]:
        """When its upload began; else its place in the snapshot (commit order)."""
        begun = min((r["start"] for r in by_dir.get(dir_name, {}).values()), default=0.0)
        order = committed.index(dir_name) if dir_name in committed else len(committed)
        return begun, order, dir_name

    ordered = sorted(set(by_dir) | {c for c in committed if c}, key=started)
    # Train keeps the newest num_to_keep checkpoints in the snapshot and deletes the folders
    # of the others: one that is neither listed nor on storage, with a later one committed,
    # was pruned (positive evidence: storage was listed), not "uploaded and waiting".
    last_committed = max((i for i, d in enumerate(ordered) if d in committed), default=-1)
    for position, dir_name in enumerate(ordered):
        ranks = by_dir.get(dir_name, {})
        copies: dict[str, dict[int, tuple[int, str | None]]] = {}
        size = 0
        for rank, record in sorted(ranks.items()):
            hashes = record.get("hashes") or {}
            for path, nbytes in record["files"].items():
                copies.setdefault(path, {})[rank] = (nbytes, hashes.get(path))
                size += nbytes
        shared = {p: c for p, c in sorted(copies.items()) if len(c) > 1}
        verdicts = {p: compare(c) for p, c in shared.items()}
        errors = [r["error"] for r in ranks.values() if r["error"]]
        in_flight = [r for r in ranks.values() if r["end"] is None]
        uploaded = [r for r in ranks.values() if r["mode"] != "NO_UPLOAD"]
        durations = [(r["end"] or now) - r["start"] for r in uploaded]
        longest = max(durations) if durations else None
        if errors:
            state = "failed"
        elif in_flight:
            state = "uploading"
        elif dir_name in failed_validation:
            state = "validation_failed"
        elif dir_name in timed_out:
            state = "validation_timed_out"
        elif dir_name in validated:
            state = "validated"
        elif dir_name in pending_validation:
            state = "validating"
        elif dir_name in committed and on_storage is not None and dir_name not in on_storage:
            state = "missing"
        elif dir_name in committed:
            state = "committed"
        elif on_storage is not None and dir_name not in on_storage and position < last_committed:
            state = "pruned"
        else:
            state = "uploaded"
        first = next(iter(ranks.values()), None)  # None: known from the snapshot alone
        report = first["report"] if first else None
        done = bool(uploaded) and not in_flight and not errors
        throughput = size / longest if done and size and longest else None
        records.append(
            CheckpointRecord(
                dir_name=dir_name,
                state=state,
                report_index=report,
                ranks=tuple(sorted(r for r, rec in ranks.items() if rec["files"])),
                files=len(copies),
                bytes=size,
                mode=first["mode"] if first else None,
                custom_upload=bool(first and first["custom_upload"]),
                upload_s=longest,
                uploading_since=min((r["start"] for r in in_flight), default=None),
                throughput_bps=throughput,
                sync_s=_barrier_times(report, ranks, waits_by_report),
                rank_uploads={
                    r: (rec["start"], rec["end"])
                    for r, rec in sorted(ranks.items())
                    if rec["mode"] != "NO_UPLOAD"
                },  # fmt: skip
                error=errors[0] if errors else None,
                collisions={p: tuple(c) for p, c in shared.items() if verdicts[p] == DIFFER},
                replicated={p: tuple(c) for p, c in shared.items() if verdicts[p] == SAME},
                redundant_bytes=sum(
                    redundant_bytes(c) for p, c in shared.items() if verdicts[p] == SAME
                ),
                uncompared={p: tuple(c) for p, c in shared.items() if verdicts[p] == UNKNOWN},
            )
        )
    return tuple(records)


def _slow_after(run: TrainRun, slow_after_s: float) -> tuple[float, str]:
    """The upload time past which a checkpoint is slow, and how to say why."""
    intervals = [w.usual_interval_s for w in run.workers if w.usual_interval_s]
    if intervals:
        relative = max(SLOW_FLOOR_S, SLOW_INTERVALS * max(intervals))
        if relative < slow_after_s:
            return relative, f"{SLOW_INTERVALS}× the usual {max(intervals):.1f}s report interval"
    return slow_after_s, f"the {slow_after_s:.0f}s threshold"


def _partial_findings(run: TrainRun) -> list[Finding]:
    """A checkpoint some ranks attached no files to, when every one of at least two
    earlier checkpoints of the run had files from them (sharded saving: their shards are
    missing, as after a worker failure, ray-project/ray#41700). Rank-0-only saving never
    fires, nor a one-off save by other ranks: the evidence is the run's own habit, not a
    rule about who should save."""
    findings = []
    habit: set[int] | None = None  # the ranks that wrote into every earlier checkpoint
    earlier = 0
    for c in run.checkpoints:
        settled = c.state not in ("uploading", "failed")
        missing = sorted((habit or set()) - set(c.ranks))
        if settled and c.ranks and missing and earlier >= 2:
            who = ", ".join(map(str, missing))
            findings.append(Finding(
                "checkpoint_partial", Severity.WARNING, f"run {run.run_name}",
                f"{c.dir_name} has no files from rank(s) {who}, which wrote into every "
                "earlier checkpoint: its shards may not cover every rank (a resume from it "
                "may fail)",
                {"run_id": run.run_id, "trial_id": run.trial_id, "dir_name": c.dir_name,
                 "missing_ranks": missing},
                **about(c.dir_name), **of_run(run), ranks=tuple(missing),
            ))  # fmt: skip
        if settled and c.ranks:
            habit = set(c.ranks) if habit is None else habit & set(c.ranks)
            earlier += 1
    return findings


def checkpoint_findings(run: TrainRun, slow_after_s: float) -> list[Finding]:
    findings = []
    subject = f"run {run.run_name}"
    slow_s, slow_why = _slow_after(run, slow_after_s)
    findings += _partial_findings(run)
    for c in run.checkpoints:
        evidence = {"run_id": run.run_id, "trial_id": run.trial_id, "dir_name": c.dir_name}
        findings += [build(c, subject, evidence, of_run(run)) for found, build in (
            (c.collisions, collision), (c.replicated, replicated), (c.uncompared, uncompared),
        ) if found]  # fmt: skip
        if c.state == "failed":
            message = f"upload of {c.dir_name} failed: {c.error}"
            findings.append(Finding("checkpoint_failed", Severity.ERROR, subject, message,
                                    evidence, **about(c.dir_name), **of_run(run)))  # fmt: skip
        elif c.state == "uploading" and (c.upload_s or 0) > slow_s:
            findings.append(Finding(
                "checkpoint_slow", Severity.WARNING, subject,
                f"{c.dir_name} has been uploading for {c.upload_s:.0f}s, past {slow_why} "
                f"({c.mode}{', custom upload function' if c.custom_upload else ''})",
                {**evidence, "upload_s": c.upload_s},
                **about(c.dir_name), **of_run(run),
            ))  # fmt: skip
        elif c.state == "missing":
            message = (f"{c.dir_name} is listed in the run's snapshot but gone from storage: "
                       "a resume from it would fail")  # fmt: skip
            findings.append(Finding("checkpoint_missing", Severity.ERROR, subject, message,
                                    evidence, **about(c.dir_name), **of_run(run)))  # fmt: skip
    return findings
