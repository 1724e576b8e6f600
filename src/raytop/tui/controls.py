"""What the TUI may ask of the run, injected by whoever starts the app: graceful stops,
and the resume of an experiment that raytop launched.

The TUI never imports ray nor ``raytop.launch``; the CLI passes an object with these
methods as ``RaytopApp(..., controls=...)`` (``launch.control.ExperimentControls``). No
implementation lives here.
"""

from __future__ import annotations

from typing import Protocol

from raytop.model import Experiment
from raytop.model.resume import ResumePreview, StoredExperiment


class StopControls(Protocol):
    """Graceful stops. Both are called from a background thread, never the UI thread:
    they may block for seconds. On failure they raise any ``Exception`` whose ``str`` is
    a one-line message for the user (e.g. ``launch.control.ControlError``)."""

    def stop_experiment(self, experiment: Experiment) -> None:
        """Ask the experiment's driver to save its state and exit (it stays resumable).

        Return once the stop is asked for (waiting for the driver to exit is optional:
        the snapshots show it go); raise if it could not be asked. Deletes nothing."""
        ...

    def stop_trial(self, experiment: Experiment, trial_id: str) -> None:
        """Ask the experiment's driver to stop ``trial_id`` at its next result.

        Return once the request is recorded; raise if it could not be. Its checkpoints
        are kept."""
        ...


class ResumeControls(Protocol):
    """The Resume screen's reads and its one write. All three are called from a
    background thread, never the UI thread: they read storage, and ``resume`` starts a
    cluster and a driver. On failure they raise any ``Exception`` whose ``str`` is a
    one-line message for the user."""

    def experiments_under(self, storage_path: str) -> list[StoredExperiment]:
        """The experiments in ``storage_path`` (or it itself, if it is one), newest
        first. Reads only; raises e.g. "…: no such folder"."""
        ...

    def resume_preview(self, experiment_path: str, errored: str) -> ResumePreview:
        """What resuming would do to each trial, with ``errored`` one of
        ``diagnose.resume.ERRORED_CHOICES``. Reads only; raises when raytop cannot resume
        it at all (still running, not launched by raytop, no experiment there)."""
        ...

    def resume(self, experiment_path: str, errored: str) -> str:
        """Launch a detached driver running ``Tuner.restore`` with the spec saved at
        launch; return a one-line message for the user (which driver runs it). May block
        for seconds. Deletes nothing."""
        ...


class Controls(StopControls, ResumeControls, Protocol):
    """Everything the app may be given: the stops and the resume."""
