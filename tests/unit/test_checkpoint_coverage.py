"""A latest checkpoint that lacks files its predecessor had (shards of a rank missing after a
worker failed while saving, ray-project/ray#41700): the resume preview says so instead of
offering it silently as the one to resume from. Names only: nothing is opened."""

from __future__ import annotations

import json

from raytop.diagnose.resume import preview
from raytop.model import Experiment, ExperimentStatus, Trial
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name
from raytop.sources.checkpoints import CheckpointSnapshots


def train_run(tmp_path, checkpoints: dict[str, list[str]]) -> Experiment:
    """An experiment whose trial t1's Train run committed ``checkpoints`` (name → files)."""
    run = tmp_path / "exp" / TRAIN_RUNS_DIR / train_run_name("exp", "t1")
    for name, files in checkpoints.items():
        (run / name).mkdir(parents=True)
        for file in files:
            (run / name / file).write_bytes(b"x")
    results = [
        {"checkpoint_dir_name": n, "metrics": {"epoch": i}} for i, n in enumerate(checkpoints)
    ]
    snapshot = {"ray_version": "2.58.0", "checkpoint_results": results,
                "latest_checkpoint_result": results[-1], "checkpoint_report_indices": [],
                "pending_training_results": [], "current_report_index": len(results)}  # fmt: skip
    (run / "checkpoint_manager_snapshot.json").write_text(json.dumps(snapshot))
    return Experiment("exp", str(tmp_path / "exp"), ExperimentStatus.INTERRUPTED,
                      trials=(Trial("t1", "RUNNING"),))  # fmt: skip


def test_a_latest_checkpoint_missing_a_ranks_shard_is_flagged(tmp_path):
    experiment = train_run(tmp_path, {
        "checkpoint_a": ["model_rank0.pt", "model_rank1.pt", "optim.pt"],
        "checkpoint_b": ["model_rank0.pt", "optim.pt"],
    })  # fmt: skip
    latest = CheckpointSnapshots().latest(experiment)["t1"]
    assert (latest.dir_name, latest.previous, latest.missing) == (
        "checkpoint_b", "checkpoint_a", ("model_rank1.pt",)
    )  # fmt: skip
    rows, warnings = preview(experiment, {"t1": latest}, "skip", None)
    assert rows[0].checkpoint.endswith("PARTIAL?")
    assert rows[0].action == "resume from checkpoint_b, epoch 1"
    (warning,) = warnings
    assert "checkpoint_b lacks model_rank1.pt that checkpoint_a had" in warning


def test_a_whole_checkpoint_or_a_first_one_is_not_flagged(tmp_path):
    whole = train_run(tmp_path / "w", {"c1": ["m0.pt", "m1.pt"], "c2": ["m0.pt", "m1.pt", "x"]})
    first = train_run(tmp_path / "f", {"c1": ["m0.pt"]})
    for experiment in (whole, first):
        latest = CheckpointSnapshots().latest(experiment)["t1"]
        assert latest.missing == ()
        assert preview(experiment, {"t1": latest}, "skip", None)[1] == []
