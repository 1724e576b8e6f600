"""Why-pending sentences and placement findings (pure, no Ray)."""

from raytop.diagnose import diagnose
from raytop.diagnose.check import exit_code
from raytop.diagnose.placement import placement_findings, why_pending
from raytop.model import Bundle, Cluster, Node, PlacementGroup, Snapshot
from raytop.model.thresholds import Thresholds


def node(name: str, total: dict, free: dict | None = None, alive=True) -> Node:
    return Node(name, "10.0.0.1", alive, False, total, total if free is None else free)


def group(*bundles: dict, strategy="PACK", state="PENDING", **kw) -> PlacementGroup:
    placed = state == "CREATED"
    return PlacementGroup(
        pg_id=kw.pop("pg_id", "pg000000aa"), strategy=strategy, state=state,
        scheduling_state="FINISHED" if placed else "NO_RESOURCES",
        bundles=tuple(Bundle(i, b, "n1" if placed else None) for i, b in enumerate(bundles)),
        **kw,
    )  # fmt: skip


CPU4 = [node("n1", {"CPU": 4.0, "memory": 1e9})]


def test_a_resource_no_node_has():
    assert why_pending(group({"GPU": 1.0}), CPU4, []) == "bundle 0 needs {GPU: 1}; no node has GPU"


def test_a_bundle_bigger_than_the_largest_node():
    reason = why_pending(group({"CPU": 8.0}), CPU4, [])
    assert reason == "bundle 0 needs CPU 8; the largest node has 4"


def test_strict_pack_larger_than_one_node():
    nodes = [node(f"g{i}", {"GPU": 4.0}) for i in range(2)]
    pg = group(*[{"GPU": 1.0}] * 8, strategy="STRICT_PACK")
    assert (
        why_pending(pg, nodes, []) == "STRICT_PACK needs 8 GPU on one node; the largest node has 4"
    )


def test_strict_spread_needs_more_nodes_than_are_alive():
    nodes = [node("a", {"CPU": 4.0}), node("b", {"CPU": 4.0}), node("c", {"CPU": 4.0}, alive=False)]
    pg = group(*[{"CPU": 1.0}] * 4, strategy="STRICT_SPREAD")
    assert why_pending(pg, nodes, []) == "STRICT_SPREAD needs 4 nodes; 2 are alive"


def test_contention_names_the_holders():
    nodes = [node("n1", {"CPU": 4.0}, {"CPU": 1.0})]
    holders = [
        group({"CPU": 2.0}, state="CREATED", pg_id="t2", owner_kind="trial", owner="t2"),
        group({"CPU": 1.0}, state="CREATED", pg_id="r1", owner_kind="train_run", owner="exp-t3"),
        group({"memory": 1.0}, state="CREATED", pg_id="t4", owner_kind="trial", owner="t4"),
    ]
    reason = why_pending(group({"CPU": 2.0}), nodes, holders)
    assert reason == "fits, but 3 of 4 CPU are held by Train run exp-t3, trial t2"


def test_a_train_run_stuck_in_scheduling_counts_its_timeouts():
    nodes = [node("n1", {"CPU": 4.0}, {"CPU": 0.0})]
    pg = group({"CPU": 1.0}, {"CPU": 1.0}, owner_kind="train_run", owner="r1", age_s=185.0)
    reason = why_pending(pg, nodes, [])
    assert reason.startswith("Train run r1 has waited in SCHEDULING for 3 worker-group start "
                             "timeout(s); retries are unlimited: fits, but 4 of 4 CPU")  # fmt: skip


def test_findings_and_check_codes():
    infeasible = group({"GPU": 1.0}, pg_id="a", why_pending="x", age_s=1.0)
    waiting = group({"CPU": 1.0}, pg_id="b", why_pending="y", age_s=400.0)
    young = group({"CPU": 1.0}, pg_id="c", why_pending="z", age_s=10.0)
    leaked = group({"CPU": 1.0}, pg_id="d", state="CREATED", leaked=True)
    kinds = [
        f.kind for f in placement_findings((infeasible, waiting, young, leaked), tuple(CPU4), 300)
    ]
    assert kinds == ["placement_infeasible", "placement_waiting", "placement_leaked"]
    snap = Snapshot(0.0, Cluster("h:1", True, nodes=tuple(CPU4)), placement_groups=(waiting,))
    assert exit_code(diagnose(snap, Thresholds(waiting_after_s=300))) == 13
    snap = Snapshot(
        0.0, Cluster("h:1", True, nodes=tuple(CPU4)), placement_groups=(waiting, infeasible)
    )
    assert exit_code(diagnose(snap, Thresholds())) == 12


def test_one_capacity_for_many_groups_says_what_each_group_alone_would():
    """The placement reader asks ``Capacity`` once for every waiting group: the sentences
    must be the ones each group gets on its own (holders named, itself left out, groups of
    one shape sharing one reason)."""
    import random
    from dataclasses import replace

    from raytop.diagnose.placement import Capacity

    rng = random.Random(5)
    for _ in range(200):
        nodes = [
            node(f"n{i}", {"CPU": 8.0, "GPU": rng.choice([0.0, 4.0])},
                 {"CPU": rng.choice([0.0, 2.0, 8.0]), "GPU": rng.choice([0.0, 1.0])},
                 alive=rng.random() > 0.2)
            for i in range(rng.randint(1, 5))
        ]  # fmt: skip
        groups = [
            group(*[{rng.choice(["CPU", "GPU", "memory"]): rng.choice([1.0, 2.0, 16.0])}
                    for _ in range(rng.randint(1, 3))],
                  strategy=rng.choice(["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"]),
                  state=rng.choice(["CREATED", "PENDING"]), pg_id=f"pg{i}",
                  owner_kind=rng.choice(["trial", "train_run", "other"]), owner=f"o{i % 3}",
                  age_s=rng.choice([None, 5.0, 200.0]))
            for i in range(rng.randint(1, 8))
        ]  # fmt: skip
        groups.append(replace(groups[0], pg_id="same-shape"))  # one reason per shape
        shared = Capacity(nodes, groups)
        for pg in groups:
            assert why_pending(pg, nodes, groups, shared) == why_pending(pg, nodes, groups)
