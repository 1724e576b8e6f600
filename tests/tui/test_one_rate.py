"""One rank, one rate: the overview's dashboard, the run screen's rank table and the rank
screen show the same report rate for the same rank, the pipeline's (``Worker.rate_per_min``).

They once differed: the dashboard divided a minute by the probe's interval, the table took
the mean over the rank's history. The ranks here have report times whose median, mean and
probe figure all differ, so any face computing its own rate again shows a different one.
"""

from __future__ import annotations

import re

import pytest

from raytop.model import TrainRun, Worker
from raytop.model.dashboard import rank_cells
from raytop.model.thresholds import Thresholds
from raytop.pipeline.derive import with_rank_states
from raytop.tui.widgets.rank_summary import describe_reports
from raytop.tui.widgets.run_dashboard import describe_rank_rows
from raytop.tui.widgets.worker_table import _CELLS

NOW = 1000.0


def _rank(rank: int, gaps: tuple[float, ...], probe_interval: float | None) -> Worker:
    times = [NOW - 30.0 - sum(gaps)]
    for gap in gaps:
        times.append(times[-1] + gap)
    return Worker(
        rank=rank, reports_entered=len(times), reports_exited=len(times),
        last_enter_at=times[-1], last_exit_at=times[-1] + 0.1, heartbeat_at=NOW - 0.5,
        usual_interval_s=probe_interval,
        report_times=tuple(times), report_exits=tuple(t + 0.1 for t in times),
    )  # fmt: skip


RANKS = (
    _rank(0, (2.0, 2.0, 2.0, 14.0), 9.0),  # median 2 s (30/m), mean 5 s, the probe 9 s
    _rank(1, (7.7, 8.2, 8.4, 9.6), 8.0),  # median 8.3 s (7.2/m), mean 8.475 s (7.1/m)
    _rank(2, (40.0, 400.0, 50.0), 45.0),  # median 50 s (1.2/m), mean 0.4/m, the probe 1.3/m
    _rank(3, (), 5.0),  # one report: no interval, no rate
)


@pytest.fixture
def run() -> TrainRun:
    return with_rank_states(TrainRun("r", "r", "a", len(RANKS), workers=RANKS), Thresholds(), NOW)


def test_the_dashboard_the_rank_table_and_the_rank_screen_show_one_rate(run) -> None:
    rows = [line.plain for line in describe_rank_rows(rank_cells(run, NOW), "█", False)][1:]
    assert len(rows) == len(run.workers)
    for worker, row in zip(run.workers, rows, strict=True):
        table = _CELLS["rate"](worker, NOW)[1]
        dashboard = row.split()[-2]  # … last rep, rate, state: "/m" is in the header
        dashboard += "/m" if dashboard != "-" else ""
        screen = re.search(r"rate (\S+)", describe_reports(worker, NOW).plain).group(1)
        assert dashboard == table == screen, f"rank {worker.rank}"
    assert [_CELLS["rate"](w, NOW)[1] for w in run.workers] == ["30/m", "7.2/m", "1.2/m", "-"]


def test_the_rate_is_one_minute_over_the_interval_every_face_shows(run) -> None:
    for worker in run.workers:
        screen = describe_reports(worker, NOW).plain
        if worker.usual_interval_s is None:
            assert worker.rate_per_min is None and "usual interval -" in screen
            continue
        assert worker.rate_per_min == pytest.approx(60.0 / worker.usual_interval_s)
