"""SVG snapshots of the overview's dashboard and of the screens at 160×48, and of the
stalled overview in each built-in theme at 80×24 (frozen clock, recorded snapshots).

Regenerate deliberately with ``pytest tests/tui --snapshot-update``."""

from __future__ import annotations

import pytest

from raytop.tui.messages import SnapshotReady

from . import dashboard_data
from .test_snapshots import feed, resume_case, stacks_case
from .test_stop import FakeControls


def test_overview_worker_group_starting_80x24(snap_compare, make_app, sweep) -> None:
    """The phase while the worker group comes up: 1 of 2 ranks."""
    snapshot = dashboard_data.starting(sweep)
    app = make_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(snapshot)))


def test_overview_64_ranks_80x24(snap_compare, make_app, sweep) -> None:
    """64 ranks: the histogram of report counts and the two ranks behind, named."""
    snapshot = dashboard_data.many_ranks(sweep)
    app = make_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(snapshot)))


@pytest.mark.parametrize("keys", [(), ("enter",), ("p",)], ids=["overview", "run", "placement"])
def test_screens_160x48(snap_compare, make_app, checkpointed, keys) -> None:
    app = make_app()
    run_before = feed(SnapshotReady(checkpointed), keys=keys)
    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


@pytest.mark.parametrize(
    "theme", ["raytop-dark", "raytop-light", "raytop-high-contrast", "raytop-mono"]
)
def test_overview_stall_in_each_theme_80x24(snap_compare, make_app, stalled, theme) -> None:
    app = make_app(theme=theme)
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(stalled)))


def test_rank_160x48(snap_compare, make_app, with_stacks) -> None:
    """The missing rank with the stack its snapshot carries, beside its reports."""
    app = make_app()
    run_before = feed(SnapshotReady(with_stacks), keys=("enter", "down", "enter"))
    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_stacks_160x48(snap_compare, make_app, stalled, with_stacks) -> None:
    app, run_before = stacks_case(make_app, stalled, with_stacks)
    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_resume_160x48(snap_compare, make_app, sweep) -> None:
    app, run_before = resume_case(make_app, sweep)
    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_stacks_80x24(snap_compare, make_app, stalled, with_stacks) -> None:
    app, run_before = stacks_case(make_app, stalled, with_stacks)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_help_over_the_run_screen(snap_compare, make_app, stalled, size) -> None:
    """Every key of the Run screen with its sentence."""
    app = make_app()
    run_before = feed(SnapshotReady(stalled), keys=("enter", "question_mark"))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_stop_confirmation(snap_compare, make_app, sweep, size) -> None:
    """`x`: what a stop does and how to resume, before anything happens."""
    app = make_app(controls=FakeControls())
    assert snap_compare(app, terminal_size=size, run_before=feed(SnapshotReady(sweep), keys=("x",)))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_other_runs(snap_compare, make_app, placement, size) -> None:
    """Runs of no experiment: one with the probe, one known from the actor table only."""
    app = make_app()
    assert snap_compare(
        app, terminal_size=size, run_before=feed(SnapshotReady(placement), keys=("n",))
    )


@pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), (160, 48)], ids=["80x24", "100x30", "160x48"]
)
def test_every_run_on_the_overview(snap_compare, make_app, placement, size) -> None:
    """Plain ``raytop``: the one list of every run above the experiment, live first."""
    app = make_app()
    assert snap_compare(app, terminal_size=size, run_before=feed(SnapshotReady(placement)))


def test_raytop_run_says_the_other_runs_in_one_line_80x24(snap_compare, make_app, placement):
    """``raytop run``: its own experiment is the screen; the rest is one line, ``n`` away."""
    app = make_app(own_first=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(SnapshotReady(placement)))


def test_run_collective_hang_80x24(snap_compare, make_app, collective_hung) -> None:
    """Below the report level: rank 1 holds the all_reduce of ranks 0 and 2."""
    app = make_app()
    run_before = feed(SnapshotReady(collective_hung), keys=("enter",))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
