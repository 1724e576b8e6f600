"""The overview's stops: ``x`` the shown experiment, ``t`` the highlighted trial,
gracefully, after a confirmation, through the injected ``StopControls`` (in a daemon
thread, by ``background.run_in_background``: they block). Read-only, or without
controls, the keys only say why they do nothing.

A mixin of ``OverviewScreen``: it asks the screen for the experiment on view
(``_experiment``) and the highlighted trial (``_highlighted_trial``), and keeps what is
in flight (``_stopping``) so one stop is not sent twice. An experiment raytop did not
launch (its row of the one list says so) is never stopped: the keys say who can.
"""

from __future__ import annotations

from textual.binding import Binding

from raytop.model import Experiment, Trial
from raytop.model.format import one_line
from raytop.model.workloads import ORIGIN_RAYTOP
from raytop.tui.background import run_in_background
from raytop.tui.controls import Controls, StopControls
from raytop.tui.messages import StopDone, StopFailed
from raytop.tui.screens.confirm import ConfirmModal

STOP_IDS = frozenset({"raytop.stop-experiment", "raytop.stop-trial"})
STOP_GROUP = Binding.Group("stop")  # the footer says "x t stop"; help names each
READ_ONLY = "read-only: stopping is disabled"
NO_CONTROLS = "no controls in this session: stopping is disabled"
STOP_BINDINGS = [
    Binding(
        "x",
        "stop_experiment",
        "stop experiment",
        id="raytop.stop-experiment",
        group=STOP_GROUP,
        tooltip="Ask the driver to save the state and exit (resumable), after a yes.",
    ),
    Binding(
        "t",
        "stop_trial",
        "stop trial",
        id="raytop.stop-trial",
        group=STOP_GROUP,
        tooltip="Stop the highlighted trial at its next result, after a yes.",
    ),
]


class StopActions:
    """``x`` and ``t``, for a screen that shows one experiment and its trials."""

    _controls: Controls | None
    _stopping: set[str]
    _stop_refusal: str | None

    def _experiment(self) -> Experiment | None:
        raise NotImplementedError

    def _highlighted_trial(self) -> Trial | None:
        raise NotImplementedError

    def _not_ours(self, experiment: Experiment) -> str | None:
        """Why raytop does not stop ``experiment``: another owner's run (its row of the one
        list says where it comes from). raytop signals only drivers it launched."""
        body = self._state.body  # type: ignore[attr-defined]
        row = next((w for w in body.workloads if w.key == experiment.path), None) if body else None
        if row is None or row.origin == ORIGIN_RAYTOP:
            return None
        how = f"`ray job stop {row.submission_id}`" if row.submission_id else "its owner"
        return f"{experiment.name} was not launched by raytop ({row.origin_label}): {how} stops it"

    def _stop_offered(self, action: str) -> bool:
        """Stops: always listed when they cannot work (pressing says why); otherwise only
        offered while the experiment's driver runs (and, for a trial, while it runs)."""
        if self._stop_refusal is not None:
            return True
        experiment = self._experiment()
        if experiment is None or experiment.driver_alive is not True:
            return False
        if self._not_ours(experiment) is not None:
            return True  # listed: pressing says who can stop it
        if action == "stop_trial":
            trial = self._highlighted_trial()
            return trial is not None and not trial.ended
        return True

    def action_stop_experiment(self) -> None:
        experiment = self._experiment()
        if self._refused() or experiment is None or self._refused_not_ours(experiment):
            return
        question = (
            f"Stop experiment {experiment.name}? Its driver saves the state and exits; "
            f"`raytop resume {experiment.path}` continues it. Nothing is deleted."
        )
        self._confirm_stop(question, f"experiment {experiment.name}", experiment, None)

    def action_stop_trial(self) -> None:
        experiment = self._experiment()
        trial = self._highlighted_trial()
        if self._refused() or experiment is None or trial is None:
            return
        if self._refused_not_ours(experiment):
            return
        question = f"Stop trial {trial.trial_id} at its next result? Its checkpoints are kept."
        self._confirm_stop(question, f"trial {trial.trial_id}", experiment, trial.trial_id)

    def _refused(self) -> bool:
        if self._stop_refusal is None:
            return False
        self.notify(self._stop_refusal, severity="warning")
        return True

    def _refused_not_ours(self, experiment: Experiment) -> bool:
        why = self._not_ours(experiment)
        if why is not None:
            self.notify(why, severity="warning", markup=False)
        return why is not None

    def _confirm_stop(
        self, question: str, target: str, experiment: Experiment, trial_id: str | None
    ) -> None:
        """Ask first; on yes, run the control in a daemon thread (it may block)."""

        def answered(yes: bool | None) -> None:
            if not yes or self._controls is None:
                return
            if target in self._stopping:
                self.notify(f"already stopping {target}…")
                return
            self._stopping.add(target)
            self.notify(f"stopping {target}…", markup=False)
            controls = self._controls
            run_in_background(
                self,
                lambda: self._run_stop(controls, target, experiment, trial_id),
                lambda exc: StopFailed(target, one_line(exc)),
                name="raytop-stop",
            )

        self.app.push_screen(ConfirmModal(question, title=f"stop {target}", yes="stop"), answered)

    @staticmethod
    def _run_stop(
        controls: StopControls, target: str, experiment: Experiment, trial_id: str | None
    ) -> StopDone:
        """Runs in a background thread: the one blocking call, then what to tell the user."""
        if trial_id is None:
            controls.stop_experiment(experiment)
            return StopDone(
                target,
                f"{target}: stop sent; its driver saves the state and exits, "
                f"`raytop resume {experiment.path}` continues it",
            )
        controls.stop_trial(experiment, trial_id)
        return StopDone(
            target, f"{target}: stop sent; it stops at its next result, checkpoints kept"
        )

    def on_stop_done(self, message: StopDone) -> None:
        self._stopping.discard(message.target)
        self.notify(message.message, title="stop", markup=False)

    def on_stop_failed(self, message: StopFailed) -> None:
        self._stopping.discard(message.target)
        # The error is the control's text, not markup ("[Errno 3] …" must print as is).
        self.notify(
            message.error, title=f"could not stop {message.target}", severity="error", markup=False
        )
