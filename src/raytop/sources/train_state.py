"""Train V2's own state of its runs, from Ray's dashboard: what raytop adds to a Train run
it did not start and whose workers have no probe.

The actor table says such a run exists (its controller and worker actors, with pids and
nodes). When its driver ran with ``RAY_TRAIN_ENABLE_STATE_TRACKING=1``, Train itself keeps
the run's name, attempts and workers' world ranks, and the dashboard serves them all in
one request (``wire.dashboard``). The collector asks only while the actor table has such a
run (``pipeline.uninstrumented`` calls ``runs()`` lazily: a refresh where every run is
probed, or none runs, costs nothing more), on its own thread, with a 1 s deadline, and at
most every ``CACHE_S``.

The answer is untrusted input (``model.untrusted_train_state``): one that is bad (wrong
shape, out of range, over its size cap) is a one-line warning naming the endpoint, and
the last good runs are kept. A dashboard that answers an error status (HTTP 500 while no
driver turned tracking on, 404 from a Ray without the route) or does not answer at all is
no fault: raytop shows what the actor table says, as without tracking. One that does not
answer is asked less and less often (``sources.dashboard_poll``), so a black-holed
address costs the 1 s deadline rarely; one that answers quickly is asked every period,
as a driver may turn tracking on at any time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from raytop.model import untrusted, untrusted_train_state
from raytop.model.train_state import StateRun
from raytop.sources.dashboard_poll import DashboardPoll
from raytop.wire.dashboard import DashboardUnreachable

CACHE_S = 3.0


class TrainRunsSource(Protocol):
    """``wire.dashboard.DashboardClient``, or a stand-in for it in tests."""

    train_runs_endpoint: str

    def train_runs(self) -> bytes: ...


class TrainState:
    """``runs()``: ``{controller actor id: StateRun}`` as of the last good answer (``{}``
    when the dashboard has none to give); ``warning`` says when the last answer was bad."""

    def __init__(
        self, client: TrainRunsSource, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._poll = DashboardPoll(CACHE_S, clock)
        self._runs: dict[str, StateRun] = {}
        self.warning: str | None = None  # the last answer was bad: its last good copy is kept

    def runs(self) -> dict[str, StateRun]:
        if self._poll.due():
            self._poll.asked(answered=self._fetch())
        return self._runs

    def _fetch(self) -> bool:
        """Ask once; whether anything answered (an error status is an answer)."""
        try:
            raw = self._client.train_runs()
            data = untrusted.parse(raw, untrusted_train_state.MAX_TRAIN_STATE_BYTES)
            runs = untrusted_train_state.train_runs(data)
        except DashboardUnreachable as exc:
            self._runs, self.warning = {}, None
            return exc.status is not None
        except ValueError as exc:  # Invalid, Refused, not JSON, not text
            self.warning = untrusted.problem(self._client.train_runs_endpoint, exc) + (
                "; Train runs without a probe are from its last good answer" if self._runs else ""
            )
            return True
        by_controller: dict[str, StateRun] = {}
        for run in runs:  # newest first: a controller listed twice keeps its newest run
            by_controller.setdefault(run.controller_actor_id, run)
        self._runs, self.warning = by_controller, None
        return True
