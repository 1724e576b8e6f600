"""The torch trainable's Train storage: ``train_runs`` in the experiment folder, joined so
that a URI's query (``?endpoint_override=…``, as pyarrow and Ray take it) stays at the end.
Nothing here needs Ray: building the path imports neither ray nor the user's module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from raytop.launch.spec import load_spec
from raytop.launch.trainable import train_storage_path


def spec_with_storage(tmp_path: Path, storage: str):
    path = tmp_path / "spec.toml"
    path.write_text(
        f'[experiment]\nname = "exp"\nstorage_path = "{storage}"\n\n'
        '[trainable]\nkind = "torch"\nentrypoint = "not_imported:train_func"\n'
    )
    return load_spec(path)


@pytest.mark.parametrize(
    ("storage", "train_storage"),
    [
        (
            "s3://bucket/prefix?endpoint_override=localhost:9000&scheme=http",
            "s3://bucket/prefix/exp/train_runs?endpoint_override=localhost:9000&scheme=http",
        ),
        (
            "s3://bucket/prefix/?endpoint_override=http://minio:9000",
            "s3://bucket/prefix/exp/train_runs?endpoint_override=http://minio:9000",
        ),
        ("s3://bucket/prefix", "s3://bucket/prefix/exp/train_runs"),
    ],
)
def test_train_runs_go_in_the_experiment_folder_before_the_query(
    tmp_path: Path, storage: str, train_storage: str
) -> None:
    assert train_storage_path(spec_with_storage(tmp_path, storage)) == train_storage


def test_a_local_storage_gets_train_runs_in_the_experiment_folder(tmp_path: Path) -> None:
    spec = spec_with_storage(tmp_path, "results")
    assert train_storage_path(spec) == str(tmp_path / "results" / "exp" / "train_runs")


def test_the_trainable_module_imports_no_ray() -> None:
    code = "import sys, raytop.launch.trainable; sys.exit('ray' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
