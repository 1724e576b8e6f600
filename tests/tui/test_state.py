"""The pure rules behind "keep the last good data while disconnected"."""

from __future__ import annotations

from dataclasses import replace

from raytop.tui.state import ViewState


def test_connected_snapshot_clears_the_problem(sweep) -> None:
    state = ViewState().with_failure("boom", 1).with_snapshot(sweep)
    assert state.problem is None
    assert state.cluster is sweep.cluster
    assert state.body is sweep


def test_failure_counts_attempts_and_keeps_everything(sweep) -> None:
    state = ViewState().with_snapshot(sweep)
    assert state.with_failure("boom", 1).problem == "boom"
    failed = state.with_failure("boom", 4)
    assert failed.problem == "boom (4 attempts)"
    assert failed.latest is sweep
    assert failed.body is sweep


def test_disconnected_snapshot_keeps_last_cluster_and_experiments(sweep, disconnected) -> None:
    state = ViewState().with_snapshot(sweep).with_snapshot(disconnected)
    assert state.problem == "GCS at 10.42.0.17:6379 unreachable"
    assert state.latest is disconnected
    assert state.cluster is sweep.cluster
    assert state.body is sweep


def test_disconnected_before_any_connection_shows_what_there_is(disconnected) -> None:
    state = ViewState().with_snapshot(disconnected)
    assert state.cluster is disconnected.cluster
    assert state.body is disconnected


def test_cluster_error_missing_still_names_a_problem(sweep) -> None:
    lost = replace(sweep, cluster=replace(sweep.cluster, connected=False, error=None))
    assert ViewState().with_snapshot(lost).problem == "cluster unreachable"
