"""Bad input that needs a real cluster. Everything that can be checked without one is a
row of the battery in test_bad_input_table.py (spec and NODES errors, preflight, options,
unreachable or Ray Client addresses, corrupt experiment folders, RAYTOP_HOME, ...)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_raytop


@pytest.mark.ray
def test_metric_never_reported_is_a_finding_not_a_hang(ray_cluster, example_copy):
    spec = example_copy(
        "scalar.toml",
        "scalar_objective.py",
        edit={'metric = "score"': 'metric = "accuracy"', "[1, 2, 3, 4]": "[3]"},
    )
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "metric_missing" in result.stdout
    status = run_raytop(
        "status", "--json", "--experiment", str(spec.parent / "results" / "scalar"),
        "--address", ray_cluster.address,
    )  # fmt: skip
    findings = json.loads(status.stdout)["findings"]
    (finding,) = [f for f in findings if f["kind"] == "metric_missing"]
    assert finding["evidence"]["metric"] == "accuracy"
    assert "score" in finding["evidence"]["reported"]
