"""A watching raytop reads the real GCS's actor and node tables again only when the GCS
published a change of them (``wire.gcs_pubsub``), and shows the change at the next read:
an actor started by another driver, then killed. The signals' own rules are
tests/unit/test_gcs_pubsub.py's; a GCS stopped, frozen and restarted under a watching
collector is test_faults.py's R1 tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import pytest

from raytop.wire.gcs import GcsReader
from tests.conftest import wait_for

pytestmark = pytest.mark.ray

# Another driver: starts a detached actor (``start``), or kills it (``kill``).
DRIVER = """
import sys, ray
ray.init(address=sys.argv[1], namespace="raytop-gcs-changes", logging_level="ERROR")
if sys.argv[2] == "start":
    @ray.remote(num_cpus=0)
    class ChangesProbe:
        def ping(self):
            return 1
    actor = ChangesProbe.options(name="changes-probe", lifetime="detached").remote()
    ray.get(actor.ping.remote())
else:
    ray.kill(ray.get_actor("changes-probe"))
"""


def drive(address: str, what: str) -> None:
    subprocess.run([sys.executable, "-c", DRIVER, address, what], check=True, timeout=120,
                   capture_output=True)  # fmt: skip


def test_a_watching_reader_reads_actors_and_nodes_again_only_after_the_gcs_says(ray_cluster):
    address = ray_cluster.address
    reader = GcsReader(address, follow=True)
    read: list[str] = []
    whole = reader._read

    def counted(table, *args, **kwargs):
        read.append(table)
        return whole(table, *args, **kwargs)

    reader._read = counted

    def refresh() -> tuple[set[str], set[str]]:
        """(the tables read whole, the alive actors' classes), one refresh's reads."""
        read.clear()
        reader.nodes()
        classes = {a["class_name"] for a in reader.actors().values()}
        reader.placement_groups()
        return set(read), classes

    try:
        # Subscribed, and each table read once after: from here on only changes signal.
        wait_for(lambda: not {"actors", "nodes"} & refresh()[0], 30, "a refresh of neither")
        for _ in range(4):
            time.sleep(0.25)
            tables, _ = refresh()
            assert "available" in tables and not {"actors", "nodes"} & tables, tables

        drive(address, "start")
        tables, classes = wait_for(lambda: (r := refresh()) and "ChangesProbe" in r[1] and r,
                                   10, "the started actor")  # fmt: skip
        assert "actors" in tables
        tables, classes = refresh()  # read: no change since
        assert "ChangesProbe" in classes and "actors" not in tables

        drive(address, "kill")
        wait_for(lambda: "ChangesProbe" not in refresh()[1], 10, "the killed actor gone")
    finally:
        reader.close()
        with contextlib.suppress(subprocess.CalledProcessError):  # if not killed yet
            drive(address, "kill")
