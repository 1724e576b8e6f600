"""Each checkpoint's journey from the probes' upload records and the run's snapshot."""

from hypothesis import given, settings
from hypothesis import strategies as st

from raytop.diagnose.check import exit_code
from raytop.diagnose.checkpoints import checkpoint_findings, pipeline
from raytop.model import TrainRun


def upload(dir_name, start, end=None, files=None, error=None, mode="SYNC", report=1):
    return {"dir_name": dir_name, "start": start, "end": end, "files": files or {},
            "error": error, "mode": mode, "report": report, "custom_upload": False}  # fmt: skip


def snapshot(*committed: str, **lists) -> dict:
    return {"checkpoint_results": [{"checkpoint_dir_name": c} for c in committed], **lists}


def test_states_along_the_journey():
    uploads = {
        0: [upload("c1", 1.0, 2.0, {"state.pt": 100}), upload("c2", 5.0, 6.0, {"s.pt": 10}),
            upload("c3", 9.0, None, {"s.pt": 10}, mode="ASYNC")],
        1: [upload("c1", 1.0, 1.5), upload("c2", 5.0, 5.5), upload("c3", 9.0, 9.1)],
    }  # fmt: skip
    records = pipeline(uploads, snapshot("c1"), {"c1", "c2", "c3"}, now=20.0)
    assert [(r.dir_name, r.state) for r in records] == [
        ("c1", "committed"), ("c2", "uploaded"), ("c3", "uploading")
    ]  # fmt: skip
    c1, _, c3 = records
    assert (c1.ranks, c1.files, c1.bytes, c1.upload_s) == ((0,), 1, 100, 1.0)
    assert (c3.mode, c3.uploading_since, c3.upload_s) == ("ASYNC", 9.0, 11.0)


def test_checkpoints_deleted_by_num_to_keep_are_pruned_not_waiting_to_register():
    """num_to_keep=2 after four reports: c1 and c2 were committed, then deleted. Storage was
    listed, so "pruned" is positive evidence; the newest one not yet registered stays
    "uploaded", and nothing is pruned when storage could not be listed."""
    uploads = {
        0: [upload(f"c{i}", float(i), i + 0.5, {"s.pt": 10}, report=i) for i in (1, 2, 3, 4, 5)]
    }
    records = pipeline(uploads, snapshot("c3", "c4"), {"c3", "c4", "c5"}, now=9.0)
    assert [(r.dir_name, r.state) for r in records] == [
        ("c1", "pruned"), ("c2", "pruned"), ("c3", "committed"), ("c4", "committed"),
        ("c5", "uploaded"),
    ]  # fmt: skip
    unknown = pipeline(uploads, snapshot("c3", "c4"), None, now=9.0)
    assert [r.state for r in unknown][:2] == ["uploaded", "uploaded"]
    assert checkpoint_findings(TrainRun("r", "r", "a", 1, checkpoints=records), 60.0) == []


def test_validation_failure_and_missing_states():
    records = pipeline({}, snapshot("a", "b", "c", validated_checkpoint_dir_names=["a"],
                                    failed_validation_checkpoint_dir_names=["b"]),
                       {"a", "b"}, now=0.0)  # fmt: skip
    assert [r.state for r in records] == ["validated", "validation_failed", "missing"]


def test_two_ranks_writing_the_same_file_is_a_collision_naming_both():
    # Different sizes: positive evidence that the contents differ.
    uploads = {0: [upload("c1", 1.0, 2.0, {"model.pt": 5, "opt.pt": 5})],
               1: [upload("c1", 1.0, 2.0, {"model.pt": 6})]}  # fmt: skip
    (record,) = pipeline(uploads, snapshot("c1"), {"c1"}, now=3.0)
    assert record.collisions == {"model.pt": (0, 1)}
    run = TrainRun("r", "exp-t1", "a", 2, checkpoints=(record,))
    (finding,) = checkpoint_findings(run, slow_after_s=300)
    assert finding.kind == "checkpoint_collision"
    assert finding.message.startswith("ranks 0, 1 all wrote model.pt into c1")
    assert exit_code([finding]) == 14


def test_failed_and_slow_uploads():
    uploads = {0: [upload("c1", 1.0, 2.0, error="OSError: disk full"), upload("c2", 10.0)]}
    run = TrainRun("r", "exp-t1", "a", 1,
                   checkpoints=pipeline(uploads, snapshot(), set(), now=400.0))  # fmt: skip
    kinds = [f.kind for f in checkpoint_findings(run, slow_after_s=300)]
    assert kinds == ["checkpoint_failed", "checkpoint_slow"]


def test_barrier_time_per_rank_and_throughput():
    # Rank 0 attached the checkpoint (its barrier wait rides on its upload record); rank 1
    # attached nothing, so its wait comes from its recent barrier times for that report.
    uploads = {0: [{**upload("c1", 10.0, 12.0, {"model.pt": 4_000_000}, report=3),
                    "sync_s": 0.5}]}  # fmt: skip
    syncs = {0: [[3, 9.5, 10.0]], 1: [[2, 4.0, 4.1], [3, 8.0, 10.0]]}
    (record,) = pipeline(uploads, snapshot("c1"), {"c1"}, now=20.0, syncs=syncs)
    assert record.sync_s == {0: 0.5, 1: 2.0}
    assert record.throughput_bps == 2_000_000
    assert record.rank_uploads == {0: (10.0, 12.0)}
    in_flight = pipeline({0: [upload("c2", 10.0, None, {"m.pt": 10})]}, None, set(), now=11.0)
    assert in_flight[0].throughput_bps is None


def _barrier_times_one_walk_each(uploads: dict, syncs: dict) -> dict[str, dict[int, float]]:
    """Each checkpoint's barrier waits as first written (the ranks' entries walked again for
    each checkpoint): the oracle of the single walk."""
    by_dir: dict[str, dict] = {}
    for rank, records in uploads.items():
        for record in records:
            by_dir.setdefault(record["dir_name"], {})[rank] = record
    found = {}
    for dir_name, ranks in by_dir.items():
        report = next(iter(ranks.values()))["report"]
        waits = {r: rec["sync_s"] for r, rec in ranks.items() if rec.get("sync_s") is not None}
        for rank, entries in syncs.items():
            for index, start, end in entries:
                if index == report and end is not None and rank not in waits:
                    waits[rank] = end - start
        found[dir_name] = dict(sorted(waits.items()))
    return found


_times = st.floats(0, 100, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 5), st.lists(
        st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.integers(1, 4),
                  st.none() | st.floats(0, 5, allow_nan=False)), max_size=3)),
    st.dictionaries(st.integers(0, 7), st.lists(
        st.tuples(st.integers(1, 5), _times, st.none() | _times), max_size=6)),
)  # fmt: skip
def test_barrier_times_match_a_walk_per_checkpoint(attached, syncs):
    """Whatever the ranks attached (a checkpoint's report is its first rank's) and whatever
    barrier entries they sent (repeated reports, unfinished ones), each checkpoint's waits
    are those of walking every rank's entries for its report."""
    uploads = {
        rank: [{**upload(d, 1.0, 2.0, report=report), "sync_s": wait}
               for d, report, wait in records]
        for rank, records in attached.items() if records
    }  # fmt: skip
    records = pipeline(uploads, None, None, now=10.0, syncs=syncs)
    expected = _barrier_times_one_walk_each(uploads, syncs)
    assert {r.dir_name: r.sync_s for r in records} == expected


def test_no_upload_checkpoints_have_no_upload_time():
    uploads = {0: [upload("c1", 5.0, 5.0, {"model.pt": 10}, mode="NO_UPLOAD")]}
    (record,) = pipeline(uploads, snapshot("c1"), {"c1"}, now=6.0)
    assert (record.state, record.mode, record.upload_s, record.throughput_bps) == (
        "committed",
        "NO_UPLOAD",
        None,
        None,
    )


def test_an_upload_is_slow_after_many_report_intervals_before_the_threshold():
    from raytop.model import Worker

    uploads = {0: [upload("c1", 0.0)]}
    workers = (Worker(rank=0, usual_interval_s=5.0),)
    run = TrainRun("r", "exp-t1", "a", 1, workers=workers,
                   checkpoints=pipeline(uploads, None, set(), now=60.0))  # fmt: skip
    (finding,) = checkpoint_findings(run, slow_after_s=300)
    assert finding.kind == "checkpoint_slow" and "10× the usual 5.0s report interval" in (
        finding.message
    )
    quick = TrainRun("r", "exp-t1", "a", 1, workers=workers,
                     checkpoints=pipeline(uploads, None, set(), now=40.0))  # fmt: skip
    assert checkpoint_findings(quick, slow_after_s=300) == []


def test_a_checkpoint_without_the_shards_of_ranks_that_wrote_before_is_partial():
    """Sharded saving: ranks 0-2 wrote into c1 and c2; in c3 rank 2 attached nothing (it
    failed while saving). Rank-0-only saving never fires, nor a one-off save by rank 1."""

    def shard(d, r, t):
        return upload(d, t + r / 10, t + 0.5, {f"model_rank{r}.pt": 5})

    sharded = {
        r: [shard("c1", r, 1.0), shard("c2", r, 2.0)] + ([shard("c3", r, 3.0)] if r < 2 else [])
        for r in range(3)
    }
    records = pipeline(sharded, snapshot("c1", "c2", "c3"), {"c1", "c2", "c3"}, now=9.0)
    run = TrainRun("r", "exp-t1", "a", 3, checkpoints=records)
    (partial,) = [f for f in checkpoint_findings(run, 60.0) if f.kind == "checkpoint_partial"]
    assert partial.evidence["missing_ranks"] == [2] and "c3" in partial.message
    once = {0: [shard("c1", 0, 1.0), shard("c2", 0, 2.0), shard("c3", 0, 3.0)],
            1: [shard("c1", 1, 1.0)]}  # fmt: skip
    records = pipeline(once, snapshot("c1", "c2", "c3"), {"c1", "c2", "c3"}, now=9.0)
    run = TrainRun("r", "exp-t1", "a", 2, checkpoints=records)
    assert [f for f in checkpoint_findings(run, 60.0) if f.kind == "checkpoint_partial"] == []
    rank0_only = {0: [upload("c1", 1.0, 2.0, {"s.pt": 1}), upload("c2", 3.0, 4.0, {"s.pt": 1})],
                  1: [upload("c1", 1.0, 1.5), upload("c2", 3.0, 3.5)]}  # fmt: skip
    records = pipeline(rank0_only, snapshot("c1", "c2"), {"c1", "c2"}, now=9.0)
    run = TrainRun("r", "exp-t1", "a", 2, checkpoints=records)
    assert [f for f in checkpoint_findings(run, 60.0) if f.kind == "checkpoint_partial"] == []
