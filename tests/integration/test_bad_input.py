"""Bad input: a one-line error naming the thing, exit code 2, no traceback."""

from __future__ import annotations

import json
import time

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


def test_missing_spec(tmp_path):
    missing = tmp_path / "nope.toml"
    assert_one_line_error(run_raytop("run", str(missing)), "spec not found", str(missing))


def test_toml_syntax_error(tmp_path):
    spec = tmp_path / "broken.toml"
    spec.write_text('[trainable]\nkind = "torch\n')
    assert_one_line_error(run_raytop("run", str(spec)), "broken.toml", "TOML syntax error")


def test_unknown_key_suggests_the_close_name(tmp_path):
    spec = tmp_path / "typo.toml"
    spec.write_text('[trainable]\nkind = "function"\nentrypoint = "m:f"\n[tune]\nmetirc = "x"\n')
    assert_one_line_error(run_raytop("run", str(spec)), "metirc", "did you mean 'metric'")


def test_entrypoint_not_importable(tmp_path):
    spec = tmp_path / "ep.toml"
    spec.write_text('[trainable]\nkind = "function"\nentrypoint = "no_such_module_x:f"\n')
    assert_one_line_error(run_raytop("run", str(spec)), "entrypoint", "no_such_module_x")


def test_unreachable_address_answers_within_10s(tmp_path):
    started = time.monotonic()
    result = run_raytop("status", "--address", "127.0.0.1:9")
    assert time.monotonic() - started < 10
    assert_one_line_error(result, "127.0.0.1:9")


def test_ray_client_address_is_refused_clearly():
    assert_one_line_error(run_raytop("status", "--address", "ray://head:10001"), "ray://")


def test_missing_experiment_folder(tmp_path):
    result = run_raytop("status", "--experiment", str(tmp_path / "absent"))
    assert_one_line_error(result, "absent")


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
