"""Trial schedulers that say why: Tune's ASHA, median stopping rule and PBT, recording
each STOP or PAUSE they decide, with the rule that made it, for the TrialProbe.

Tune calls the scheduler's ``on_trial_result`` and then, for the same result and in the
same driver process, the callbacks' ``on_trial_result``; callbacks never learn the
decision. Each scheduler here is a thin subclass of Ray's public class (so Tune's own
``isinstance`` checks still hold, and it pickles into ``tuner.pkl`` by reference): it
calls Ray's method unchanged, then files one line per trial in this process's
``decisions`` table, which the TrialProbe reads when it writes ``trials.json``. Recording
never changes a decision and never raises into Tune.

The numbers behind a decision (ASHA's rung cutoff, the median) are read through
``raytop.wire.tune_schedulers``; PBT's exploit is seen by wrapping its ``_exploit`` hook,
the one place Ray hands over the trial that is cloned (verified on Ray 2.58).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
    TrialScheduler,
)

from raytop.model.format import fmt_value
from raytop.probe.scheduler_decisions import decisions
from raytop.wire.tune_schedulers import asha_rung, median_comparison, pbt_quantile_fraction


def _when(time_attr: str, value: Any) -> str:
    if time_attr == "training_iteration":
        return f"iteration {fmt_value(value)}"
    return f"{time_attr} {fmt_value(value)}"


class _Recording:
    """The part every recording scheduler shares: ``explain_metric`` is the metric's name
    for the lines (the scheduler itself gets metric and mode from TuneConfig)."""

    _raytop_metric: str = "metric"
    _raytop_time_attr: str = "training_iteration"
    _raytop_paused: set[str] | None = None

    def _raytop_setup(self, metric: str | None, time_attr: str) -> None:
        self._raytop_metric = metric or "metric"
        self._raytop_time_attr = time_attr
        self._raytop_paused = set()

    def _raytop_time(self, result: dict[str, Any]) -> Any:
        return result.get(self._raytop_time_attr)

    def _raytop_note(self, trial_id: str, decision: str, line: str | None) -> None:
        """File ``line`` for a STOP or PAUSE; a CONTINUE after a plain pause clears it
        (the trial runs again); lines of other kinds (PBT's exploit) stay as history."""
        paused = self._raytop_paused if self._raytop_paused is not None else set()
        if decision in (TrialScheduler.STOP, TrialScheduler.PAUSE) and line is not None:
            decisions.record(trial_id, line)
            if decision == TrialScheduler.PAUSE:
                paused.add(trial_id)
            else:
                paused.discard(trial_id)
        elif decision == TrialScheduler.CONTINUE and trial_id in paused:
            paused.discard(trial_id)
            decisions.record(trial_id, None)
        self._raytop_paused = paused


class RecordingASHA(_Recording, AsyncHyperBandScheduler):
    """ASHA; a trial it stops below a rung's cutoff gets "stopped at iteration 4: …".
    Reaching ``max_t`` is the trial's full budget, not an early stop: nothing is filed."""

    def __init__(self, *, explain_metric: str | None = None, mode: str | None = None,
                 time_attr: str = "training_iteration", max_t: float = 100,
                 reduction_factor: float = 4, **options: Any) -> None:  # fmt: skip
        AsyncHyperBandScheduler.__init__(
            self, time_attr=time_attr, max_t=max_t, reduction_factor=reduction_factor, **options
        )
        self._raytop_setup(explain_metric, time_attr)
        self._raytop_mode = mode
        self._raytop_max_t = max_t
        self._raytop_factor = reduction_factor

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        now = self._raytop_time(result)
        rung = None
        try:
            if now is not None and now < self._raytop_max_t:
                rung = asha_rung(self, trial.trial_id, now)
        except Exception:
            rung = None
        decision = super().on_trial_result(tune_controller, trial, result)
        try:
            if decision == TrialScheduler.STOP and now is not None and now < self._raytop_max_t:
                self._raytop_note(trial.trial_id, decision, self._line(result, now, rung))
        except Exception:
            pass
        return decision

    def _line(self, result: dict[str, Any], now: Any, rung: Any) -> str:
        metric = self._raytop_metric
        head = f"stopped at {_when(self._raytop_time_attr, now)}"
        value = result.get(metric)
        keep = f"ASHA keeps the top 1/{fmt_value(self._raytop_factor)} at each rung"
        if rung is None or rung.cutoff is None:
            return f"{head}: {metric} {fmt_value(value)} below the rung's cutoff ({keep})"
        sign = -1.0 if self._raytop_mode == "min" else 1.0
        cutoff = sign * rung.cutoff  # back from ASHA's higher-is-better score
        side = "above" if self._raytop_mode == "min" else "below"
        return (
            f"{head}: {metric} {fmt_value(value)} {side} the cutoff {fmt_value(cutoff)} of the "
            f"rung at {fmt_value(rung.milestone)} ({keep})"
        )


class RecordingMedianStopping(_Recording, MedianStoppingRule):
    """The median stopping rule; a trial it stops gets "stopped at iteration 5: best
    score … worse than the median … of N other trials' running means"."""

    def __init__(self, *, explain_metric: str | None = None,
                 time_attr: str = "training_iteration", **options: Any) -> None:  # fmt: skip
        MedianStoppingRule.__init__(self, time_attr=time_attr, **options)
        self._raytop_setup(explain_metric, time_attr)
        self._raytop_min_samples = options.get("min_samples_required", 3)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        try:
            now = self._raytop_time(result)
            line = None
            if decision == TrialScheduler.STOP:
                line = self._stop_line(trial, now)
            elif decision == TrialScheduler.PAUSE:
                line = (
                    f"paused at {_when(self._raytop_time_attr, now)} to let waiting trials run "
                    f"(fewer than {self._raytop_min_samples} other trials to compare with)"
                )
            self._raytop_note(trial.trial_id, decision, line)
        except Exception:
            pass
        return decision

    def _stop_line(self, trial: Any, now: Any) -> str:
        head = f"stopped at {_when(self._raytop_time_attr, now)}"
        metric = self._raytop_metric
        seen = median_comparison(self, trial, now) if now is not None else None
        if seen is None:
            return f"{head}: best {metric} worse than the median of the other trials"
        return (
            f"{head}: best {metric} {fmt_value(seen.best)} worse than the median "
            f"{fmt_value(seen.median)} of {seen.others} other trials' running means"
        )


class RecordingPBT(_Recording, PopulationBasedTraining):
    """Population based training; a trial it pauses to exploit another gets "paused at
    iteration 4 to exploit trial X …" (kept after it runs on: the trial now carries X's
    weights), and a pause to time-share the population says so."""

    def __init__(self, *, explain_metric: str | None = None,
                 time_attr: str = "training_iteration", **options: Any) -> None:  # fmt: skip
        PopulationBasedTraining.__init__(self, time_attr=time_attr, **options)
        self._raytop_setup(explain_metric, time_attr)
        self._raytop_now: dict[str, Any] = {}

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        with contextlib.suppress(Exception):
            self._raytop_now[trial.trial_id] = self._raytop_time(result)
        decision = super().on_trial_result(tune_controller, trial, result)
        try:
            if decision == TrialScheduler.PAUSE:
                now = self._raytop_time(result)
                line = (
                    f"paused at {_when(self._raytop_time_attr, now)} to let pending trials run "
                    "(PBT time-shares the population)"
                )
                self._raytop_note(trial.trial_id, decision, line)
            elif decision == TrialScheduler.CONTINUE:
                self._raytop_note(trial.trial_id, decision, None)
        except Exception:
            pass
        return decision

    def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> Any:
        try:
            (self._raytop_paused or set()).discard(trial.trial_id)
            now = self._raytop_now.get(trial.trial_id)
            fraction = pbt_quantile_fraction(self)
            bottom = f"in the bottom {fraction:.0%} by {self._raytop_metric}; " if fraction else ""
            decisions.record(
                trial.trial_id,
                f"paused at {_when(self._raytop_time_attr, now)} to exploit trial "
                f"{trial_to_clone.trial_id} ({bottom}restarts from its checkpoint with a "
                "mutated config)",
            )
        except Exception:
            pass
        return super()._exploit(tune_controller, trial, trial_to_clone)
