"""Why a Train run has no probe report, judged once from what the cluster shows.

Each reason needs positive evidence; what cannot be seen from here is said to be unknown,
with what would give the counts. The order:

1. The probe filed a problem for the run's job (it ran, and its hooks do not fit this Ray):
   that is the reason, whatever else holds.
2. Seen for less than ``bound_s``: the first report may still come (a probe reports within
   a second of its worker starting), so nothing is claimed yet.
3. The environment of the process that built the trainer, when raytop could read it (it
   runs on this node): ``RAY_TRAIN_CALLBACKS`` unset or naming other callbacks is the
   reason. The variable is read from the process's start-up environment: a script that
   sets it in ``os.environ`` itself gets the probe, and its reports, within the bound.
4. The probe is named there, yet no report came: the probe is silent.
5. Otherwise unknown (the trainer's process runs on another node).

A job that failed because Train could not import the probe has no run to carry a reason:
``model.no_probe.job_needs_probe`` words its end instead.

Pure (``diagnose`` floor).
"""

from __future__ import annotations

from raytop.model.format import fmt_duration
from raytop.model.no_probe import (
    CALLBACKS_ENV,
    CALLBACKS_UNSET,
    HOOKS_UNFIT,
    PROBE_CALLBACK,
    SILENT,
    UNKNOWN,
    WAITING,
    NoProbe,
    TrainerEnv,
    names_probe,
)

NO_PROBE_BOUND_S = 20.0  # a run seen this long with no report is judged
MAX_SHOWN = 200  # characters of another process's RAY_TRAIN_CALLBACKS shown
HOW = (f"per-rank counts need raytop installed where the workers run and "
       f"{CALLBACKS_ENV}={PROBE_CALLBACK} where the trainer is built")  # fmt: skip


def why_no_probe(
    env: TrainerEnv,
    *,
    ranks: int,
    waited_s: float,
    problem: str | None = None,
    problem_ray: str | None = None,
    bound_s: float = NO_PROBE_BOUND_S,
) -> NoProbe:
    """The reason a run of ``ranks`` live workers, seen for ``waited_s`` with no probe
    report, has none; ``problem``: what its job's probe filed (on Ray ``problem_ray``)."""
    if problem:
        on = f" on Ray {problem_ray}" if problem_ray else ""
        return NoProbe(
            HOOKS_UNFIT, f"raytop's probe is in this run but cannot count{on}: {problem}"
        )
    if waited_s < bound_s:
        return NoProbe(WAITING, f"no probe report yet (seen {fmt_duration(waited_s)}); {HOW}")
    if not env.read:
        where = f"whether {CALLBACKS_ENV} is set in {env.who} is not known here"
        return NoProbe(UNKNOWN, f"no probe report; {where}: {HOW}")
    value = (env.callbacks or "").strip()[:MAX_SHOWN]
    if not value:
        fix = f"set {CALLBACKS_ENV}={PROBE_CALLBACK} there"
        return NoProbe(CALLBACKS_UNSET, f"{CALLBACKS_ENV} is not set in {env.who}: {fix}")
    if not names_probe(env.callbacks):
        named = f"names {value}, not {PROBE_CALLBACK}"
        return NoProbe(CALLBACKS_UNSET, f"{CALLBACKS_ENV} in {env.who} {named}")
    silent = f"its {ranks} rank(s) sent no report in {fmt_duration(waited_s)}"
    named = f"{CALLBACKS_ENV} names raytop's probe in {env.who}"
    return NoProbe(SILENT, f"{named}, yet {silent}: is raytop installed where they run?")
