"""What the TUI may ask of the run: a graceful stop, injected by whoever starts the app.

The TUI never imports ray nor ``raytop.launch``; the CLI passes an object with these two
methods as ``RaytopApp(..., controls=...)``. No implementation lives here.
"""

from __future__ import annotations

from typing import Protocol

from raytop.model import Experiment


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
