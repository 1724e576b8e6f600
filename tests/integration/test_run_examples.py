"""The bundled scalar example runs to completion through ``raytop run --no-tui`` on a real
local cluster, and ``raytop status --json`` then shows every trial TERMINATED with metrics.
The bundled torch example's run to completion is tests/integration/test_tui_tmux.py's (the
same sweep, launched from the TUI in a real terminal: one sweep of four Train runs fewer)."""

from __future__ import annotations

import pytest

from tests.conftest import run_raytop, status_json

pytestmark = pytest.mark.ray


def test_scalar_example_runs_to_completion(ray_cluster, example_copy):
    # Stopped after 2 of its 3 steps by [tune] stop_iterations (MaximumIterationStopper
    # beside raytop's TrialStopper), which is also each trial's expected count.
    stop = {"max_concurrent_trials = 2": "max_concurrent_trials = 2\nstop_iterations = 2"}
    spec = example_copy("scalar.toml", "scalar_objective.py", stop)
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scalar FINISHED | trials: 4 TERMINATED" in result.stdout

    snapshot = status_json(ray_cluster.address, spec.parent / "results" / "scalar")
    assert snapshot["cluster"]["connected"] is True
    (experiment,) = snapshot["experiments"]
    assert experiment["status"] == "FINISHED"
    trials = experiment["trials"]
    assert sorted(t["config"]["x"] for t in trials) == [1, 2, 3, 4]
    # The sweep's size, written by the launcher (grid points × num_samples), and the best
    # trial by the spec's metric and mode (score, max: x = 3).
    assert experiment["trials_total"] == 4
    (best,) = [t for t in trials if t["config"]["x"] == 3]
    assert experiment["best_trial"] == {"trial_id": best["trial_id"], "metric": "score",
                                        "value": 0}  # fmt: skip
    for trial in trials:
        assert trial["status"] == "TERMINATED"
        score = -((trial["config"]["x"] - 3) ** 2)
        assert trial["metrics"]["score"] == score
        assert trial["iterations"] == 2
        assert trial["max_iterations"] == 2
        assert trial["metric_history"] == [score, score]  # the metric of each result
        assert trial["num_failures"] == 0
    assert snapshot["findings"] == []
