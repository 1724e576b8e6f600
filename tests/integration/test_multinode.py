"""Multi-node for real, on one machine (issue 11): a head and two worker nodes on loopback
(``tests/integration/multinode.py``), a Train run launched by ``raytop run --no-tui``, and
what ``raytop status --json`` shows of it: STRICT_SPREAD placement across three nodes, and a
worker node killed mid-run (the node dead, then the run's next attempt on the nodes left).

Each test prints its figures as ``FIGURE name=value`` lines (``pytest -rP`` shows them)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from raytop.model import Snapshot
from raytop.tui.widgets.node_table import custom_resources, fmt_usage, node_state
from raytop.tui.widgets.placement_table import fmt_bundles
from tests.conftest import launch_run, own_ray_tmpdir, run_output, status_json, wait_for
from tests.integration.multinode import HEAD_RESOURCE, LocalCluster

pytestmark = pytest.mark.ray

WORKER_NODES = ("node_b", "node_c")
# The trial (its Tune actor, and so the Train controller Ray pins beside it) on the head:
# a node killed by a test takes only Train workers with it, as a worker node's crash does.
ON_HEAD = f"[tune]\ntrial_resources = {{ CPU = 0, memory = 1, {HEAD_RESOURCE} = 0.01 }}"


def figure(name: str, value) -> None:
    print(f"FIGURE {name}={value}")


@pytest.fixture(scope="module")
def three_node_cluster(raytop_home, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("multinode"))
    started = time.monotonic()
    with own_ray_tmpdir("nodes"):
        try:
            cluster.start(*WORKER_NODES)
            figure("multinode_cluster_start_s", round(time.monotonic() - started, 1))
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def nodes(three_node_cluster: LocalCluster) -> LocalCluster:
    """The three-node cluster, with any worker node a previous test killed started again."""
    three_node_cluster.revive()
    return three_node_cluster


def spread_spec(example_copy, workers: int, epochs: int, failures: int = 0) -> Path:
    edit = {
        "[scaling]\nnum_workers = 2":
            f'[scaling]\nnum_workers = {workers}\nplacement_strategy = "STRICT_SPREAD"',
        "skip_rank = 1": "skip_rank = -1",
        "epochs = 5": f"epochs = {epochs}",
        "epoch_s = 0.5": "epoch_s = 0.4",
        "[tune]": ON_HEAD,
        # No preemption retries: a crash must be retried under max_failures, or the run fails.
        "[cluster]": f"[failure]\nmax_failures = {failures}\nmax_preemption_failures = 0\n\n"
                     "[cluster]",
    }  # fmt: skip
    return example_copy("stall.toml", "stall_loop.py", edit=edit)


def train_groups(snapshot: dict) -> list[dict]:
    return [g for g in snapshot["placement_groups"]
            if g["owner_kind"] == "train_run" and g["state"] == "CREATED"]  # fmt: skip


def the_run(snapshot: dict) -> dict | None:
    experiments = snapshot["experiments"]
    runs = experiments[0]["runs"] if experiments else []
    return runs[0] if runs else None


def test_strict_spread_places_three_ranks_on_three_nodes(nodes: LocalCluster, example_copy):
    spec = spread_spec(example_copy, workers=3, epochs=20)
    experiment = spec.parent / "results" / "stall"
    node_ids = {nodes.node_id(HEAD_RESOURCE), *(nodes.node_id(n) for n in WORKER_NODES)}
    # R6 for the worker nodes too: Ray's own processes listen on loopback only. Checked
    # before the launch: once rank 0 lands on a node, torch's TCPStore (the user's training
    # process, not the cluster) listens on '::' there (CI saw it).
    for name in WORKER_NODES:
        assert nodes.listening(name) <= {"127.0.0.1", "::ffff:127.0.0.1"}, name
    started = time.monotonic()
    driver = launch_run(spec, nodes.address)
    try:
        wait_for(experiment.is_dir, 60, "the experiment folder")

        def placed_and_reporting():
            snapshot = status_json(nodes.address, experiment)
            run = the_run(snapshot)
            if not (train_groups(snapshot) and run and len(run["workers"]) == 3):
                return None
            return snapshot if min(w["reports_exited"] for w in run["workers"]) >= 2 else None

        snapshot = wait_for(placed_and_reporting, 120, "3 ranks placed and reporting")
        figure("strict_spread_seen_s", round(time.monotonic() - started, 1))
        alive = {n["node_id"] for n in snapshot["cluster"]["nodes"] if n["alive"]}
        assert alive == node_ids
        (group,) = train_groups(snapshot)
        assert group["strategy"] == "STRICT_SPREAD"
        assert group["experiment"] == "stall" and group["why_pending"] is None
        assert len(group["bundles"]) == 3
        assert {b["node_id"] for b in group["bundles"]} == node_ids  # one bundle a node
        # The Placement screen's cells, from the same snapshot as the TUI gets it.
        view = Snapshot.from_json(snapshot)
        (pg,) = [g for g in view.placement_groups if g.pg_id == group["pg_id"]]
        assert sorted(fmt_bundles(pg).split()) == sorted(
            f"{b['index']}:{{CPU:1}}→{b['node_id'][:8]}" for b in group["bundles"]
        )
        names = {custom_resources(n).split()[0] for n in view.cluster.nodes}
        assert names == {HEAD_RESOURCE, *WORKER_NODES}
        # Every node is on raytop's own host here: each carries the OS's figures.
        assert all(n["host"] is not None for n in snapshot["cluster"]["nodes"])
        run = the_run(snapshot)
        assert run["world_size"] == 3 and run["attempt_index"] == 1
        assert sorted(w["rank"] for w in run["workers"]) == [0, 1, 2]
        assert {w["node_id"] for w in run["workers"]} == node_ids  # one rank a node
        assert all(w["declared_resources"] == {"CPU": 1.0} for w in run["workers"])
        assert {f["kind"] for f in snapshot["findings"]}.isdisjoint(
            {"placement_infeasible", "placement_waiting", "rank_dead", "barrier_stall"}
        )
        assert driver.wait(timeout=120) == 0, run_output(spec, experiment)
    finally:
        if driver.poll() is None:
            driver.kill()
    figure("strict_spread_run_s", round(time.monotonic() - started, 1))
    # Node-local storage cannot be shown on one machine (every node shares its disk); what
    # raytop can say, it says before the launch: a local storage_path on several nodes.
    said = (spec.parent / "raytop-run.out").read_text()
    assert f"storage_path {experiment.parent} is a local folder on a 3-node cluster" in said
    final = status_json(nodes.address, experiment)
    assert final["experiments"][0]["status"] == "FINISHED"
    assert [w["reports_exited"] for w in the_run(final)["workers"]] == [20, 20, 20]


def test_a_worker_node_killed_mid_run_is_shown_dead_then_the_run_retries_on_the_rest(
    nodes: LocalCluster, example_copy
):
    """Two ranks, STRICT_SPREAD, on three nodes: kill a worker node that holds a rank. Train
    restarts the worker group (``max_failures = 1``) on the two nodes left."""
    epochs = 20
    spec = spread_spec(example_copy, workers=2, epochs=epochs, failures=1)
    experiment = spec.parent / "results" / "stall"
    by_id = {nodes.node_id(n): n for n in WORKER_NODES}
    started = time.monotonic()
    driver = launch_run(spec, nodes.address)
    try:
        wait_for(experiment.is_dir, 60, "the experiment folder")

        def reporting():
            snapshot = status_json(nodes.address, experiment)
            run = the_run(snapshot)
            workers = run["workers"] if run else []
            ok = len(workers) == 2 and min(w["reports_exited"] for w in workers) >= 3
            return run if ok else None

        before = wait_for(reporting, 120, "both ranks to report 3 times")
        # STRICT_SPREAD: at least one rank is on a worker node.
        victim_id = next(w["node_id"] for w in before["workers"] if w["node_id"] in by_id)
        killed_at = nodes.kill(by_id[victim_id])
        said: set[str] = set()  # every finding kind status --json named from the kill on
        lost: set[tuple] = set()  # (attempt, ranks) of its rank_dead findings, typed

        def heard(snapshot: dict) -> None:
            said.update(f["kind"] for f in snapshot["findings"])
            lost.update((f["attempt_id"], tuple(f["ranks"])) for f in snapshot["findings"]
                        if f["kind"] == "rank_dead")  # fmt: skip

        def node_dead():
            snapshot = status_json(nodes.address, experiment)
            heard(snapshot)
            (node,) = [n for n in snapshot["cluster"]["nodes"] if n["node_id"] == victim_id]
            return (time.time(), snapshot) if not node["alive"] else None

        dead_seen, snapshot = wait_for(node_dead, 60, "the killed node shown dead")
        figure("node_dead_seen_s", round(dead_seen - killed_at, 1))
        assert sum(n["alive"] for n in snapshot["cluster"]["nodes"]) == 2
        (dead,) = [n for n in Snapshot.from_json(snapshot).cluster.nodes if not n.alive]
        # The Placement screen's node row. Ray's node table keeps no resources for a dead
        # node (not even its custom `node_b`): the row says DEAD and '-', not '-/2'.
        assert node_state(dead) == "DEAD" and fmt_usage(dead, "CPU") == "-", dead

        def retried():
            snapshot = status_json(nodes.address, experiment)
            heard(snapshot)
            run = the_run(snapshot)
            if not (run and run["attempt_index"] == 2 and len(run["workers"]) == 2):
                return None
            if min(w["reports_exited"] for w in run["workers"]) < 1:
                return None
            return time.time(), snapshot

        retry_seen, snapshot = wait_for(retried, 120, "the run's second attempt reporting")
        figure("new_attempt_reporting_s", round(retry_seen - killed_at, 1))
        figure("findings_until_the_new_attempt", ",".join(sorted(said)) or "none")
        # Two nodes are left for two STRICT_SPREAD bundles: nothing is infeasible, no stall.
        assert said.isdisjoint({"placement_infeasible", "barrier_stall", "report_mispaired"})
        # The rank on the killed node is named gone (rank_dead), not a stall, before the retry.
        victim_rank = next(w["rank"] for w in before["workers"] if w["node_id"] == victim_id)
        assert (before["attempt_id"], (victim_rank,)) in lost, (said, lost)
        run = the_run(snapshot)
        assert run["attempt_id"] != before["attempt_id"]
        assert run["run_id"] == before["run_id"]
        alive = {n["node_id"] for n in snapshot["cluster"]["nodes"] if n["alive"]}
        assert victim_id not in alive
        assert {w["node_id"] for w in run["workers"]} == alive  # STRICT_SPREAD on the two left
        assert driver.wait(timeout=150) == 0, run_output(spec, experiment)
    finally:
        if driver.poll() is None:
            driver.kill()
    figure("node_death_run_s", round(time.monotonic() - started, 1))
    final = status_json(nodes.address, experiment)
    assert final["experiments"][0]["status"] == "FINISHED"
    (trial,) = final["experiments"][0]["trials"]
    assert trial["status"] == "TERMINATED" and trial["num_failures"] == 0  # Train retried
    assert the_run(final)["attempt_index"] == 2
    assert [w["reports_exited"] for w in the_run(final)["workers"]] == [epochs, epochs]
    # A SIGKILLed node is a crash, not a preemption (no drain): Train charges max_failures.
    budget = the_run(final)["retry_budget"]
    assert budget["worker"] == {"setting": "max_failures", "limit": 1, "used": 1, "left": 0}
    assert budget["preemption"]["used"] == 0
    first = the_run(final)["attempts"][0]
    assert first["status"] == "errored" and first["failure_class"] == "worker"
