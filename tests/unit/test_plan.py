"""The capacity planner (``raytop.diagnose.plan``) and how a run spec maps onto it
(``raytop.launch.planning``): verdicts, counts and the wording users read."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from raytop.diagnose import plan as plan_module
from raytop.diagnose.plan import (
    DEADLOCK,
    FITS,
    NEVER_PLACEABLE,
    STRATEGIES,
    UNDER_UTILISED,
    NodeShape,
    TrialShape,
    fmt_res,
    groups,
    plan,
    slots,
)
from raytop.launch.planning import (
    MAX_NODES,
    PLENTY,
    describe,
    nodes_from_file,
    nodes_from_spec,
    plan_sweep,
    trial_count,
    trial_shapes,
    worker_bundle,
)
from raytop.launch.spec import (
    MAX_TRIALS,
    ClusterSection,
    ExperimentSection,
    RunSpec,
    Sampler,
    ScalingSection,
    SpecError,
    TrainableSection,
    TuneSection,
)
from raytop.launch.toml_text import MAX_TOML_BYTES
from tests.unit.bounded import raised_within

CPU1 = {"CPU": 1.0}
NO_CPU = {"CPU": 0.0, "memory": 1.0}  # the fixed torch trial bundle
CPU_FIX = "trial_resources = { CPU = 0, memory = 1 }"


def cluster(*resources: dict[str, float], count: int = 1) -> list[NodeShape]:
    """``count`` copies of each given node, named n0, n1, ..."""
    shapes = [dict(r) for r in resources for _ in range(count)]
    return [NodeShape(f"n{i}", r) for i, r in enumerate(shapes)]


def counts(p) -> tuple[str, int, int]:
    return p.verdict, p.concurrent, p.running


# ----------------------------------------------------------------------------- building blocks


def test_fmt_res_hides_zeros_and_sorts() -> None:
    assert fmt_res({"memory": 1.0, "CPU": 0.0, "GPU": 2.0}) == "{GPU: 2, memory: 1}"
    assert fmt_res({}) == "{}"
    assert fmt_res({"CPU": 0.5}) == "{CPU: 0.5}"


@pytest.mark.parametrize(
    ("free", "bundle", "expected"),
    [
        ({"CPU": 8.0}, {"CPU": 2.0}, 4),
        ({"CPU": 8.0, "GPU": 1.0}, {"CPU": 2.0, "GPU": 1.0}, 1),  # the scarcest resource
        ({"CPU": 8.0}, {"CPU": 2.0, "GPU": 1.0}, 0),  # a resource a node lacks is 0
        ({"CPU": 8.0}, {"CPU": 2.0, "GPU": 0.0}, 4),  # a zero need is no need
        ({"CPU": 0.0}, {"CPU": 1.0}, 0),
        ({"CPU": 1.0}, {"CPU": 0.1}, 10),  # float noise does not lose a slot
    ],
)
def test_slots(free: dict, bundle: dict, expected: int) -> None:
    assert slots(free, bundle) == expected


def test_slots_of_a_bundle_asking_nothing_is_unbounded() -> None:
    assert slots({}, {}) >= 1 << 20
    assert slots({"CPU": 0.0}, {"CPU": 0.0}) >= 1 << 20


@pytest.mark.parametrize(
    ("worker_slots", "n", "strategy", "expected"),
    [
        ([3, 3], 2, "PACK", 3),  # soft: bundles of one group may straddle nodes
        ([3, 3], 2, "SPREAD", 3),
        ([3, 3], 2, "STRICT_PACK", 2),  # one group per node here
        ([4, 4], 4, "STRICT_PACK", 2),
        ([3, 3], 4, "STRICT_PACK", 0),
        ([2, 2, 2, 2], 4, "STRICT_SPREAD", 2),  # groups share nodes, one bundle per node each
        ([5, 1, 1], 3, "STRICT_SPREAD", 1),  # the big node cannot hold two of one group
        ([3, 3], 3, "STRICT_SPREAD", 0),  # needs 3 distinct nodes
        ([0, 7], 1, "STRICT_SPREAD", 7),
        ([], 2, "PACK", 0),
    ],
)
def test_groups(worker_slots: list[int], n: int, strategy: str, expected: int) -> None:
    assert groups(worker_slots, n, strategy) == expected


def test_groups_of_no_workers_is_unbounded() -> None:
    assert groups([0, 0], 0, "PACK") >= 1 << 20


# ----------------------------------------------------------------------------- deadlock


@pytest.mark.parametrize(
    "nodes", [cluster({"CPU": 2.0}), cluster({"CPU": 1.0}, count=2)], ids=["1x2", "2x1"]
)
def test_two_cpu_deadlock(nodes: list[NodeShape]) -> None:
    """Two trials whose drivers take both CPUs: no worker can ever start
    (docs/RAY_FACTS.md#tune-train-nesting)."""
    p = plan(nodes, TrialShape(CPU1, CPU1, 1), trials=2, max_concurrent=None)
    assert counts(p) == (DEADLOCK, 2, 0)
    assert p.exit_code == 13
    assert p.reasons == (
        "2 trial driver(s) of {CPU: 1} leave no room for a worker group of 1 × {CPU: 1} "
        "(PACK): every trial would wait forever (Train retries without limit)",
    )
    assert p.suggested_max_concurrent == 1
    assert p.suggestions[0] == "set [tune] max_concurrent_trials = 1"
    assert CPU_FIX in p.suggestions[1]
    assert "the CPUs go to its workers" in p.suggestions[1]
    assert p.binding == "CPU"
    assert p.num_workers == 1


def test_two_cpu_deadlock_fixed_by_a_cpu_free_driver() -> None:
    p = plan(cluster({"CPU": 2.0, "memory": 8e9}), TrialShape(NO_CPU, CPU1, 1), 2, None)
    assert counts(p) == (FITS, 2, 2)
    assert p.exit_code == 0
    assert p.reasons == ("2 trial(s) run at once; CPU binds",)
    assert p.suggestions == ()
    assert p.suggested_max_concurrent == 2


def test_cpu_free_driver_needs_memory_on_the_nodes() -> None:
    """memory = 1 is a real request: a node description without memory holds none."""
    p = plan(cluster({"CPU": 2.0}), TrialShape(NO_CPU, CPU1, 1), 2, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == ("the trial bundle needs {memory: 1}; no node has memory",)


def test_deadlock_without_cpu_in_the_driver_suggests_more_nodes() -> None:
    """A GPU driver on a 1-GPU node: no concurrency setting helps, and no CPU advice."""
    p = plan(cluster({"CPU": 4.0, "GPU": 1.0}), TrialShape({"GPU": 1.0}, {"GPU": 1.0}, 1), 1, None)
    assert counts(p) == (DEADLOCK, 1, 0)
    assert p.suggested_max_concurrent is None
    assert p.suggestions == ("the cluster cannot run even one trial with its driver: add nodes",)
    assert p.reasons[0].startswith(
        "1 trial driver(s) of {GPU: 1} leave no room for a worker group of 1 × {GPU: 1} (PACK)"
    )


def test_gpu_driver_deadlock_with_a_lower_concurrency_that_works() -> None:
    nodes = cluster({"CPU": 4.0, "GPU": 2.0})
    p = plan(nodes, TrialShape({"GPU": 1.0}, {"GPU": 1.0}, 1), 4, None)
    assert counts(p) == (DEADLOCK, 2, 0)  # only two GPU drivers fit; they take both GPUs
    assert p.suggested_max_concurrent == 1
    assert p.suggestions == ("set [tune] max_concurrent_trials = 1",)


# ----------------------------------------------------------------------------- never placeable


def test_gpu_worker_on_a_cpu_only_cluster() -> None:
    nodes = cluster({"CPU": 16.0, "memory": 64e9}, count=3)
    p = plan(nodes, TrialShape(NO_CPU, {"GPU": 1.0}, 2), 4, None)
    assert counts(p) == (NEVER_PLACEABLE, 0, 0)
    assert p.exit_code == 12
    assert p.reasons == ("a worker bundle needs {GPU: 1}; no node has GPU",)
    assert "no node has GPU" in p.reasons[0]
    assert p.suggestions == ()
    assert p.suggested_max_concurrent is None


def test_gpu_driver_on_a_cpu_only_cluster() -> None:
    p = plan(cluster({"CPU": 4.0}), TrialShape({"GPU": 1.0}, CPU1, 1), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == ("the trial bundle needs {GPU: 1}; no node has GPU",)


def test_bundle_larger_than_the_largest_node() -> None:
    nodes = cluster({"CPU": 8.0, "GPU": 4.0}, {"CPU": 8.0, "GPU": 2.0})
    p = plan(nodes, TrialShape({}, {"GPU": 8.0}, 1), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == ("a worker bundle needs GPU 8; the largest node has 4",)


def test_bundle_whose_resources_are_on_different_nodes() -> None:
    nodes = cluster({"CPU": 4.0}, {"GPU": 1.0})
    p = plan(nodes, TrialShape({}, {"CPU": 1.0, "GPU": 1.0}, 1), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == ("a worker bundle {CPU: 1, GPU: 1} fits no single node",)


def test_both_bundles_unplaceable_report_both() -> None:
    """BUG: the worker's 'fits no single node' reason is dropped when the driver already
    produced a reason (the check reads the shared list, not this bundle's reasons)."""
    nodes = cluster({"CPU": 4.0}, {"CPU": 1.0, "custom": 1.0})
    p = plan(nodes, TrialShape({"GPU": 1.0}, {"CPU": 2.0, "custom": 1.0}, 1), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == (
        "the trial bundle needs {GPU: 1}; no node has GPU",
        "a worker bundle {CPU: 2, custom: 1} fits no single node",
    )


def test_strict_pack_eight_gpus_on_four_gpu_nodes() -> None:
    nodes = cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=4)
    p = plan(nodes, TrialShape(NO_CPU, {"GPU": 1.0}, 8, "STRICT_PACK"), 2, None)
    assert counts(p) == (NEVER_PLACEABLE, 0, 0)
    assert p.reasons == (
        "STRICT_PACK needs {GPU: 8} on one node; the largest node holds 4 of the 8 worker bundles",
    )
    assert "on one node" in p.reasons[0]
    assert p.num_workers == 8


@pytest.mark.parametrize("strategy", ["PACK", "SPREAD"])
def test_soft_strategies_split_the_eight_gpu_group(strategy: str) -> None:
    nodes = cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=4)
    p = plan(nodes, TrialShape(NO_CPU, {"GPU": 1.0}, 8, strategy), 2, None)
    assert counts(p) == (FITS, 2, 2)


def test_strict_spread_needing_four_nodes_with_two() -> None:
    nodes = cluster({"CPU": 8.0, "memory": 64e9}, count=2)
    p = plan(nodes, TrialShape(NO_CPU, CPU1, 4, "STRICT_SPREAD"), 1, None)
    assert counts(p) == (NEVER_PLACEABLE, 0, 0)
    assert p.reasons == ("STRICT_SPREAD needs 4 nodes that each hold a worker bundle; 2 can",)


def test_strict_spread_counts_only_nodes_that_hold_a_bundle() -> None:
    nodes = cluster({"CPU": 8.0, "GPU": 1.0}, count=3) + cluster({"CPU": 64.0})
    p = plan(nodes, TrialShape({}, {"GPU": 1.0}, 4, "STRICT_SPREAD"), 1, None)
    assert p.reasons == ("STRICT_SPREAD needs 4 nodes that each hold a worker bundle; 3 can",)


def test_soft_group_larger_than_the_cluster() -> None:
    nodes = cluster({"CPU": 2.0}, count=2)
    p = plan(nodes, TrialShape({}, {"CPU": 1.0}, 5), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert p.reasons == ("5 worker bundles need {CPU: 5}; the whole cluster holds 4 of them",)


# ----------------------------------------------------------------------------- strategies


@pytest.mark.parametrize(
    ("strategy", "n", "expected"),
    [
        ("PACK", 4, (UNDER_UTILISED, 3, 2)),  # 8 CPUs / 4 per group
        ("SPREAD", 4, (UNDER_UTILISED, 3, 2)),
        ("STRICT_PACK", 2, (FITS, 3, 3)),  # one 2-bundle group per node
        ("STRICT_PACK", 4, (NEVER_PLACEABLE, 0, 0)),  # no node holds 4
        ("STRICT_SPREAD", 4, (UNDER_UTILISED, 3, 2)),  # each group on all 4 nodes
        ("STRICT_SPREAD", 2, (FITS, 3, 3)),
    ],
)
def test_four_two_cpu_nodes_by_strategy(strategy: str, n: int, expected: tuple) -> None:
    nodes = cluster({"CPU": 2.0, "memory": 8e9}, count=4)
    assert counts(plan(nodes, TrialShape(NO_CPU, CPU1, n, strategy), 3, None)) == expected


def test_strict_spread_drivers_split_over_nodes() -> None:
    """Both 2-CPU drivers on one node would leave a single node for 2-node groups; one
    driver per node leaves 2 + 2 CPUs, and both STRICT_SPREAD groups run."""
    nodes = cluster({"CPU": 4.0}, count=2)
    p = plan(nodes, TrialShape({"CPU": 2.0}, {"CPU": 1.0}, 2, "STRICT_SPREAD"), 2, None)
    assert counts(p) == (FITS, 2, 2)


def test_strict_spread_drivers_on_the_same_nodes_as_workers() -> None:
    """3 nodes of 2 CPUs, drivers of 1 CPU, groups of 3 × 1 CPU on distinct nodes."""
    nodes = cluster({"CPU": 2.0}, count=3)
    shape = TrialShape(CPU1, CPU1, 3, "STRICT_SPREAD")
    assert counts(plan(nodes, shape, 1, None)) == (FITS, 1, 1)
    p = plan(nodes, shape, 3, None)
    assert counts(p) == (UNDER_UTILISED, 3, 1)
    assert p.reasons == (
        "3 trials start but only 1 worker group(s) fit; the other 2 driver(s) hold "
        "{CPU: 1} while they wait",
    )
    assert p.suggested_max_concurrent == 1
    assert p.suggestions[0] == "set [tune] max_concurrent_trials = 1"
    assert CPU_FIX in p.suggestions[1]


def test_strict_pack_drivers_are_best_stacked_off_the_group_node() -> None:
    """The planner finds the driver placement that lets most trials run: both drivers on
    the small node keep the big one whole for a STRICT_PACK group."""
    nodes = cluster({"CPU": 4.0}, {"CPU": 2.0})
    p = plan(nodes, TrialShape(CPU1, CPU1, 4, "STRICT_PACK"), 2, None)
    assert counts(p) == (UNDER_UTILISED, 2, 1)
    assert p.suggested_max_concurrent == 1


# ----------------------------------------------------------------------------- heterogeneous


def test_heterogeneous_cpu_head_and_gpu_workers() -> None:
    head = {"CPU": 8.0, "memory": 32e9}
    gpu = {"CPU": 8.0, "GPU": 2.0, "memory": 64e9}
    nodes = cluster(head) + cluster(gpu, count=2)
    shape = TrialShape(CPU1, {"GPU": 1.0, "CPU": 2.0}, 2)
    p = plan(nodes, shape, 4, None)
    assert counts(p) == (UNDER_UTILISED, 4, 2)  # 4 GPUs: two groups of two
    assert p.binding == "GPU"
    assert p.suggested_max_concurrent == 2
    assert p.reasons == (
        "4 trials start but only 2 worker group(s) fit; the other 2 driver(s) hold "
        "{CPU: 1} while they wait",
    )

    capped = plan(nodes, shape, 4, 2)
    assert counts(capped) == (FITS, 2, 2)
    assert capped.binding == "max_concurrent_trials"
    assert capped.reasons == ("2 trial(s) run at once; max_concurrent_trials binds",)


def test_heterogeneous_driver_must_go_to_the_small_node() -> None:
    """A driver on the GPU node would take the CPU its worker needs; on the small node
    it does not. The planner looks for that placement."""
    nodes = cluster({"CPU": 1.0}, {"CPU": 1.0, "GPU": 1.0})
    p = plan(nodes, TrialShape(CPU1, {"CPU": 1.0, "GPU": 1.0}, 1), 1, None)
    assert counts(p) == (FITS, 1, 1)


def test_heterogeneous_strict_pack_uses_the_big_node_only() -> None:
    nodes = cluster({"GPU": 4.0, "memory": 1e9}, {"GPU": 8.0, "memory": 1e9})
    p = plan(nodes, TrialShape(NO_CPU, {"GPU": 1.0}, 8, "STRICT_PACK"), 3, None)
    assert counts(p) == (UNDER_UTILISED, 3, 1)
    assert p.suggested_max_concurrent == 1


def test_custom_resources_bind() -> None:
    nodes = cluster({"CPU": 32.0, "accel": 2.0}, {"CPU": 32.0})
    p = plan(nodes, TrialShape({"CPU": 1.0}, {"CPU": 1.0, "accel": 1.0}, 1), 8, None)
    assert counts(p) == (UNDER_UTILISED, 8, 2)
    assert p.binding == "accel"


# ----------------------------------------------------------------------------- concurrency


def test_under_utilised_with_a_cpu_free_driver() -> None:
    nodes = cluster({"CPU": 4.0, "memory": 16e9})
    p = plan(nodes, TrialShape(NO_CPU, {"CPU": 2.0}, 1), 3, None)
    assert counts(p) == (UNDER_UTILISED, 3, 2)
    assert p.exit_code == 13
    assert p.reasons == (
        "3 trials start but only 2 worker group(s) fit; the other 1 driver(s) hold "
        "{memory: 1} while they wait",
    )
    assert p.suggestions == ("set [tune] max_concurrent_trials = 2",)
    assert p.suggested_max_concurrent == 2


def test_max_concurrent_caps_the_started_trials() -> None:
    nodes = cluster({"CPU": 64.0, "memory": 1e9})
    p = plan(nodes, TrialShape(NO_CPU, CPU1, 2), 10, 3)
    assert counts(p) == (FITS, 3, 3)
    assert p.binding == "max_concurrent_trials"


def test_max_concurrent_above_the_trial_count() -> None:
    nodes = cluster({"CPU": 64.0, "memory": 1e9})
    p = plan(nodes, TrialShape(NO_CPU, CPU1, 2), 2, 8)
    assert counts(p) == (FITS, 2, 2)
    assert p.binding == "CPU"


def test_tune_starts_only_the_drivers_that_fit() -> None:
    nodes = cluster({"CPU": 8.0, "GPU": 2.0})
    p = plan(nodes, TrialShape({"GPU": 1.0}, CPU1, 2), 5, None)
    assert counts(p) == (FITS, 2, 2)  # two GPU drivers; 8 CPUs hold both groups
    assert p.binding == "GPU"
    assert p.reasons == ("2 trial(s) run at once; GPU binds",)


def test_many_trials_of_cpu_drivers_deadlock_a_small_cluster() -> None:
    """Tune fills every CPU with drivers before any worker group asks."""
    nodes = cluster({"CPU": 4.0})
    p = plan(nodes, TrialShape(CPU1, CPU1, 1), 10, None)
    assert counts(p) == (DEADLOCK, 4, 0)
    assert p.suggested_max_concurrent == 2


def test_exit_codes() -> None:
    assert plan_module.EXIT_CODES == {
        FITS: 0,
        NEVER_PLACEABLE: 12,
        DEADLOCK: 13,
        UNDER_UTILISED: 13,
    }


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_fits_with_room_to_spare(strategy: str) -> None:
    nodes = cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=4)
    p = plan(nodes, TrialShape(NO_CPU, {"CPU": 2.0, "GPU": 1.0}, 2, strategy), 2, None)
    assert counts(p) == (FITS, 2, 2)


# ----------------------------------------------------------------------------- large clusters


def big_gpu_box_and_small_nodes() -> list[NodeShape]:
    """One 8-GPU box and 16 two-GPU nodes: enough driver placements (2^17) that the
    planner takes its greedy path."""
    return [NodeShape("box", {"CPU": 32.0, "GPU": 8.0, "memory": 256e9})] + cluster(
        {"CPU": 8.0, "GPU": 2.0, "memory": 64e9}, count=16
    )


def test_large_cluster_greedy_matches_exhaustive_when_it_is_easy() -> None:
    nodes = cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=40)
    p = plan(nodes, TrialShape(CPU1, {"CPU": 2.0, "GPU": 1.0}, 4, "STRICT_PACK"), 100, None)
    # 40 nodes × 4 GPUs: 40 groups, each node keeps 8 CPUs for workers + drivers.
    assert counts(p) == (UNDER_UTILISED, 100, 40)
    assert p.suggested_max_concurrent == 40


def test_large_cluster_no_false_deadlock_strict_pack() -> None:
    """BUG (greedy path): the one driver costs one worker slot on any node, and ties go
    to the node with the most room — the 8-GPU box, the only node that can hold an
    8-worker STRICT_PACK group. The planner then says DEADLOCK (exit 13, launch refused)
    though the driver on a small node lets the trial run. On 9 nodes (exhaustive path)
    the same shape fits."""
    shape = TrialShape(CPU1, {"CPU": 4.0, "GPU": 1.0}, 8, "STRICT_PACK")
    assert counts(plan(big_gpu_box_and_small_nodes()[:9], shape, 1, None)) == (FITS, 1, 1)
    p = plan(big_gpu_box_and_small_nodes(), shape, 1, None)
    assert counts(p) == (FITS, 1, 1)


def test_large_cluster_no_false_deadlock_several_trials() -> None:
    """BUG (greedy path), same cluster with 4 trials: drivers on the small nodes leave the
    box for one group, so 1 trial runs (under-utilised), not a deadlock."""
    shape = TrialShape(CPU1, {"CPU": 4.0, "GPU": 1.0}, 8, "STRICT_PACK")
    p = plan(big_gpu_box_and_small_nodes(), shape, 4, None)
    assert counts(p) == (UNDER_UTILISED, 4, 1)
    assert p.suggested_max_concurrent == 1


def gpu_and_cpu_nodes(each: int) -> list[NodeShape]:
    return cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=each) + cluster(
        {"CPU": 32.0, "memory": 128e9}, count=each
    )


def test_strict_pack_cpu_groups_with_cpu_drivers_small() -> None:
    """8 × {CPU: 4} STRICT_PACK groups only fit the 32-CPU nodes; the {CPU: 1} drivers
    belong on the GPU nodes (16 CPUs idle for this sweep). 2 + 2 nodes: exhaustive."""
    shape = TrialShape(CPU1, {"CPU": 4.0}, 8, "STRICT_PACK")
    assert counts(plan(gpu_and_cpu_nodes(2), shape, 2, None)) == (FITS, 2, 2)


def test_strict_pack_cpu_groups_with_cpu_drivers_large() -> None:
    """BUG (greedy path), the same shape on 10 + 10 nodes: a driver costs one worker slot
    on either kind of node, ties go to the roomier 32-CPU nodes, and once there more
    drivers cost nothing (31..28 CPUs all hold 7 slots), so drivers pile onto the only
    nodes that can hold a group: 7 of 10 run, 'under_utilised', where all 10 fit. (The
    benchmark's 1,000-node version reports 375 of 500.)"""
    shape = TrialShape(CPU1, {"CPU": 4.0}, 8, "STRICT_PACK")
    p = plan(gpu_and_cpu_nodes(10), shape, 10, None)
    assert counts(p) == (FITS, 10, 10)


def test_greedy_path_no_false_deadlock_minimal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bug on two nodes, the greedy path forced (the property test's example)."""
    monkeypatch.setattr(plan_module, "EXHAUSTIVE_LIMIT", 0)
    nodes = cluster({"GPU": 2.0}, {"GPU": 1.0})
    p = plan(nodes, TrialShape({"GPU": 1.0}, {"GPU": 1.0}, 2, "STRICT_PACK"), 1, None)
    assert counts(p) == (FITS, 1, 1)


# ----------------------------------------------------------------------------- function trainables


def test_function_trainable_is_its_own_driver() -> None:
    nodes = cluster({"CPU": 4.0})
    p = plan(nodes, TrialShape(CPU1, {}, 0), 10, None)
    assert counts(p) == (FITS, 4, 4)
    assert p.num_workers == 0
    assert p.reasons == ("4 trial(s) run at once; CPU binds",)
    # No CPU advice (no workers to free CPUs for). The cap it suggests is what Tune does
    # anyway on this cluster (only 4 drivers fit), so it is advice, not a fix.
    assert p.suggestions == ("set [tune] max_concurrent_trials = 4",)
    assert p.suggested_max_concurrent == 4


def test_function_trainable_capped() -> None:
    p = plan(cluster({"CPU": 4.0}), TrialShape(CPU1, {}, 0), 10, 2)
    assert counts(p) == (FITS, 2, 2)
    assert p.binding == "max_concurrent_trials"


def test_function_trainable_too_big() -> None:
    p = plan(cluster({"CPU": 4.0}, count=2), TrialShape({"CPU": 8.0}, {}, 0), 3, None)
    assert counts(p) == (NEVER_PLACEABLE, 0, 0)
    assert p.reasons == ("the trial bundle needs CPU 8; the largest node has 4",)


# ----------------------------------------------------------------------------- spec → planner


def make_spec(
    tmp_path: Path,
    *,
    kind: str = "torch",
    storage: str | None = None,
    param_space: dict[str, Sampler] | None = None,
    tune: TuneSection | None = None,
    scaling: ScalingSection | None = None,
    cluster_section: ClusterSection | None = None,
) -> RunSpec:
    return RunSpec(
        path=tmp_path / "spec.toml",
        experiment=ExperimentSection("sweep", storage or str(tmp_path / "results")),
        trainable=TrainableSection(kind, "train:train_func"),
        param_space=param_space or {},
        tune=tune or TuneSection(),
        scaling=scaling or ScalingSection(),
        cluster=cluster_section or ClusterSection(),
    )


def test_trial_count_is_the_grid_product_times_num_samples(tmp_path: Path) -> None:
    space = {
        "lr": Sampler("grid", (1e-3, 1e-2, 1e-1)),
        "layers": Sampler("grid", (1, 2)),
        "opt": Sampler("choice", ("adam", "sgd", "rmsprop")),  # sampled, not a grid
        "seed": Sampler("randint", (0, 100)),
        "epochs": Sampler("constant", 5),
    }
    spec = make_spec(tmp_path, param_space=space, tune=TuneSection(num_samples=4))
    assert trial_count(spec) == 3 * 2 * 4
    assert trial_count(make_spec(tmp_path)) == 1
    assert trial_count(make_spec(tmp_path, tune=TuneSection(num_samples=5))) == 5


def test_worker_bundle_follows_rays_defaults(tmp_path: Path) -> None:
    assert worker_bundle(make_spec(tmp_path)) == {"CPU": 1.0}
    assert worker_bundle(make_spec(tmp_path, scaling=ScalingSection(use_gpu=True))) == {"GPU": 1.0}
    given = ScalingSection(use_gpu=True, resources_per_worker={"CPU": 2, "GPU": 1})
    assert worker_bundle(make_spec(tmp_path, scaling=given)) == {"CPU": 2, "GPU": 1}


def test_trial_shapes_torch_default(tmp_path: Path) -> None:
    scaling = ScalingSection(num_workers=4, use_gpu=True, placement_strategy="STRICT_SPREAD")
    (shape,) = trial_shapes(make_spec(tmp_path, scaling=scaling))
    assert shape == TrialShape({"CPU": 0, "memory": 1}, {"GPU": 1.0}, 4, "STRICT_SPREAD")


def test_trial_shapes_uses_the_given_trial_resources(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, tune=TuneSection(trial_resources={"CPU": 1}))
    (shape,) = trial_shapes(spec)
    assert shape.driver == {"CPU": 1}


def test_trial_shapes_elastic_has_both_ends(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, scaling=ScalingSection(num_workers=(2, 8), use_gpu=True))
    low, high = trial_shapes(spec)
    assert (low.num_workers, high.num_workers) == (2, 8)
    assert low.worker == high.worker == {"GPU": 1.0}
    assert low.strategy == high.strategy == "PACK"


def test_trial_shapes_function_trainable(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, kind="function", scaling=ScalingSection(num_workers=4))
    assert trial_shapes(spec) == [TrialShape({"CPU": 1}, {}, 0)]


def test_plan_sweep_elastic_ends(tmp_path: Path) -> None:
    """The smallest group decides the exit code; the largest end is reported too."""
    scaling = ScalingSection(num_workers=(4, 8), use_gpu=True, placement_strategy="STRICT_PACK")
    spec = make_spec(
        tmp_path,
        storage="s3://bucket/prefix",
        param_space={"lr": Sampler("grid", (1, 2))},
        scaling=scaling,
    )
    nodes = cluster({"CPU": 16.0, "GPU": 4.0, "memory": 64e9}, count=2)
    sweep = plan_sweep(spec, nodes, "2 × 4-GPU")
    low, high = sweep.plans
    assert counts(low) == (FITS, 2, 2)
    assert low.trials == 2
    assert counts(high) == (NEVER_PLACEABLE, 0, 0)
    assert "on one node" in high.reasons[0]
    assert sweep.verdict_plan is low
    assert sweep.exit_code == 0
    assert sweep.warnings == ()

    lines = describe(sweep)
    assert lines[0] == "plan on 2 × 4-GPU:"
    assert lines[1] == (
        "  FITS with 4 workers: 2 trial(s), 2 started at once, 2 running; binding resource: GPU"
    )
    assert any(line.startswith("  NEVER_PLACEABLE with 8 workers: 2 trial(s)") for line in lines)


def test_plan_sweep_elastic_low_end_failing_decides(tmp_path: Path) -> None:
    spec = make_spec(
        tmp_path,
        storage="s3://b/p",
        tune=TuneSection(trial_resources={"CPU": 1}, num_samples=2),
        scaling=ScalingSection(num_workers=(1, 2)),
    )
    sweep = plan_sweep(spec, cluster({"CPU": 2.0}), "tiny")
    assert counts(sweep.verdict_plan) == (DEADLOCK, 2, 0)
    assert sweep.exit_code == 13
    text = "\n".join(describe(sweep))
    assert "suggestion: set [tune] max_concurrent_trials = 1" in text
    assert CPU_FIX in text


def test_plan_sweep_warns_about_local_storage_on_many_nodes(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, storage="/data/results")
    nodes = cluster({"CPU": 8.0, "memory": 1e9}, count=3)
    sweep = plan_sweep(spec, nodes, "3 nodes")
    assert sweep.warnings == (
        "storage_path /data/results is a local folder on a 3-node cluster: checkpoints will "
        "not be reachable by every worker nor survive the pod; use shared storage (s3://…, NFS)",
    )
    assert describe(sweep)[-1].startswith("  warning: storage_path /data/results is a local")


@pytest.mark.parametrize(
    ("storage", "node_count", "warned"),
    [
        ("/data/results", 1, False),  # one node: local is fine
        ("s3://bucket/prefix", 3, False),
        ("gs://bucket/prefix", 3, False),
        ("file:///mnt/results", 3, True),  # file:// is still a local folder
    ],
)
def test_storage_warning_cases(tmp_path: Path, storage: str, node_count: int, warned: bool) -> None:
    spec = make_spec(tmp_path, storage=storage)
    sweep = plan_sweep(spec, cluster({"CPU": 8.0, "memory": 1e9}, count=node_count), "c")
    assert bool(sweep.warnings) is warned


def test_plan_sweep_max_concurrent_from_the_spec(tmp_path: Path) -> None:
    spec = make_spec(
        tmp_path,
        param_space={"a": Sampler("grid", (1, 2, 3)), "b": Sampler("grid", (1, 2))},
        tune=TuneSection(num_samples=2, max_concurrent_trials=4),
    )
    sweep = plan_sweep(spec, cluster({"CPU": 64.0, "memory": 1e9}), "one")
    assert counts(sweep.verdict_plan) == (FITS, 4, 4)
    assert sweep.verdict_plan.trials == 12
    assert sweep.verdict_plan.binding == "max_concurrent_trials"


def test_nodes_from_spec_embedded_cluster(tmp_path: Path) -> None:
    spec = make_spec(
        tmp_path, cluster_section=ClusterSection(num_cpus=4, num_gpus=2, resources={"accel": 1})
    )
    (node,) = nodes_from_spec(spec)
    assert node.name == "embedded"
    assert node.resources == {"CPU": 4.0, "memory": PLENTY, "accel": 1, "GPU": 2.0}
    # The default torch driver {CPU: 0, memory: 1} fits the embedded cluster.
    p = plan([node], trial_shapes(spec)[0], 4, None)
    assert counts(p) == (FITS, 4, 4)


def test_nodes_from_spec_without_gpus(tmp_path: Path) -> None:
    (node,) = nodes_from_spec(make_spec(tmp_path, cluster_section=ClusterSection(num_cpus=2)))
    assert "GPU" not in node.resources
    assert node.resources["CPU"] == 2.0


# ----------------------------------------------------------------------------- NODES.toml


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "NODES.toml"
    path.write_text(textwrap.dedent(text))
    return path


def nodes_error(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        nodes_from_file(path)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message, message
    assert message.startswith(str(path)) or message.endswith(str(path)), message
    return message


def test_nodes_file_counts_names_and_case(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [[nodes]]
        name = "gpu"
        count = 4
        cpu = 16
        gpu = 4
        memory = 64e9

        [[nodes]]
        CPU = 8
        accel = 2
        """,
    )
    nodes = nodes_from_file(path)
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "group2-0"]
    assert nodes[0].resources == {"memory": 64e9, "CPU": 16.0, "GPU": 4.0}
    assert nodes[4].resources == {"memory": PLENTY, "CPU": 8.0, "accel": 2.0}
    assert all(isinstance(v, float) for n in nodes for v in n.resources.values())
    nodes[0].resources["CPU"] = 0  # each node has its own dict
    assert nodes[1].resources["CPU"] == 16.0


def test_nodes_file_plans(tmp_path: Path) -> None:
    path = write(tmp_path, "[[nodes]]\ncount = 4\nCPU = 16\nGPU = 4\n")
    p = plan(nodes_from_file(path), TrialShape(NO_CPU, {"GPU": 1.0}, 8, "STRICT_PACK"), 1, None)
    assert p.verdict == NEVER_PLACEABLE
    assert "on one node" in p.reasons[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "expected one or more [[nodes]] tables"),
        ("nodes = []\n", "expected one or more [[nodes]] tables"),
        ("[nodes]\nCPU = 4\n", "expected one or more [[nodes]] tables"),
        ("[[nodes]]\ncount = 0\n", "[[nodes]] #1 count: expected an integer >= 1"),
        ("[[nodes]]\ncount = 2.5\n", "[[nodes]] #1 count: expected an integer >= 1"),
        ("[[nodes]]\ncount = true\n", "[[nodes]] #1 count: expected an integer >= 1"),
        ("[[nodes]]\ncount = '3'\n", "[[nodes]] #1 count: expected an integer >= 1"),
        ("[[nodes]]\nCPU = 4\n[[nodes]]\ngpu = -1\n", "[[nodes]] #2 gpu: expected a number >= 0"),
        ("[[nodes]]\nCPU = 'many'\n", "[[nodes]] #1 CPU: expected a number >= 0"),
        ("[[nodes]]\nGPU = true\n", "[[nodes]] #1 GPU: expected a number >= 0"),
        ("[[nodes]]\nCPU = [4]\n", "[[nodes]] #1 CPU: expected a number >= 0"),
    ],
)
def test_nodes_file_bad_values(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    assert nodes_error(path) == f"{path}: {expected}"


def test_nodes_file_toml_syntax_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[[nodes]]\nCPU = \n")
    message = nodes_error(path)
    assert message.startswith(f"{path}: ")
    assert "line 2" in message


def test_nodes_file_missing(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    assert nodes_error(path) == f"cluster description not found: {path}"


@pytest.mark.parametrize("value", ["nan", "inf", "+inf"])
def test_nodes_file_rejects_non_finite_numbers(tmp_path: Path, value: str) -> None:
    """BUG: TOML's nan / inf pass the ``>= 0`` check (nan < 0 is False) and the planner
    then crashes in slots() (ValueError / OverflowError from math.floor)."""
    path = write(tmp_path, f"[[nodes]]\nCPU = {value}\n")
    assert nodes_error(path) == f"{path}: [[nodes]] #1 CPU: expected a number >= 0"


@pytest.mark.parametrize("text", ["nodes = [1, 2]\n", "nodes = ['a']\n", "nodes = [[4]]\n"])
def test_nodes_file_rejects_entries_that_are_not_tables(tmp_path: Path, text: str) -> None:
    """BUG: a ``nodes`` array of non-tables raises AttributeError ('int' object has no
    attribute 'get') instead of a SpecError."""
    path = write(tmp_path, text)
    assert nodes_error(path) == f"{path}: [[nodes]] #1: expected a table"


# ----------------------------------------------------------------------------- bounds


def test_nodes_file_of_binary_bytes_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "NODES.toml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe[[nodes]]\n")
    assert nodes_error(path) == (f"{path}: not valid UTF-8 text (invalid start byte)")


def test_nodes_file_toml_error_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[[nodes]]\nCPU = 4\nCPU = 5\n")
    assert nodes_error(path).startswith(f"{path}: TOML syntax error: ")


def bounded_nodes_error(path: Path) -> str:
    """``nodes_error``, failing (not hanging) when the read blocks."""
    message = str(raised_within(2, lambda: nodes_from_file(path), SpecError))
    assert "\n" not in message, message
    return message


def test_a_fifo_nodes_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "NODES.toml"
    os.mkfifo(path)
    assert bounded_nodes_error(path) == f"{path}: not a regular file (a FIFO): not read"


def test_a_device_nodes_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "NODES.toml"
    path.symlink_to("/dev/zero")
    assert bounded_nodes_error(path) == (
        f"{path}: not a regular file (a character device): not read"
    )


def test_a_nodes_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "NODES.toml"
    path.write_bytes(b"[[nodes]]\nCPU = 1\n" + b"#" * MAX_TOML_BYTES)
    assert bounded_nodes_error(path).endswith(", over the 1,048,576 bytes (1.0 MiB) cap: not read")


def test_a_nodes_file_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[[" + ".".join(["nodes"] * 20_000) + "]]\n")
    assert "nested too deep" in bounded_nodes_error(path)


def test_a_nodes_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "NODES.toml"
    path.write_bytes(b"\xef\xbb\xbf[[nodes]]\nCPU = 4\n")
    assert [n.resources["CPU"] for n in nodes_from_file(path)] == [4.0]


@pytest.mark.parametrize("count", ["100000000", "100_000_000"])
def test_nodes_file_count_above_the_cap_is_refused_before_expanding(
    tmp_path: Path, count: str
) -> None:
    path = write(tmp_path, f"[[nodes]]\ncount = {count}\nCPU = 16\n")
    assert nodes_error(path) == (
        f"{path}: [[nodes]] #1 count: 100,000,000 nodes in all, above the limit of {MAX_NODES:,}"
    )


def test_nodes_file_cap_counts_every_entry(tmp_path: Path) -> None:
    half = MAX_NODES // 2
    path = write(tmp_path, f"[[nodes]]\ncount = {half}\nCPU = 1\n[[nodes]]\ncount = {half}\n")
    assert len(nodes_from_file(path)) == MAX_NODES
    path = write(tmp_path, f"[[nodes]]\ncount = {half}\n[[nodes]]\ncount = {half + 1}\n")
    assert nodes_error(path) == (
        f"{path}: [[nodes]] #2 count: {MAX_NODES + 1:,} nodes in all, above the limit of "
        f"{MAX_NODES:,}"
    )


def test_nodes_file_count_as_a_float_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "[[nodes]]\ncount = 1e8\n")
    assert nodes_error(path) == f"{path}: [[nodes]] #1 count: expected an integer >= 1"


def test_nodes_file_name_must_be_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, "[[nodes]]\nname = 3\n")
    assert nodes_error(path) == f"{path}: [[nodes]] #1 name: expected a string"


@pytest.mark.parametrize("kind", ["torch", "function"])
@pytest.mark.timeout(60)  # a deadline, not a figure: benchmarks/plan_bench.py --at-cap
def test_a_sweep_at_the_trial_cap_plans_in_bounded_time(tmp_path: Path, kind: str) -> None:
    """num_samples at MAX_TRIALS on the embedded cluster: the planner once counted the
    started drivers down one by one (100,000 calls, each over every node)."""
    spec = make_spec(
        tmp_path, kind=kind, tune=TuneSection(num_samples=MAX_TRIALS),
        cluster_section=ClusterSection(num_cpus=4),
    )  # fmt: skip
    sweep = plan_sweep(spec, nodes_from_spec(spec), "embedded")
    assert sweep.verdict_plan.trials == MAX_TRIALS


def test_started_drivers_are_exactly_those_that_fit() -> None:
    """Four {CPU: 1} drivers fit on two 2-CPU nodes, whatever the trial count."""
    nodes = cluster({"CPU": 2.0}, count=2)
    p = plan(nodes, TrialShape(CPU1, {}, 0), MAX_TRIALS, None)
    assert counts(p) == (FITS, 4, 4)


def test_a_tiny_need_counts_as_always_not_infinity() -> None:
    """CPU = 1e-320 made the ratio infinite and math.floor raised OverflowError."""
    assert slots({"CPU": 16.0}, {"CPU": 1e-320}) == plan_module.ALWAYS
    assert slots({"CPU": 16.0}, {}) == plan_module.ALWAYS
    p = plan(cluster({"CPU": 16.0}), TrialShape({"CPU": 1e-320}, {"CPU": 1.0}, 2), 3, None)
    assert counts(p) == (FITS, 3, 3)


@pytest.mark.timeout(60)  # a deadline, not a figure: benchmarks/plan_bench.py --at-cap
def test_a_deadlock_with_a_large_worker_group_is_proven_in_bounded_time() -> None:
    """1,000 nodes of 16 CPUs, 16,000 {CPU: 1} drivers, groups of 800 {CPU: 1} workers: the
    exact one-group check once ran a dynamic programme cubic in the group size (7 s)."""
    p = plan(cluster({"CPU": 16.0}, count=1000), TrialShape(CPU1, CPU1, 800), 16_000, None)
    assert counts(p) == (DEADLOCK, 16_000, 0)
    assert p.suggested_max_concurrent == 16_000 // 801  # each trial: a driver + 800 workers


@pytest.mark.timeout(60)  # a deadline, not a figure: benchmarks/plan_bench.py --at-cap
def test_the_largest_sweep_on_the_largest_nodes_file_plans(tmp_path: Path) -> None:
    """MAX_TRIALS elastic trials (planned at both ends) on MAX_NODES nodes read from a
    NODES.toml, with drivers that compete with the workers (the slow path)."""
    path = write(tmp_path, f"[[nodes]]\ncount = {MAX_NODES}\nCPU = 16\nGPU = 4\n")
    spec = make_spec(
        tmp_path, tune=TuneSection(num_samples=MAX_TRIALS, trial_resources={"CPU": 1.0}),
        scaling=ScalingSection(num_workers=(4, 8), resources_per_worker={"CPU": 4.0},
                               placement_strategy="STRICT_SPREAD"),
    )  # fmt: skip
    sweep = plan_sweep(spec, nodes_from_file(path), str(path))
    assert [p.verdict for p in sweep.plans] == [UNDER_UTILISED, UNDER_UTILISED]
    assert sweep.verdict_plan.suggested_max_concurrent == MAX_NODES * 16 // 17
