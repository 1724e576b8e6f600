"""A cluster with Ray's token authentication on (Ray 2.60, docs/RAY_FACTS.md#token-auth):
raytop attached without the token says so in one line, naming what to set and never the
token, with exit 2 (as any unreachable ``--address``); with ``RAY_AUTH_MODE=token`` and
the cluster's token it reads the cluster; with another token it says the token is not
the cluster's. The cluster is raytop's own embedded one, started with the user's
``RAY_AUTH_MODE=token`` (``launch.cluster.auth_env`` passes it on), in a process of its own:
Ray reads ``RAY_AUTH_MODE`` once per process, and this test process may have imported Ray
without it (start_embedded's own wait for the cluster would then be refused)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from tests.conftest import environ, own_ray_tmpdir, run_raytop

START = """
from raytop.launch.cluster import start_embedded
from raytop.launch.spec import ClusterSection
print(start_embedded(ClusterSection(num_cpus=1)).address)
"""

pytestmark = pytest.mark.ray


@pytest.mark.own_cluster
def test_a_token_cluster_is_named_as_such_and_read_with_its_token(tmp_path):
    from raytop.launch.cluster import stop_embedded

    token = uuid.uuid4().hex
    (tmp_path / "home").mkdir()
    alone = {"RAYTOP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path),
             "RAY_AUTH_MODE": None, "RAY_AUTH_TOKEN": None}  # fmt: skip
    with environ(**alone), own_ray_tmpdir("token"):
        started = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True,
                                 timeout=150,
                                 env={**os.environ, "RAY_AUTH_MODE": "token",
                                      "RAY_AUTH_TOKEN": token})  # fmt: skip
        try:
            assert started.returncode == 0, started.stderr[-2000:]
            address = started.stdout.split()[-1]
            status = ("status", "--json", "--address", address)
            without = run_raytop(*status, timeout=60)
            assert without.returncode == 2, (without.returncode, without.stderr)
            (line,) = without.stderr.strip().splitlines()
            assert "requires Ray's token authentication" in line, line
            assert "set RAY_AUTH_MODE=token" in line and token not in line, line

            other = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}
            wrong = run_raytop(*status, env=other, timeout=60)
            assert wrong.returncode == 2, (wrong.returncode, wrong.stderr)
            assert "is not the cluster's" in wrong.stderr, wrong.stderr

            right = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
            shown = run_raytop(*status, env=right, timeout=60)
            assert shown.returncode == 0, shown.stderr
            assert token not in shown.stdout + shown.stderr
        finally:
            stop_embedded()
