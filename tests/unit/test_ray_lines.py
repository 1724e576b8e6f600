"""Which Ray lines raytop runs on (``wire.version``): 2.58, 2.59 and 2.60; another line
is one line and exit 2 naming the supported lines and the override, never an internal
error; with ``RAYTOP_ANY_RAY=1`` raytop runs, and says so in every snapshot's warnings
and in the top bar."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from raytop.cli import main
from raytop.model import Cluster
from raytop.tui.widgets.cluster_bar import describe_cluster
from raytop.wire import version


@pytest.mark.parametrize("found", ["2.58.1", "2.59.0", "2.60.0", "2.60.3"])
def test_the_supported_lines(found):
    assert version.unsupported(found) is None


@pytest.mark.parametrize("found", ["2.57.0", "2.61.0", "3.0.0", "2.6.0", "nightly"])
def test_another_line_names_the_supported_ones_and_the_override(found):
    assert version.unsupported(found) == (
        f"Ray {found} is not a line raytop supports (2.58.x, 2.59.x, 2.60.x); "
        "RAYTOP_ANY_RAY=1 runs it anyway, unverified"
    )


def test_an_unsupported_ray_is_one_line_exit_2_or_runs_with_a_warning(monkeypatch, tmp_path):
    monkeypatch.setattr(version, "ray_version", lambda: "2.61.0")
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path))
    refused = CliRunner().invoke(main, ["status", "--address", "127.0.0.1:1"])
    assert refused.exit_code == 2
    assert refused.stderr.splitlines() == [
        "raytop: error: Ray 2.61.0 is not a line raytop supports (2.58.x, 2.59.x, 2.60.x); "
        "RAYTOP_ANY_RAY=1 runs it anyway, unverified"
    ]
    monkeypatch.setenv("RAYTOP_ANY_RAY", "1")
    assert version.unsupported_warning() == (
        "Ray 2.61.0: not a supported line, run anyway (RAYTOP_ANY_RAY=1)"
    )
    version.check_ray_version()  # no refusal
    history = CliRunner().invoke(main, ["status", "--json", "--storage", str(tmp_path)])
    assert history.exit_code == 0, history.stderr
    warnings = json.loads(history.stdout)["warnings"]
    assert "Ray 2.61.0: not a supported line, run anyway (RAYTOP_ANY_RAY=1)" in warnings


def test_the_top_bar_says_the_line_is_unsupported():
    cluster = Cluster("10.0.0.1:6379", True, ray_version="2.61.0", ray_unsupported=True)
    assert str(describe_cluster(cluster)).endswith("· ray 2.61.0 (unsupported line)")


def test_the_probe_takes_its_hook_classes_on_any_line(monkeypatch):
    """In a user's worker a refusal would fail the Train job: on an unlisted Ray line the
    probe still gets Train's callback classes when they import (its hooks guard
    themselves)."""
    from raytop.wire import train_hooks

    monkeypatch.setattr(version, "ray_version", lambda: "2.61.0")
    monkeypatch.delenv("RAYTOP_ANY_RAY", raising=False)
    worker, context = train_hooks.train_worker_callback_bases()
    assert (worker.__name__, context.__name__) == ("WorkerCallback", "TrainContextCallback")
    assert len(train_hooks.train_controller_callback_bases()) == 3


def test_the_version_is_read_without_importing_ray():
    """A refusal, or an address that does not answer, costs no ``import ray``: the
    version comes from Ray's installed metadata, the same as the imported module's."""
    import subprocess
    import sys

    code = ("import sys; from raytop.wire import version; v = version.ray_version(); "
            "print(v, 'ray' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    import ray

    assert out == [ray.__version__, "False"]


SPY = """
import os, sys
from importlib.abc import MetaPathFinder

seen = []


class Spy(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "ray._raylet":
            seen.append(os.environ.get("RAY_gcs_rpc_server_reconnect_timeout_s"))
        return None


sys.meta_path.insert(0, Spy())
from raytop.wire import gcs
{call}
print(seen, os.environ.get("RAY_gcs_rpc_server_reconnect_timeout_s"))
"""


@pytest.mark.parametrize("call", [
    "gcs.local_cluster_address()",
    "try:\n    gcs.GcsKv('127.0.0.1:1')._gcs()\nexcept gcs.ClusterUnreachable:\n    pass",
])  # fmt: skip
def test_ray_is_first_imported_with_its_give_up_lifted(call):
    """Wherever a reading process first imports Ray, Ray's GCS client is loaded with its
    60 s give-up lifted (raytop outlives the cluster it watches), and the variable is gone
    again afterwards (the processes raytop starts keep Ray's own)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SPY.format(call=call)], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    assert out == f"[{version.NEVER_GIVE_UP_S!r}] None", out
