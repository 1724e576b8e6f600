"""One join and one split for local paths and URIs: a URI's query stays at the end."""

from __future__ import annotations

import pytest

from raytop.model.paths import join_path, split_path

QUERY = "?endpoint_override=http://minio:9000&scheme=http"


@pytest.mark.parametrize(
    ("base", "parts", "joined"),
    [
        ("/data/results", ("exp", "train_runs"), "/data/results/exp/train_runs"),
        ("/data/results/", ("exp",), "/data/results/exp"),
        ("s3://bucket/prefix", ("exp",), "s3://bucket/prefix/exp"),
        (
            f"s3://bucket/prefix{QUERY}",
            ("exp", "train_runs"),
            f"s3://bucket/prefix/exp/train_runs{QUERY}",
        ),
        (f"s3://bucket/prefix/{QUERY}", ("exp",), f"s3://bucket/prefix/exp{QUERY}"),
        # file:// is a local path: a '?' in it is part of a folder name
        ("file:///data/a?b", ("exp",), "file:///data/a?b/exp"),
    ],
)
def test_join_path(base: str, parts: tuple[str, ...], joined: str) -> None:
    assert join_path(base, *parts) == joined


@pytest.mark.parametrize(
    ("path", "split"),
    [
        ("/data/results/exp", ("/data/results", "exp")),
        ("/data/results/exp/", ("/data/results", "exp")),
        ("s3://bucket/prefix/exp", ("s3://bucket/prefix", "exp")),
        (f"s3://bucket/prefix/exp{QUERY}", (f"s3://bucket/prefix{QUERY}", "exp")),
    ],
)
def test_split_path(path: str, split: tuple[str, str]) -> None:
    assert split_path(path) == split


def test_split_undoes_join() -> None:
    base = f"s3://bucket/prefix{QUERY}"
    assert split_path(join_path(base, "exp")) == (base, "exp")
