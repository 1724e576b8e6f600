"""A trial scheduler on a real local cluster: ASHA stops the clearly worse trials of
``examples/asha.toml`` early, and ``status --json`` says why, for each of them."""

from __future__ import annotations

import time

import pytest

from tests.conftest import run_raytop, status_json

pytestmark = pytest.mark.ray


def test_asha_stops_worse_trials_early_and_says_why(ray_cluster, example_copy):
    spec = example_copy("asha.toml", "scalar_objective.py")
    started = time.monotonic()
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "asha FINISHED | trials: 5 TERMINATED" in result.stdout
    print(f"asha run: {time.monotonic() - started:.1f} s")

    (experiment,) = status_json(ray_cluster.address, spec.parent / "results" / "asha")[
        "experiments"
    ]
    trials = {t["config"]["x"]: t for t in experiment["trials"]}
    assert sorted(trials) == [0, 2, 3, 5, 6]
    for trial in trials.values():
        assert trial["status"] == "TERMINATED"
        assert trial["max_iterations"] == 8  # ASHA's max_t counts iterations
        decision = trial["scheduler_decision"]
        if trial["iterations"] < 8:  # stopped early: by ASHA, and it says by which rule
            assert decision is not None, trial
            assert decision.startswith(f"stopped at iteration {trial['iterations']}: score ")
            assert "below the cutoff" in decision and "of the rung at" in decision
            assert "ASHA keeps the top 1/2" in decision
        else:  # ran its whole budget: no decision to explain
            assert trial["iterations"] == 8 and decision is None, trial
    # The best trial is never below a cutoff. The last worst one (x=6, score -9) meets rungs
    # that already hold better scores and stops at the first. Which trial reaches a rung first
    # is a race (two run at once): x=0, started first, may meet empty rungs and run on.
    assert trials[3]["iterations"] == 8
    assert trials[6]["iterations"] < 8, trials[6]
    assert trials[6]["scheduler_decision"].startswith(
        f"stopped at iteration {trials[6]['iterations']}: score -9 "
    )
