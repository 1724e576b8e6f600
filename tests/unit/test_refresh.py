"""One ``--refresh`` for every face: one default, and one pacing rule for the TUI's poller
and ``run --no-tui``'s follow loop."""

from __future__ import annotations

import inspect
import types

import pytest

from raytop.faces import text
from raytop.faces.options import GROUP_OPTIONS
from raytop.model import Cluster, Experiment, ExperimentStatus, Snapshot, Trial
from raytop.model.refresh import DEFAULT_REFRESH_S, paced_delay
from raytop.tui.app import RaytopApp


def test_the_option_and_the_tui_share_one_default() -> None:
    tui_default = inspect.signature(RaytopApp).parameters["refresh_s"].default
    assert GROUP_OPTIONS["refresh_s"] == tui_default == DEFAULT_REFRESH_S


def experiment_snapshot(status: ExperimentStatus) -> Snapshot:
    trial_status = "RUNNING" if status == ExperimentStatus.RUNNING else "TERMINATED"
    experiment = Experiment(
        name="sweep", path="/x/sweep", status=status,
        trials=(Trial(trial_id="a_00000", status=trial_status),),
    )  # fmt: skip
    return Snapshot(
        taken_at=0.0, cluster=Cluster(address="a", connected=True), experiments=(experiment,)
    )


class SlowCollector:
    """Two polls of a running experiment, then it has ended; each collect takes
    ``took_s`` on the fake clock."""

    def __init__(self, clock: list[float], took_s: float) -> None:
        self.clock, self.took_s = clock, took_s
        self.answers = [ExperimentStatus.RUNNING] * 2 + [ExperimentStatus.FINISHED]

    def collect(self) -> Snapshot:
        self.clock[0] += self.took_s
        return experiment_snapshot(self.answers.pop(0))


@pytest.mark.parametrize(("took_s", "waits"), [(0.1, 0.25), (2.0, 2.0)])
def test_follow_waits_like_the_tui(tmp_path, monkeypatch, took_s, waits) -> None:
    """Never sooner than the last collect took: a slow cluster is not asked twice as often
    by ``--no-tui`` as by the TUI (``paced_delay`` is the TUI poller's rule)."""
    clock, slept = [100.0], []
    fake_time = types.SimpleNamespace(
        monotonic=lambda: clock[0], sleep=slept.append, strftime=lambda _fmt: "12:00:00"
    )
    monkeypatch.setattr(text, "time", fake_time)
    log = tmp_path / "driver.log"
    log.write_text("done\n")
    assert text.follow(SlowCollector(clock, took_s), 0.25, log) is True
    assert slept == [waits, waits]
    assert slept[0] == paced_delay(0.25, took_s)[0]
