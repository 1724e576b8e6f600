"""Every run on the cluster, on the overview (``WorkloadPanel``): plain ``raytop`` lists
them as one table above the experiment (live first, as the pipeline ordered them), and
Enter on a row shows that experiment, opens that Train run's ranks, or says what a job
is. ``raytop run`` (``own_first``) keeps its own experiment the screen and says the rest
in one line; ``n`` opens the whole list."""

from __future__ import annotations

from dataclasses import replace

from raytop.model.workloads import KIND_EXPERIMENT, ORIGIN_RAY_JOB, Workload, others_line
from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.runs import RunsScreen
from raytop.tui.widgets.experiment_header import ExperimentHeader
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.workload_panel import rows_for
from raytop.tui.widgets.workload_table import WorkloadTable

from .conftest import WORKLOADS
from .helpers import cell, row_keys, show, text_of, wait_until

FOREIGN = "/home/ray/ray_results/asynchyperband_test"
FOREIGN_ROW = Workload(
    kind=KIND_EXPERIMENT, key=FOREIGN, name="asynchyperband_test", origin=ORIGIN_RAY_JOB,
    origin_label="Ray job raysubmit_hb01: python -m ray.tune.examples.async_hyperband_example",
    status="FINISHED", live=False, summary="20 trials: 20 terminated", job_id="06000000",
    submission_id="raysubmit_hb01",
)  # fmt: skip


def with_foreign(placement):
    """``placement`` and a finished Tune experiment raytop did not launch (a Ray job's)."""
    foreign = replace(placement.experiments[0], name="asynchyperband_test", path=FOREIGN,
                      runs=(), trials=placement.experiments[0].trials[:1])  # fmt: skip
    return replace(placement, experiments=(*placement.experiments, foreign),
                   workloads=(*WORKLOADS, FOREIGN_ROW))  # fmt: skip


async def test_plain_raytop_lists_every_run_live_first_with_where_it_comes_from(
    make_app, placement
):
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, with_foreign(placement))
        table = app.screen.query_one(WorkloadTable)
        assert table.display
        assert row_keys(table) == [f"{w.kind}:{w.key}" for w in (*WORKLOADS, FOREIGN_ROW)]
        assert table.styles.height.value == 1 + rows_for(30) == 7  # header and six rows
        job = "job:02000000"
        assert [cell(table, job, c) for c in ("status", "doing", "holds")] == [
            "ENDED", "driver exited · driver pid 88010", "2 CPU"
        ]  # fmt: skip
        assert cell(table, "job:05000000", "holds") == "+1 waiting"
        assert cell(table, "train_run:actor-c0ffee", "origin").startswith("Ray job raysubmit_7Kq2")
        assert app.focused is app.screen.query_one(TrialTable)  # the trials keep the keys


async def test_enter_on_a_row_shows_that_experiment_or_opens_that_runs_ranks(make_app, placement):
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, with_foreign(placement))
        table = app.screen.query_one(WorkloadTable)
        table.focus()
        table.move_cursor(row=row_keys(table).index(f"experiment:{FOREIGN}"))
        await pilot.press("enter")
        await pilot.pause()
        assert "asynchyperband_test" in str(app.screen.query_one(ExperimentHeader).render())
        assert app.focused is app.screen.query_one(TrialTable)
        table.focus()
        table.move_cursor(row=row_keys(table).index("train_run:actor-c0ffee"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.run_id == "actor-c0ffee"


async def test_enter_on_a_jobs_row_says_what_it_is(make_app, placement):
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, placement)
        table = app.screen.query_one(WorkloadTable)
        table.focus()
        table.move_cursor(row=row_keys(table).index("job:02000000"))
        await pilot.press("enter")
        await pilot.pause()
        (said,) = [str(n.message) for n in app._notifications]
        assert said == "job job 02000000: ENDED (driver exited); driver script: python old_sweep.py"


async def test_the_list_is_hidden_when_only_the_shown_experiment_runs(make_app, sweep):
    app = make_app()
    own = Workload(kind=KIND_EXPERIMENT, key=sweep.experiments[0].path, name="x",
                   origin="raytop", origin_label="raytop", status="RUNNING", live=True)  # fmt: skip
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, replace(sweep, workloads=(own,)))
        assert not app.screen.query_one(WorkloadTable).display
        assert not app.screen.query_one("#others-line").display


async def test_raytop_run_keeps_its_experiment_first_and_the_rest_one_line_away(
    make_app, placement
):
    app = make_app(own_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, placement)
        assert not app.screen.query_one(WorkloadTable).display
        assert text_of(app, "#others-line") == (
            "4 other runs (3 live) hold 2 CPU, 1 waiting to place · n: every run"
        )
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.pause()
        every = app.screen.query_one(WorkloadTable)
        assert row_keys(every)[0] == "experiment:/home/ray/ray_results/exp"
        assert len(row_keys(every)) == len(WORKLOADS)
        assert text_of(app, "#workloads-summary") == "runs on the cluster: 5, 4 live"


def test_others_line_counts_holdings_and_says_one_run_in_the_singular():
    exp, plain, _, tpu, old = WORKLOADS
    assert others_line((exp,), frozenset({exp.key})) is None
    assert others_line((exp, old), frozenset({exp.key})) == "1 other run holds 2 CPU"
    assert others_line((exp, plain, tpu), frozenset({exp.key})) == (
        "2 other runs, 1 waiting to place"
    )
    gpu = replace(plain, gpu=0.5, cpu=1.0)
    assert others_line((gpu, old), frozenset()) == "2 other runs (1 live) hold 3 CPU, 0.5 GPU"


async def test_an_experiment_raytop_did_not_launch_is_never_stopped(make_app, placement):
    """Its driver runs (its job does), but raytop signals only drivers it launched: ``x``
    and ``t`` say who can stop it, and no control is called."""
    from .test_stop import FakeControls

    controls = FakeControls()
    app = make_app(controls=controls)
    snapshot = with_foreign(placement)
    foreign = replace(snapshot.experiments[1], driver_alive=True)
    snapshot = replace(snapshot, experiments=(snapshot.experiments[0], foreign))
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, snapshot)
        await pilot.press("e")  # the next experiment: the foreign one
        await pilot.pause()
        assert "x" in app.screen.active_bindings
        await pilot.press("x", "t")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert (
            said
            == [
                "asynchyperband_test was not launched by raytop (Ray job raysubmit_hb01: python "
                "-m ray.tune.examples.async_hyperband_example): `ray job stop raysubmit_hb01` "
                "stops it"
            ]
            * 2
        )
        assert not isinstance(app.screen, ConfirmModal) and controls.calls == []


async def test_h_reads_the_older_experiment_folders_once_asked(make_app, placement):
    """Tune's default storage holds folders left unread (only live and recent ones are
    read at first): ``h`` asks the collector to read them all, once."""
    from raytop.model.workloads import OlderExperiments

    from .conftest import FakeCollector

    class Collector(FakeCollector):
        shown_all = False

        def show_all_experiments(self, on: bool = True) -> None:
            self.shown_all = on

    older = replace(placement, older_experiments=(OlderExperiments("/home/ray/ray_results", 240),))
    collector = Collector(older)
    app = make_app(collector=collector)
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, older)
        assert "h" in app.screen.active_bindings
        await pilot.press("h")
        await pilot.pause()
        assert collector.shown_all
        assert [str(n.message) for n in app._notifications] == [
            "reading 240 older experiment folder(s)…"
        ]
        assert "h" not in app.screen.active_bindings
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, placement)  # nothing left unread: no h
        assert "h" not in app.screen.active_bindings
