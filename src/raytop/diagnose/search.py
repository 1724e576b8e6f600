"""Before launch: a sweep that looks like tuning but cannot adapt
(docs/RAY_FACTS.md#grid-random-search-does-not-adapt).

Grid/random search (Tune's default ``BasicVariantGenerator``) draws every configuration
independently of the results; only a searcher (Optuna, HyperOpt, BayesOpt …) uses the
metric to choose the next one, and only a trial scheduler (ASHA, median stopping, PBT)
uses it to stop or pause trials part way. A spec that names a metric and draws many
random samples from ranges, with neither, spends the whole budget on every sample: the
metric only ranks the trials afterwards. That is often what the user wants (a baseline,
or a study of the space), so this is an ``info``, and it fires only on the signals that
suggest otherwise:

* a metric and mode are set (the user ranks trials by something);
* at least ``MANY_SAMPLES`` samples are drawn at random from a range (``uniform``,
  ``loguniform``, ``randint``): a search of a continuous space, where adaptive methods
  pay off; a grid, or choices alone, enumerate what the user listed and stay quiet;
* the search is ``grid_random`` and the scheduler ``fifo``.

It is a pure function of a ``SweepIntent`` the launch floor builds from the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from raytop.model import Finding, Severity

MANY_SAMPLES = 8  # random draws from a range at or above which adaptation would pay off
RANGE_SAMPLERS = ("uniform", "loguniform", "randint")


@dataclass(frozen=True)
class SweepIntent:
    metric: str | None
    num_samples: int
    search: str  # [tune.search] kind
    scheduler: str  # [tune.scheduler] kind
    samplers: dict[str, str]  # [param_space] key -> sampler kind


def search_not_adaptive(intent: SweepIntent) -> Finding | None:
    """The ``search_not_adaptive`` info, or None (see the module's docstring for when)."""
    if intent.metric is None or intent.search != "grid_random" or intent.scheduler != "fifo":
        return None
    ranges = sorted(k for k, kind in intent.samplers.items() if kind in RANGE_SAMPLERS)
    if not ranges or intent.num_samples < MANY_SAMPLES:
        return None
    names = ", ".join(ranges)
    return Finding(
        kind="search_not_adaptive",
        severity=Severity.INFO,
        subject="[tune]",
        message=(
            f"{intent.num_samples} random samples of {names} are drawn without looking at "
            f"{intent.metric} (grid/random search does not adapt) and each runs to the end "
            '(no scheduler): [tune.search] kind = "optuna" or "hyperopt" picks samples '
            'from the results, [tune.scheduler] kind = "asha" stops poor trials early'
        ),
        evidence={"num_samples": intent.num_samples, "ranges": ranges, "metric": intent.metric},
    )
