"""Pilot tests of the Placement screen (``p``): nodes, GPU slots, groups, why one waits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.diagnose.placement import why_pending
from raytop.model import Bundle, Node, PlacementGroup, Snapshot, TrainRun, Worker
from raytop.tui.messages import SourceFailed
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import OverviewScreen
from raytop.tui.screens.placement import (
    ALL_PLACED,
    NO_GROUPS,
    PlacementScreen,
    featured_group,
)
from raytop.tui.widgets.gpu_slots import NO_GPUS, slot_lines
from raytop.tui.widgets.node_table import NodeTable, custom_resources, fmt_usage, is_custom
from raytop.tui.widgets.placement_table import (
    PlacementTable,
    fmt_bundle,
    fmt_bundles,
    state_label,
)
from raytop.tui.widgets.trial_table import TrialTable

from .conftest import (
    CPU_NODE,
    DEAD_NODE,
    GPU_WAIT,
    HEAD_NODE,
    LEAKED_PG,
    TPU_PG,
    TPU_WHY,
    TRAIN_PG,
    TRIAL_PG,
    WAITING_PG,
)
from .helpers import cell, cursor_key, row_keys, show, text_of

WAITING_FIRST = [WAITING_PG, TPU_PG, TRAIN_PG, TRIAL_PG, LEAKED_PG]
SLOTS = "a3f9c2d1 GPU [0 t1·r0][1 t1·r1][2 ·][3 ·]"


async def open_placement(app, pilot, snapshot: Snapshot) -> PlacementScreen:
    await show(pilot, snapshot)
    await pilot.press("p")
    await pilot.pause()
    assert isinstance(app.screen, PlacementScreen)
    return app.screen


def with_groups(snapshot: Snapshot, *groups: PlacementGroup, dt: float = 1.0) -> Snapshot:
    """The next snapshot: each given group replaces the one with its id."""
    by_id = {g.pg_id: g for g in groups}
    return replace(
        snapshot,
        taken_at=snapshot.taken_at + dt,
        placement_groups=tuple(by_id.get(g.pg_id, g) for g in snapshot.placement_groups),
    )


def group(snapshot: Snapshot, pg_id: str) -> PlacementGroup:
    return next(g for g in snapshot.placement_groups if g.pg_id == pg_id)


def why_text(app) -> str:
    return text_of(app, "#placement-why")


# -- opening and leaving ------------------------------------------------------------------


@pytest.mark.parametrize("back", ["escape", "backspace"])
async def test_p_opens_the_placement_screen_and_back_returns(make_app, placement, back) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_placement(app, pilot, placement)
        assert screen.focused is screen.query_one(PlacementTable)
        await pilot.press(back)
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        # The overview's trial table is as it was: t2 still says why it waits.
        assert row_keys(app.screen.query_one(TrialTable)) == ["t1", "t2"]
        assert text_of(app, "#pending-reason") == f"t2 waits: {GPU_WAIT}"


async def test_p_is_offered_only_when_the_cluster_has_placement_groups(
    make_app, sweep, placement
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        assert app.screen.check_action("open_placement", ()) is False
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        await show(pilot, placement)
        assert app.screen.check_action("open_placement", ()) is True
        await pilot.press("question_mark")
        assert "p  place: Nodes, GPUs and placement groups" in text_of(app, "#help-keys")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_bindings_have_raytop_ids() -> None:
    bindings = [*PlacementScreen.BINDINGS, *OverviewScreen.BINDINGS]
    assert all(b.id and b.id.startswith("raytop.") for b in bindings)
    assert "raytop.placement" in {b.id for b in OverviewScreen.BINDINGS}


# -- nodes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_nodes_table_rows_and_cells(make_app, placement, size) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await open_placement(app, pilot, placement)
        table = screen.query_one(NodeTable)
        assert row_keys(table) == [HEAD_NODE, CPU_NODE, DEAD_NODE]
        columns = ("node", "state", "cpu", "gpu", "memory", "other")
        assert [cell(table, HEAD_NODE, c) for c in columns] == [
            "a3f9c2d1",
            "head",
            "2/8",
            "2/4",
            "2.0G/32G",
            "",  # node:*, object_store_memory, accelerator_type:* and *_group_* are Ray's
        ]
        assert [cell(table, CPU_NODE, c) for c in columns] == [
            "5be81f0c",
            "alive",
            "2/16",
            "-",
            "0B/64G",
            "hi_mem 0/2",
        ]
        assert [cell(table, DEAD_NODE, c) for c in columns[1:]] == ["DEAD", "-/8", "-", "-/32G", ""]
        # Ray's logical 2/8 CPU beside what the OS says of the head's host; no guess for
        # hosts raytop cannot see.
        hosts = [cell(table, key, "host") for key in (HEAD_NODE, CPU_NODE, DEAD_NODE)]
        assert hosts == ["87% 29G/32G", "-", "-"]
        assert not table.can_focus
        assert table.virtual_size.width <= table.scrollable_content_region.width


async def test_node_labels_only_at_wide_sizes(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = (await open_placement(app, pilot, placement)).query_one(NodeTable)
        assert "labels" not in table.columns_shown
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert "labels" in table.columns_shown
        # The node-id label only repeats the node column.
        assert cell(table, HEAD_NODE, "labels") == "zone=us-west-2a"
        assert row_keys(table) == [HEAD_NODE, CPU_NODE, DEAD_NODE]


# -- GPU slots -----------------------------------------------------------------------------


async def test_gpu_slot_line_names_the_ranks(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_placement(app, pilot, placement)
        # One line: only the head has GPUs (the CPU node and the dead node have none).
        assert text_of(app, "GpuSlots") == SLOTS


async def test_gpus_used_but_claimed_by_no_run_are_counted_honestly(make_app, placement) -> None:
    head, *others = placement.cluster.nodes
    busier = replace(head, resources_available={**head.resources_available, "GPU": 0.0})
    cluster = replace(placement.cluster, nodes=(busier, *others))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_placement(app, pilot, replace(placement, cluster=cluster))
        assert text_of(app, "GpuSlots") == f"{SLOTS} 2 used by others"


def test_slots_wrap_by_slot_under_the_node_column(placement) -> None:
    lines = [line.plain for line in slot_lines(placement, 30)]
    assert lines == [
        "a3f9c2d1 GPU [0 t1·r0]",
        "             [1 t1·r1][2 ·]",
        "             [3 ·]",
    ]
    assert [line.plain for line in slot_lines(placement, 0)] == [SLOTS]


def test_slots_ignore_finished_runs_and_say_when_no_node_has_gpus(placement) -> None:
    (experiment,) = placement.experiments
    (run,) = experiment.runs
    done = replace(run, workers=tuple(replace(w, done=True) for w in run.workers))
    ended = replace(placement, experiments=(replace(experiment, runs=(done,)),))
    assert slot_lines(ended, 0)[0].plain == "a3f9c2d1 GPU [0 ·][1 ·][2 ·][3 ·] 2 used by others"
    cpu_only = replace(placement.cluster, nodes=placement.cluster.nodes[1:])
    assert [line.plain for line in slot_lines(replace(placement, cluster=cpu_only), 0)] == [NO_GPUS]


def test_a_run_outside_any_experiment_holds_slots_by_run_name(placement) -> None:
    rank = Worker(rank=0, node_id=HEAD_NODE, gpu_ids=("3",))
    loose = TrainRun("r9", "ft-llama", "attempt-1", world_size=1, workers=(rank,))
    snapshot = replace(placement, runs=(loose,))
    assert slot_lines(snapshot, 0)[0].plain.endswith("[3 ft-llama·r0]")


# -- placement groups -------------------------------------------------------------------


def test_the_fixture_says_why_as_raytop_would(placement) -> None:
    """The fixture's reasons are the sentences raytop works out from its own nodes and
    groups: the why-it-waits line never contradicts the GPU figures shown beside it."""
    nodes, groups = list(placement.cluster.nodes), list(placement.placement_groups)
    assert why_pending(group(placement, WAITING_PG), nodes, groups) == GPU_WAIT
    assert why_pending(group(placement, TPU_PG), nodes, groups) == TPU_WHY
    assert [t.pending_reason for t in placement.experiments[0].trials] == [None, GPU_WAIT]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_groups_waiting_first_with_their_cells(make_app, placement, size) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        table = (await open_placement(app, pilot, placement)).query_one(PlacementTable)
        assert row_keys(table) == WAITING_FIRST
        assert [cell(table, k, "owner") for k in WAITING_FIRST] == [
            "pending trial of exp",
            "job 05000000",
            "Train run exp-t1",
            "trial t1",
            "job 02000000",
        ]
        assert [cell(table, k, "state") for k in WAITING_FIRST] == [
            "PENDING",
            "INFEASIBLE",
            "CREATED",
            "CREATED",
            "CREATED",
        ]
        assert [cell(table, k, "leaked") for k in WAITING_FIRST] == ["", "", "", "", "LEAKED"]
        assert [cell(table, WAITING_PG, c) for c in ("id", "age", "bundles")] == [
            "9b2e4f10",
            "1m35s",
            "0:{GPU:3}→·",
        ]
        # Alike bundles on one node are written once, with their index range.
        assert cell(table, TRAIN_PG, "bundles") == "0-1:{CPU:1,GPU:1}→a3f9c2d1"
        assert cell(table, TRIAL_PG, "bundles") == "0:{CPU:0,memory:1B}→5be81f0c"
        assert table.virtual_size.width <= table.scrollable_content_region.width
        summary = text_of(app, "#placement-summary")
        assert summary == "placement groups 5 · 2 waiting (1 infeasible) · 1 leaked"


async def test_80_columns_drop_strategy_and_attempts_wide_shows_them(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = (await open_placement(app, pilot, placement)).query_one(PlacementTable)
        assert table.columns_shown == ("id", "owner", "state", "age", "bundles", "leaked")
        await pilot.press("down")
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert "strategy" in table.columns_shown and "attempts" in table.columns_shown
        assert [cell(table, TPU_PG, c) for c in ("strategy", "attempts")] == ["STRICT_PACK", "3"]
        assert cursor_key(table) == TPU_PG


async def test_the_highlighted_waiting_group_says_why_else_the_first_one(
    make_app, placement
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_placement(app, pilot, placement)
        why = screen.query_one("#placement-why")
        assert why_text(app).splitlines()[0] == GPU_WAIT
        assert "group 9b2e4f10 · pending trial of exp · PACK · 14 attempts" in why_text(app)
        assert not why.has_class("-error")

        await pilot.press("down")
        assert why_text(app).splitlines()[0] == TPU_WHY
        assert why.has_class("-error")
        assert "0:{TPU:1}→·" in why_text(app)

        # A placed group has nothing to explain: the first waiting one is shown.
        await pilot.press("down")
        assert cursor_key(screen.query_one(PlacementTable)) == TRAIN_PG
        assert why_text(app).splitlines()[0] == GPU_WAIT


async def test_updates_diff_in_place_and_the_cursor_follows_its_group(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        table = (await open_placement(app, pilot, placement)).query_one(PlacementTable)
        await pilot.press("down")
        assert cursor_key(table) == TPU_PG
        rewritten: list[tuple[str, str]] = []
        update_cell = table.update_cell

        def spy(row_key, column_key, value, **kwargs) -> None:
            rewritten.append((row_key, column_key))
            update_cell(row_key, column_key, value, **kwargs)

        table.update_cell = spy  # type: ignore[method-assign]

        # One more attempt, one second older: only those two cells are rewritten.
        tpu = group(placement, TPU_PG)
        tick = with_groups(placement, replace(tpu, attempts=4, age_s=42.0))
        await show(pilot, tick)
        assert sorted(rewritten) == [(TPU_PG, "age"), (TPU_PG, "attempts")]
        assert [cell(table, TPU_PG, c) for c in ("attempts", "age")] == ["4", "42s"]
        assert row_keys(table) == WAITING_FIRST
        assert cursor_key(table) == TPU_PG

        # The GPU trial's group gets placed: it moves down among the placed ones.
        waiting = group(placement, WAITING_PG)
        placed = replace(
            waiting,
            state="CREATED",
            scheduling_state="FINISHED",
            bundles=tuple(replace(b, node_id=HEAD_NODE) for b in waiting.bundles),
            why_pending=None,
        )
        await show(pilot, with_groups(tick, placed))
        assert row_keys(table) == [TPU_PG, TRAIN_PG, TRIAL_PG, WAITING_PG, LEAKED_PG]
        assert cell(table, WAITING_PG, "state") == "CREATED"
        assert cell(table, WAITING_PG, "bundles") == "0:{GPU:3}→a3f9c2d1"
        assert cursor_key(table) == TPU_PG
        assert why_text(app).splitlines()[0] == TPU_WHY
        assert text_of(app, "#placement-summary").startswith("placement groups 5 · 1 waiting")
        assert text_of(app, "#age") == "updated 0s ago"


async def test_once_every_group_is_placed_the_box_says_so(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_placement(app, pilot, placement)
        created = tuple(g for g in placement.placement_groups if g.placed)
        await show(pilot, replace(placement, placement_groups=created))
        assert why_text(app) == ALL_PLACED
        assert screen.query_one("#placement-why").has_class("-settled")
        assert row_keys(screen.query_one(PlacementTable)) == [TRAIN_PG, TRIAL_PG, LEAKED_PG]
        await show(pilot, replace(placement, placement_groups=()))
        assert why_text(app) == NO_GROUPS
        assert screen.query_one(PlacementTable).row_count == 0


async def test_disconnected_keeps_the_last_cluster_that_answered(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_placement(app, pilot, placement)
        app.post_message(SourceFailed("ConnectionError: GCS went away", 2))
        await pilot.pause()
        assert "DISCONNECTED" in text_of(app, "#banner")
        assert row_keys(screen.query_one(PlacementTable)) == WAITING_FIRST
        assert len(screen.query_one(NodeTable).rows) == 3
        assert text_of(app, "GpuSlots") == SLOTS


async def test_the_overview_catches_up_after_the_placement_screen(make_app, placement) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_placement(app, pilot, placement)
        (experiment,) = placement.experiments
        t1, t2 = experiment.trials
        started = replace(t2, status="RUNNING", pending_reason=None)
        newer = replace(placement, experiments=(replace(experiment, trials=(t1, started)),))
        await show(pilot, newer)
        await pilot.press("escape")
        await pilot.pause()
        table = app.screen.query_one(TrialTable)
        assert cell(table, "t2", "status") == "RUNNING"
        assert not app.screen.query_one("#pending-reason").display


# -- pure helpers ------------------------------------------------------------------------


def test_custom_resources_skip_rays_bookkeeping() -> None:
    kept = ["TPU", "hi_mem", "neuron_cores"]
    internal = [
        "CPU",
        "GPU",
        "memory",
        "object_store_memory",
        "node:10.0.0.1",
        "node:__internal_head__",
        "accelerator_type:A100",
        "CPU_group_0_abc",
        "bundle_group_abc",
    ]
    assert [r for r in kept + internal if is_custom(r)] == kept
    node = Node(
        "n1",
        "10.0.0.1",
        alive=True,
        is_head=False,
        resources_total={"TPU": 4.0, "hi_mem": 2.0, "CPU": 8.0},
        resources_available={"TPU": 3.0},
    )
    assert custom_resources(node) == "TPU 1/4, hi_mem 2/2"
    assert fmt_usage(node, "GPU") == "-"


@pytest.mark.parametrize(
    ("kind", "owner", "expected"),
    [
        ("trial", "t7", "trial t7"),
        ("train_run", "exp-t7", "Train run exp-t7"),
        ("pending_trial", None, "pending trial of exp"),
        ("other", "job 03000000", "job 03000000"),
        ("other", None, "other"),
    ],
)
def test_owner_labels(kind, owner, expected) -> None:
    pg = PlacementGroup("p", "PACK", "PENDING", "NO_RESOURCES", owner_kind=kind, owner=owner,
                        experiment="exp")  # fmt: skip
    assert pg.owner_label == expected


def test_state_and_bundle_strings() -> None:
    pending = PlacementGroup("p", "SPREAD", "PENDING", "INFEASIBLE")
    assert state_label(pending) == "INFEASIBLE"
    assert state_label(replace(pending, scheduling_state="NO_RESOURCES")) == "PENDING"
    bundle = Bundle(2, {"memory": 2 * 2**30, "CPU": 0.5}, "abcdef0123456789")
    assert fmt_bundle(bundle) == "2:{CPU:0.5,memory:2.0G}→abcdef01"


def test_bundles_on_nodes_compact_runs_of_alike_bundles() -> None:
    gpu = {"GPU": 1.0}
    bundles = (
        *(Bundle(i, gpu, "n1aaaaaaaa") for i in range(3)),
        Bundle(3, gpu, "n2bbbbbbbb"),
        *(Bundle(i, gpu) for i in (4, 5)),
        Bundle(6, {"CPU": 1.0}),
    )
    pg = PlacementGroup("p", "SPREAD", "PENDING", "NO_RESOURCES", bundles=bundles)
    assert fmt_bundles(pg) == "0-2:{GPU:1}→n1aaaaaa 3:{GPU:1}→n2bbbbbb 4-5:{GPU:1}→· 6:{CPU:1}→·"


def test_featured_group_prefers_the_highlighted_waiting_one(placement) -> None:
    groups = placement.placement_groups
    assert featured_group(groups, None).pg_id == WAITING_PG
    assert featured_group(groups, TPU_PG).pg_id == TPU_PG
    assert featured_group(groups, LEAKED_PG).pg_id == WAITING_PG
    assert featured_group([g for g in groups if g.placed], TRAIN_PG) is None
