"""Bad input that needs the way to a launch or a real cluster. Everything that can be
checked without one is a row of the battery in test_bad_input_table.py (missing spec, TOML
errors, unknown keys, unreachable or Ray Client addresses, missing folders, ...)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_raytop


def assert_one_line_error(result, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("raytop: error: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.ray
def test_entrypoint_not_importable(ray_cluster, tmp_path):
    # Preflight (on the way to a launch) imports the entrypoint; reading the spec did not.
    spec = tmp_path / "ep.toml"
    spec.write_text('[trainable]\nkind = "function"\nentrypoint = "no_such_module_x:f"\n')
    result = run_raytop("run", str(spec), "--no-tui", "--address", ray_cluster.address)
    assert_one_line_error(result, "entrypoint", "no_such_module_x")
    assert not (tmp_path / "results").exists(), "a refused launch left a folder"


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
