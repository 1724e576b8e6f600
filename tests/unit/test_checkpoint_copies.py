"""The same file name from several ranks in one checkpoint: a collision only on evidence
that the contents differ (sizes, or hashes); identical copies (every DDP rank saving the
same weights, as Ray's own torch_linear_example does) are replicated state, an INFO that
`check` passes; the same size unhashed is an INFO that says why it was not compared."""

from __future__ import annotations

import json

import pytest

from raytop.diagnose.check import HEALTHY, TEARDOWN_UNSAFE, exit_code
from raytop.diagnose.checkpoint_copies import rank_list, size_text
from raytop.diagnose.checkpoints import checkpoint_findings, pipeline
from raytop.model import Severity, TrainRun
from raytop.model.untrusted_kv_checkpoints import upload as validated_upload

H1, H2 = "a" * 32, "b" * 32


def upload(dir_name, files, hashes=None, mode="SYNC"):
    record = {"dir_name": dir_name, "start": 1.0, "end": 2.0, "files": files, "error": None,
              "mode": mode, "report": 1, "custom_upload": False}  # fmt: skip
    if hashes is not None:
        record["hashes"] = hashes
    return record


def findings_of(uploads):
    (record,) = pipeline(uploads, {"checkpoint_results": [{"checkpoint_dir_name": "c1"}]},
                         {"c1"}, now=3.0)  # fmt: skip
    run = TrainRun("r", "exp-t1", "a", len(uploads), checkpoints=(record,))
    return record, checkpoint_findings(run, slow_after_s=300)


def test_eight_ranks_saving_the_same_model_pt_is_replicated_state_not_a_collision():
    # Ray's torch_linear_example: every rank saves its (identical) DDP state_dict.
    uploads = {r: [upload("c1", {"model.pt": 3891}, {"model.pt": H1})] for r in range(8)}
    record, findings = findings_of(uploads)
    assert record.collisions == {} and record.uncompared == {}
    assert record.replicated == {"model.pt": tuple(range(8))}
    assert record.redundant_bytes == 7 * 3891
    (finding,) = findings
    assert (finding.kind, finding.severity) == ("checkpoint_replicated", Severity.INFO)
    assert finding.message.startswith(
        "ranks 1–7 uploaded the same model.pt as rank 0 into c1: 7 × 3.8 KiB redundant; "
        "attach it on rank 0 only"
    )
    assert finding.evidence["redundant_bytes"] == 7 * 3891
    assert exit_code(findings) == HEALTHY


@pytest.mark.parametrize(
    ("files", "hashes"),
    [
        ((100, 101), (None, None)),  # sizes differ: no hash needed
        ((100, 100), (H1, H2)),  # same size, hashes differ
        ((100, 100, 100), (H1, H1, H2)),  # two alike, one not
        ((100, 100, 100), (H1, None, H2)),  # one unhashed, the two hashed differ
    ],
)
def test_contents_that_differ_are_a_collision(files, hashes):
    uploads = {
        rank: [upload("c1", {"model.pt": size}, {"model.pt": h} if h else {})]
        for rank, (size, h) in enumerate(zip(files, hashes, strict=True))
    }
    record, findings = findings_of(uploads)
    assert record.collisions == {"model.pt": tuple(range(len(files)))}
    assert record.replicated == {} and record.redundant_bytes == 0
    (finding,) = findings
    assert finding.kind == "checkpoint_collision" and finding.severity == Severity.ERROR
    assert finding.message.startswith("ranks 0, 1")
    assert exit_code(findings) == TEARDOWN_UNSAFE


def test_the_same_size_unhashed_is_not_compared_and_says_the_cap():
    # Over the probe's hash cap (or an older probe): no hash on one side, sizes equal.
    uploads = {0: [upload("c1", {"big.pt": 10}, {"big.pt": H1})], 1: [upload("c1", {"big.pt": 10})]}
    record, findings = findings_of(uploads)
    assert record.collisions == {} and record.uncompared == {"big.pt": (0, 1)}
    (finding,) = findings
    assert (finding.kind, finding.severity) == ("checkpoint_uncompared", Severity.INFO)
    assert "not compared" in finding.message and "16 MiB each, 64 MiB and 64 files" in (
        finding.message
    )
    assert exit_code(findings) == HEALTHY


def test_no_upload_copies_read_back_in_place_are_not_compared_and_say_so():
    uploads = {r: [upload("c1", {"state.pt": 10}, mode="NO_UPLOAD")] for r in (0, 1)}
    _, (finding,) = findings_of(uploads)
    assert finding.kind == "checkpoint_uncompared"
    assert "written in place (NO_UPLOAD)" in finding.message


def test_mixed_paths_in_one_checkpoint_each_get_their_verdict():
    uploads = {
        0: [upload("c1", {"model.pt": 5, "rng.pt": 7, "opt.pt": 9},
                   {"model.pt": H1, "rng.pt": H1, "opt.pt": H1})],
        1: [upload("c1", {"model.pt": 5, "rng.pt": 8, "opt.pt": 9},
                   {"model.pt": H1, "rng.pt": H2})],
    }  # fmt: skip
    record, findings = findings_of(uploads)
    assert record.replicated == {"model.pt": (0, 1)}
    assert record.collisions == {"rng.pt": (0, 1)}
    assert record.uncompared == {"opt.pt": (0, 1)}
    kinds = [f.kind for f in findings]
    assert kinds == ["checkpoint_collision", "checkpoint_replicated", "checkpoint_uncompared"]
    assert exit_code(findings) == TEARDOWN_UNSAFE


def test_a_rank_saving_alone_is_nothing():
    uploads = {0: [upload("c1", {"model.pt": 5}, {"model.pt": H1})], 1: [upload("c1", {})]}
    record, findings = findings_of(uploads)
    assert (record.collisions, record.replicated, record.uncompared, findings) == ({}, {}, {}, [])


def test_hashes_on_the_wire_are_optional_and_a_bad_one_drops_that_entry_only():
    old = upload("c1", {"model.pt": 5})
    assert "hashes" not in validated_upload(json.loads(json.dumps(old)), "checkpoints[0]")
    sent = upload("c1", {"a": 1, "b": 1, "c": 1, "d": 1},
                  {"a": H1, "b": "XYZ", "c": 7, "d": H1.upper()})  # fmt: skip
    assert validated_upload(sent, "checkpoints[0]")["hashes"] == {"a": H1}
    assert validated_upload({**sent, "hashes": ["a"]}, "checkpoints[0]")["hashes"] == {}


def test_rank_lists_and_sizes_read_as_a_person_writes_them():
    assert rank_list([3]) == "rank 3"
    assert rank_list([1, 2, 3, 4, 5, 6, 7]) == "ranks 1–7"
    assert rank_list([0, 2, 3, 4, 9, 10]) == "ranks 0, 2–4, 9, 10"
    assert [size_text(n) for n in (512, 3891, 16 * 2**20, 300 * 2**30)] == [
        "512 B", "3.8 KiB", "16 MiB", "300 GiB"
    ]  # fmt: skip
