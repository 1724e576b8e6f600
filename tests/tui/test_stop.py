"""Graceful stops from the overview: ``x`` (experiment) and ``t`` (trial), each after a
confirmation, run through injected controls in a background thread; read-only (or no
controls) only says why nothing happens."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace

import pytest

from raytop.model import Experiment, Snapshot
from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.screens.help import HelpScreen
from raytop.tui.screens.overview import OverviewScreen
from raytop.tui.widgets.trial_table import TrialTable

from .helpers import cursor_key, record_notifications, show, text_of, wait_until

EXPERIMENT_QUESTION = (
    "Stop experiment torch_sweep? Its driver saves the state and exits; "
    "`raytop resume /home/ray/ray_results/torch_sweep` continues it. Nothing is deleted."
)


class FakeControls:
    """Records every call (and its thread); raises ``error`` if given; blocks until
    ``release`` is set when ``block`` is."""

    def __init__(self, error: Exception | None = None, *, block: bool = False) -> None:
        self.error = error
        self.calls: list[tuple[object, ...]] = []
        self.threads: list[threading.Thread] = []
        self.release = threading.Event()
        if not block:
            self.release.set()

    def _record(self, *call: object) -> None:
        self.calls.append(call)
        self.threads.append(threading.current_thread())
        self.release.wait(5)
        if self.error is not None:
            raise self.error

    def stop_experiment(self, experiment: Experiment) -> None:
        self._record("experiment", experiment)

    def stop_trial(self, experiment: Experiment, trial_id: str) -> None:
        self._record("trial", experiment, trial_id)


def with_driver(snapshot: Snapshot, alive: bool | None) -> Snapshot:
    experiment = replace(snapshot.experiments[0], driver_alive=alive)
    return replace(snapshot, experiments=(experiment,))


def offered(app, key: str) -> bool:
    return key in app.screen.active_bindings


@pytest.mark.parametrize("yes", ["y", "enter"])
async def test_x_asks_then_stops_the_experiment_in_a_thread(make_app, sweep, yes) -> None:
    controls = FakeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmModal)
        assert text_of(app, "#confirm-question") == EXPERIMENT_QUESTION
        assert controls.calls == []  # nothing before the yes

        await pilot.press(yes)
        await wait_until(pilot, lambda: any("stop sent" in m for m, _ in seen))
        assert isinstance(app.screen, OverviewScreen)
        assert controls.calls == [("experiment", sweep.experiments[0])]
        assert controls.threads[0] is not threading.main_thread()
        assert controls.threads[0].daemon
        assert seen[0] == ("stopping experiment torch_sweep…", "information")
        assert "raytop resume /home/ray/ray_results/torch_sweep" in seen[-1][0]
        assert all(severity != "error" for _, severity in seen)


@pytest.mark.parametrize("no", ["n", "escape"])
async def test_no_or_escape_cancels(make_app, sweep, no) -> None:
    controls = FakeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        for key in ("x", "t"):
            await pilot.press(key)
            assert isinstance(app.screen, ConfirmModal)
            await pilot.press(no)
            assert isinstance(app.screen, OverviewScreen)
        for _ in range(5):
            await pilot.pause(0.02)
        assert controls.calls == []
        assert seen == []


async def test_t_names_the_highlighted_trial_and_stops_it(make_app, sweep) -> None:
    controls = FakeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("down")
        assert cursor_key(app.screen.query_one(TrialTable)) == "7d2a1_00001"
        await pilot.press("t")
        assert isinstance(app.screen, ConfirmModal)
        assert text_of(app, "#confirm-question") == (
            "Stop trial 7d2a1_00001 at its next result? Its checkpoints are kept."
        )
        await pilot.press("y")
        await wait_until(pilot, lambda: len(seen) == 2)
        assert controls.calls == [("trial", sweep.experiments[0], "7d2a1_00001")]
        assert controls.threads[0] is not threading.main_thread()
        assert seen[0] == ("stopping trial 7d2a1_00001…", "information")
        assert "next result" in seen[1][0]


async def test_a_failing_control_shows_its_message_as_an_error(make_app, sweep) -> None:
    controls = FakeControls(RuntimeError("torch_sweep: its driver is not running here"))
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("x", "y")
        await wait_until(pilot, lambda: any(s == "error" for _, s in seen))
        assert ("torch_sweep: its driver is not running here", "error") in seen
        assert app.is_running
        assert isinstance(app.screen, OverviewScreen)
        # Nothing left "in flight": the same stop can be asked again.
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("escape")
        assert len(controls.calls) == 1
    # The notification itself (not just the patched call) reached the app's list.
    assert any(
        n.message == "torch_sweep: its driver is not running here" and n.severity == "error"
        for n in app._notifications
    )


async def test_a_multi_line_error_is_shown_by_its_first_line(make_app, sweep) -> None:
    controls = FakeControls(OSError("[Errno 3] No such process\nTraceback …"))
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("t", "y")
        await wait_until(pilot, lambda: any(s == "error" for _, s in seen))
        assert ("[Errno 3] No such process", "error") in seen


async def test_a_blocking_control_does_not_block_the_ui(make_app, sweep) -> None:
    controls = FakeControls(block=True)
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        await pilot.press("x", "y")
        await wait_until(pilot, lambda: controls.calls)
        # The control is still blocked, and the UI answers keys.
        await pilot.press("down")
        assert cursor_key(app.screen.query_one(TrialTable)) == "7d2a1_00001"
        # A second stop of the same experiment while the first runs is not sent twice.
        await pilot.press("x", "y")
        assert ("already stopping experiment torch_sweep…", "information") in seen
        controls.release.set()
        await wait_until(pilot, lambda: any("stop sent" in m for m, _ in seen))
        assert len(controls.calls) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"read_only": True, "controls": FakeControls()}, "read-only: stopping is disabled"),
        ({}, "no controls in this session: stopping is disabled"),
    ],
)
async def test_read_only_or_no_controls_only_says_so(make_app, sweep, kwargs, message) -> None:
    app = make_app(**kwargs)
    controls = kwargs.get("controls")
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        seen = record_notifications(app)
        for key in ("x", "t"):
            assert offered(app, key)
            await pilot.press(key)
            assert isinstance(app.screen, OverviewScreen)  # no modal
        await pilot.pause()
        assert seen == [(message, "warning"), (message, "warning")]
        if controls is not None:
            assert controls.calls == []


@pytest.mark.parametrize("alive", [False, None])
async def test_keys_not_offered_without_a_live_driver(make_app, sweep, alive) -> None:
    controls = FakeControls()
    app = make_app(controls=controls)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, with_driver(sweep, alive))
        seen = record_notifications(app)
        assert not offered(app, "x")
        assert not offered(app, "t")
        await pilot.press("x", "t")
        assert isinstance(app.screen, OverviewScreen)
        assert seen == []
        # The driver comes back: the keys are offered again.
        await show(pilot, with_driver(sweep, True))
        assert offered(app, "x")
        assert offered(app, "t")
    assert controls.calls == []


async def test_no_stop_keys_before_any_experiment(make_app, sweep) -> None:
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, Snapshot(taken_at=sweep.taken_at, cluster=sweep.cluster))
        assert not offered(app, "x")
        assert not offered(app, "t")


async def test_stop_trial_not_offered_on_an_ended_trial(make_app, sweep) -> None:
    app = make_app(controls=FakeControls())
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        table = app.screen.query_one(TrialTable)
        assert offered(app, "t")
        await pilot.press("down", "down", "down")
        assert cursor_key(table) == "7d2a1_00003"  # TERMINATED
        await pilot.pause()
        assert not offered(app, "t")
        assert offered(app, "x")
        await pilot.press("t")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("down")  # ERROR: ended too
        assert not offered(app, "t")
        await pilot.press("up", "up", "up")  # PENDING: can be stopped
        assert offered(app, "t")


@pytest.mark.parametrize(
    ("kwargs", "suffix"),
    [
        ({"controls": FakeControls()}, ""),
        ({"read_only": True}, " (read-only)"),
        ({}, " (no controls)"),
    ],
)
async def test_the_footer_and_help_list_the_stop_keys(make_app, sweep, kwargs, suffix) -> None:
    app = make_app(**kwargs)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(pilot, sweep)
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"x", "t"} <= footer_keys
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = text_of(app, "#help-keys").splitlines()
        assert any(k.startswith(f"x  stop experiment{suffix}: ") for k in keys), keys
        assert any(k.startswith(f"t  stop trial{suffix}: ") for k in keys), keys
        about = text_of(app, "#help-about")
        assert "the Ray run keeps going" in about
        assert ("confirm a stop" in about) is (suffix == "")


def test_confirm_bindings_have_raytop_ids() -> None:
    assert all(b.id and b.id.startswith("raytop.") for b in ConfirmModal.BINDINGS)
    ids = {b.id for b in OverviewScreen.BINDINGS}
    assert {"raytop.stop-experiment", "raytop.stop-trial"} <= ids


def test_the_tui_imports_neither_ray_nor_launch() -> None:
    code = (
        "import sys, raytop.tui.app, raytop.tui.controls, raytop.tui.screens.confirm\n"
        "bad = [m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'raytop.launch'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
