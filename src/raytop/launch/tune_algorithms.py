"""The ``[tune.scheduler]`` and ``[tune.search]`` of a spec as Tune objects, in the driver.

Schedulers are ``probe.scheduler_probe``'s recording subclasses of Ray's, so the trials
table can say why a trial stopped or paused; they take metric and mode from
``TuneConfig`` (Tune refuses a scheduler that has its own). Ray and the searchers'
packages are imported only here, lazily: the spec was checked without them.
"""

from __future__ import annotations

from typing import Any

from raytop.launch.spec import RunSpec


def _mutation(kind: str, values: tuple[Any, ...]) -> Any:
    # heavy: Ray Tune (seconds); this module stays importable without Ray
    from ray import tune

    if kind == "choice":
        return list(values)
    return {"uniform": tune.uniform, "loguniform": tune.loguniform, "randint": tune.randint}[kind](
        *values
    )


def build_scheduler(spec: RunSpec) -> Any | None:
    """The trial scheduler, or ``None`` for ``fifo`` (Tune's default FIFOScheduler)."""
    section = spec.tune.scheduler
    if section.kind == "fifo":
        return None
    # heavy: Ray Tune's schedulers, only in the driver
    from raytop.probe.scheduler_probe import (
        RecordingASHA,
        RecordingMedianStopping,
        RecordingPBT,
    )

    options = dict(section.options)
    common = {"explain_metric": spec.tune.metric, "time_attr": section.time_attr}
    if section.kind == "asha":
        return RecordingASHA(mode=spec.tune.mode, **common, **options)
    if section.kind == "median_stopping":
        return RecordingMedianStopping(**common, **options)
    mutations = options.pop("hyperparam_mutations")
    options["hyperparam_mutations"] = {
        name: _mutation(kind, values) for name, (kind, values) in mutations.items()
    }
    return RecordingPBT(**common, **options)


def build_search(spec: RunSpec) -> Any | None:
    """The search algorithm, or ``None`` for Tune's default (grid/random search)."""
    section = spec.tune.search
    if section.kind == "grid_random":
        if section.max_concurrent is None:
            return None
        # heavy: Ray Tune, only in the driver
        from ray.tune.search import BasicVariantGenerator

        return BasicVariantGenerator(max_concurrent=section.max_concurrent)
    if section.kind == "optuna":
        # optional: optuna is no raytop dependency; only this search needs it
        from ray.tune.search.optuna import OptunaSearch

        searcher: Any = OptunaSearch()
    elif section.kind == "hyperopt":
        # optional: hyperopt is no raytop dependency; only this search needs it
        from ray.tune.search.hyperopt import HyperOptSearch

        searcher = HyperOptSearch()
    else:
        # optional: bayesian-optimization is no dependency; only this search needs it
        from ray.tune.search.bayesopt import BayesOptSearch

        searcher = BayesOptSearch()
    if section.max_concurrent is not None:
        # heavy: Ray Tune, only in the driver
        from ray.tune.search import ConcurrencyLimiter

        searcher = ConcurrencyLimiter(searcher, max_concurrent=section.max_concurrent)
    return searcher


def iteration_budget(spec: RunSpec) -> int | None:
    """The most results a trial reports, when the spec says: ``[tune] stop_iterations``,
    and ASHA's ``max_t`` when it counts iterations (the trials table's progress)."""
    limits = []
    if spec.tune.stop_iterations is not None:
        limits.append(spec.tune.stop_iterations)
    section = spec.tune.scheduler
    if section.kind == "asha" and section.time_attr == "training_iteration":
        limits.append(int(section.options.get("max_t", 100)))
    return min(limits) if limits else None
