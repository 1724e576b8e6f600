"""Shared fixtures for the TUI tests: realistic snapshots and a scripted collector."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from raytop.model import (
    Cluster,
    Experiment,
    ExperimentStatus,
    Finding,
    Node,
    Severity,
    Snapshot,
    Trial,
)
from raytop.tui.app import RaytopApp

NOW = 1_767_225_600.0  # a fixed "wall clock" for every test


class FakeCollector:
    """Returns (or raises) the prepared steps in order, then repeats the last one."""

    def __init__(self, *steps: Snapshot | Exception) -> None:
        self.steps = list(steps)
        self.calls = 0

    def collect(self) -> Snapshot:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, Exception):
            raise step
        return step


def _cluster() -> Cluster:
    head = Node(
        node_id="a3f9c2d1e0b4",
        address="10.42.0.17",
        alive=True,
        is_head=True,
        resources_total={"CPU": 4.0, "memory": 8.0e9},
        resources_available={"CPU": 2.0, "memory": 6.5e9},
    )
    return Cluster(address="10.42.0.17:6379", connected=True, ray_version="2.58.1", nodes=(head,))


def _trials() -> tuple[Trial, ...]:
    return (
        Trial(
            "7d2a1_00000",
            "RUNNING",
            config={"lr": 0.01, "hidden": 64},
            metrics={"loss": 0.4213, "training_iteration": 12},
            iterations=12,
            elapsed_s=95.3,
        ),
        Trial(
            "7d2a1_00001",
            "RUNNING",
            config={"lr": 0.001, "hidden": 128},
            metrics={"loss": 0.6871, "training_iteration": 9},
            iterations=9,
            elapsed_s=88.0,
        ),
        Trial("7d2a1_00002", "PENDING", config={"lr": 0.0001, "hidden": 32}),
        Trial(
            "7d2a1_00003",
            "TERMINATED",
            config={"lr": 0.1, "hidden": 256},
            metrics={"loss": 0.2954, "training_iteration": 20},
            iterations=20,
            elapsed_s=201.7,
        ),
        Trial(
            "7d2a1_00004",
            "ERROR",
            config={"lr": 0.5, "hidden": 64},
            metrics={"loss": 3.912, "training_iteration": 3},
            num_failures=1,
            iterations=3,
            elapsed_s=31.2,
            error="ValueError: loss became NaN",
        ),
    )


@pytest.fixture
def sweep() -> Snapshot:
    """The torch_sweep experiment mid-run on a one-node cluster, with one finding."""
    experiment = Experiment(
        name="torch_sweep",
        path="/home/ray/ray_results/torch_sweep",
        status=ExperimentStatus.RUNNING,
        metric="loss",
        mode="min",
        trials=_trials(),
        driver_pid=4242,
        driver_alive=True,
    )
    finding = Finding(
        kind="trial_error",
        severity=Severity.ERROR,
        subject="trial 7d2a1_00004",
        message="ValueError: loss became NaN (1 failure)",
    )
    return Snapshot(
        taken_at=NOW - 2, cluster=_cluster(), experiments=(experiment,), findings=(finding,)
    )


@pytest.fixture
def disconnected(sweep: Snapshot) -> Snapshot:
    """What a collector returns once the GCS stops answering: no nodes, no experiments."""
    cluster = Cluster(
        address="10.42.0.17:6379", connected=False, error="GCS at 10.42.0.17:6379 unreachable"
    )
    return Snapshot(taken_at=NOW - 1, cluster=cluster)


@pytest.fixture
def next_tick(sweep: Snapshot) -> Callable[..., Snapshot]:
    """Builds the following snapshot: given trials replace theirs by id, ``drop`` removes."""

    def build(*changed: Trial, drop: tuple[str, ...] = ()) -> Snapshot:
        experiment = sweep.experiments[0]
        by_id = {t.trial_id: t for t in changed}
        trials = tuple(
            by_id.get(t.trial_id, t) for t in experiment.trials if t.trial_id not in drop
        )
        return replace(
            sweep,
            taken_at=sweep.taken_at + 1,
            experiments=(replace(experiment, trials=trials),),
        )

    return build


@pytest.fixture
def make_app() -> Callable[..., RaytopApp]:
    """An app with a frozen clock; ``autostart=False`` unless a test asks for polling."""

    def factory(*steps: Snapshot | Exception, **kwargs: object) -> RaytopApp:
        kwargs.setdefault("autostart", False)
        app = RaytopApp(FakeCollector(*steps), **kwargs)
        app.clock = lambda: NOW
        return app

    return factory
