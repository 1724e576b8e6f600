"""``[tune.scheduler]`` and ``[tune.search]``: who stops or pauses trials, who picks them.

A trial scheduler (ASHA, the median stopping rule, PBT) reads each trial's intermediate
results and stops, pauses or continues it; a searcher chooses the next configurations.
Grid/random search (Tune's ``BasicVariantGenerator``) does not adapt to earlier results.
Pure, like the rest of the spec: a searcher's package is looked up with
``importlib.util.find_spec`` (nothing is imported) so a missing one is one line naming
the package to install, before anything starts.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

from raytop.launch.spec_values import (
    SpecFile,
    described,
    did_you_mean,
    integer,
    is_int,
    is_number,
    one_of,
    ordered_bounds,
    shown,
    string,
)

SCHEDULER_KINDS = ("fifo", "asha", "median_stopping", "pbt")
SEARCH_KINDS = ("grid_random", "optuna", "hyperopt", "bayesopt")
DEFAULT_TIME_ATTR = "training_iteration"
# The keys each scheduler kind takes (besides kind and time_attr).
SCHEDULER_KEYS: dict[str, tuple[str, ...]] = {
    "fifo": (),
    "asha": ("max_t", "grace_period", "reduction_factor", "brackets"),
    "median_stopping": ("grace_period", "min_samples_required"),
    "pbt": ("perturbation_interval", "hyperparam_mutations", "burn_in_period", "quantile_fraction"),
}
SEARCH_KEYS = ("kind", "max_concurrent")
# kind -> (the module Tune's searcher imports, the package that provides it).
SEARCH_PACKAGES: dict[str, tuple[str, str]] = {
    "optuna": ("optuna", "optuna"),
    "hyperopt": ("hyperopt", "hyperopt"),
    "bayesopt": ("bayes_opt", "bayesian-optimization"),
}
# The [param_space] samplers each searcher can take (constants always can). Grid values
# are grid_random's: the model-based searchers refuse tune.grid_search; BayesOpt takes
# only uniform float ranges (Ray drops any other sampling, or refuses the type).
SEARCH_SAMPLERS: dict[str, tuple[str, ...]] = {
    "optuna": ("choice", "uniform", "loguniform", "randint"),
    "hyperopt": ("choice", "uniform", "loguniform", "randint"),
    "bayesopt": ("uniform",),
}
# The forms a PBT mutation takes: an array of values, or one range/choice table.
MUTATION_KINDS = ("choice", "uniform", "loguniform", "randint")


@dataclass(frozen=True)
class SchedulerSection:
    """``[tune.scheduler]``: ``options`` holds the keys given for ``kind`` (validated),
    passed through to Tune's scheduler; ``hyperparam_mutations`` (PBT) maps a param to
    ``("values", (…))`` or ``(sampler kind, (low, high))``."""

    kind: str = "fifo"
    time_attr: str = DEFAULT_TIME_ATTR
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def adaptive(self) -> bool:
        return self.kind != "fifo"


@dataclass(frozen=True)
class SearchSection:
    kind: str = "grid_random"
    max_concurrent: int | None = None


def _table(ctx: SpecFile, where: str, raw: Any, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        ctx.fail(where, f"expected a table, got {described(raw)}")
    for key in raw:
        if key not in known:
            hint = did_you_mean(key, known) or f" (known keys: {', '.join(known)})"
            ctx.fail(f"{where} {key}", "unknown key" + hint)
    return raw


def _positive(ctx: SpecFile, where: str, value: Any, whole: bool) -> int | float:
    """An integer >= 1 when ``whole`` (the time unit is iterations), else a number > 0."""
    if whole:
        return integer(ctx, where, value, 1)
    if not is_number(value) or value <= 0:
        ctx.fail(where, f"expected a number > 0, got {described(value)}")
    return value


def parse_scheduler(
    ctx: SpecFile, raw: Any, metric: str | None, param_keys: tuple[str, ...]
) -> SchedulerSection:
    where = "[tune.scheduler]"
    if raw is None:
        return SchedulerSection()
    if not isinstance(raw, dict):
        ctx.fail(where, f"expected a table, got {described(raw)}")
    kind = one_of(ctx, f"{where} kind", raw.get("kind", "fifo"), SCHEDULER_KINDS)
    known = ("kind", "time_attr", *SCHEDULER_KEYS[kind])
    for key in raw:
        if key in known:
            continue
        owners = [k for k, keys in SCHEDULER_KEYS.items() if key in keys]
        if owners:
            ctx.fail(f"{where} {key}", f"not a key of kind = {kind!r} (it is {owners[0]!r}'s)")
        hint = did_you_mean(key, known) or f" (known keys for {kind!r}: {', '.join(known)})"
        ctx.fail(f"{where} {key}", "unknown key" + hint)
    if kind != "fifo" and metric is None:
        ctx.fail(
            "[tune] metric",
            f"missing; [tune.scheduler] kind = {kind!r} ranks trials by it (set metric and mode)",
        )
    time_attr = string(ctx, f"{where} time_attr", raw.get("time_attr", DEFAULT_TIME_ATTR))
    whole = time_attr == "training_iteration"
    options: dict[str, Any] = {}
    if kind == "asha":
        options = _asha(ctx, raw, whole)
    elif kind == "median_stopping":
        if "grace_period" in raw:
            options["grace_period"] = _non_negative(ctx, f"{where} grace_period",
                                                    raw["grace_period"], whole)  # fmt: skip
        elif whole:  # Ray's default (60) is meant in seconds of time_total_s
            options["grace_period"] = 1
        if "min_samples_required" in raw:
            options["min_samples_required"] = integer(
                ctx, f"{where} min_samples_required", raw["min_samples_required"], 1
            )
    elif kind == "pbt":
        options = _pbt(ctx, raw, whole, param_keys)
    return SchedulerSection(kind=kind, time_attr=time_attr, options=options)


def _non_negative(ctx: SpecFile, where: str, value: Any, whole: bool) -> int | float:
    if whole:
        return integer(ctx, where, value, 0)
    if not is_number(value) or value < 0:
        ctx.fail(where, f"expected a number >= 0, got {described(value)}")
    return value


def _asha(ctx: SpecFile, raw: dict[str, Any], whole: bool) -> dict[str, Any]:
    where = "[tune.scheduler]"
    options: dict[str, Any] = {}
    for key in ("max_t", "grace_period"):
        if key in raw:
            options[key] = _positive(ctx, f"{where} {key}", raw[key], whole)
    if "reduction_factor" in raw:
        factor = raw["reduction_factor"]
        if not is_number(factor) or factor <= 1:
            ctx.fail(f"{where} reduction_factor", f"expected a number > 1, got {described(factor)}")
        options["reduction_factor"] = factor
    if "brackets" in raw:
        options["brackets"] = integer(ctx, f"{where} brackets", raw["brackets"], 1)
    max_t, grace = options.get("max_t", 100), options.get("grace_period", 1)  # Ray's defaults
    if grace > max_t:
        ctx.fail(
            f"{where} grace_period",
            f"{shown(grace)} is above max_t ({shown(max_t)}): no trial could be stopped early",
        )
    return options


def _pbt(
    ctx: SpecFile, raw: dict[str, Any], whole: bool, param_keys: tuple[str, ...]
) -> dict[str, Any]:
    where = "[tune.scheduler]"
    for key in ("perturbation_interval", "hyperparam_mutations"):
        if key not in raw:
            ctx.fail(f"{where} {key}", "missing (required for kind = 'pbt')")
    options: dict[str, Any] = {
        "perturbation_interval": _positive(
            ctx, f"{where} perturbation_interval", raw["perturbation_interval"], whole
        ),
        "hyperparam_mutations": _mutations(ctx, raw["hyperparam_mutations"], param_keys),
    }
    if "burn_in_period" in raw:
        options["burn_in_period"] = _non_negative(
            ctx, f"{where} burn_in_period", raw["burn_in_period"], whole
        )
    if "quantile_fraction" in raw:
        fraction = raw["quantile_fraction"]
        if not is_number(fraction) or not 0 < fraction <= 0.5:
            ctx.fail(
                f"{where} quantile_fraction",
                f"expected a number in (0, 0.5], got {described(fraction)}",
            )
        options["quantile_fraction"] = fraction
    return options


def _mutations(
    ctx: SpecFile, raw: Any, param_keys: tuple[str, ...]
) -> dict[str, tuple[str, tuple[Any, ...]]]:
    where = "[tune.scheduler] hyperparam_mutations"
    if not isinstance(raw, dict) or not raw:
        ctx.fail(where, f"expected a non-empty table of param -> values, got {described(raw)}")
    out: dict[str, tuple[str, tuple[Any, ...]]] = {}
    for name, value in raw.items():
        at = f"{where}.{name}"
        if name not in param_keys:
            hint = did_you_mean(name, param_keys) if param_keys else ""
            ctx.fail(at, "not a [param_space] key; PBT mutates the trial's config" + hint)
        if isinstance(value, list):
            if not value:
                ctx.fail(at, "expected a non-empty array of values, got []")
            out[name] = ("choice", tuple(value))
            continue
        if not isinstance(value, dict) or len(value) != 1:
            forms = ", ".join(f"{{ {k} = … }}" for k in MUTATION_KINDS)
            ctx.fail(at, f"expected an array of values or one of {forms}; got {shown(value)}")
        ((kind, arg),) = value.items()
        if kind not in MUTATION_KINDS:
            hint = did_you_mean(kind, MUTATION_KINDS) or f" (expected one of {MUTATION_KINDS})"
            ctx.fail(at, f"unknown mutation {kind!r}{hint}")
        out[name] = (kind, _mutation_values(ctx, f"{at}.{kind}", kind, arg))
    return out


def _mutation_values(ctx: SpecFile, where: str, kind: str, arg: Any) -> tuple[Any, ...]:
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            ctx.fail(where, f"expected a non-empty array of values, got {described(arg)}")
        return tuple(arg)
    check, element = (is_int, "integers") if kind == "randint" else (is_number, "finite numbers")
    if not isinstance(arg, list) or len(arg) != 2 or not all(check(v) for v in arg):
        ctx.fail(where, f"expected [low, high] (2 {element}), got {shown(arg)}")
    low, high = arg
    ordered_bounds(ctx, where, kind, low, high)
    return (low, high)


def parse_search(
    ctx: SpecFile, raw: Any, metric: str | None, samplers: dict[str, str]
) -> SearchSection:
    """``samplers``: each ``[param_space]`` key's sampler kind, checked against what the
    searcher can take."""
    where = "[tune.search]"
    if raw is None:
        return SearchSection()
    raw = _table(ctx, where, raw, SEARCH_KEYS)
    kind = one_of(ctx, f"{where} kind", raw.get("kind", "grid_random"), SEARCH_KINDS)
    max_concurrent = None
    if "max_concurrent" in raw:
        max_concurrent = integer(ctx, f"{where} max_concurrent", raw["max_concurrent"], 1)
    if kind == "grid_random":
        return SearchSection(kind=kind, max_concurrent=max_concurrent)
    module, package = SEARCH_PACKAGES[kind]
    if importlib.util.find_spec(module) is None:
        ctx.fail(
            f"{where} kind",
            f"{kind!r} needs the package {package!r}, which is not installed "
            f"(pip install {package})",
        )
    if metric is None:
        ctx.fail("[tune] metric", f"missing; [tune.search] kind = {kind!r} optimises it")
    allowed = SEARCH_SAMPLERS[kind]
    for name, sampler in samplers.items():
        if sampler == "constant" or sampler in allowed:
            continue
        ctx.fail(
            f"[param_space] {name}.{sampler}",
            f"the {kind} searcher cannot take {sampler!r} values (it takes "
            f"{', '.join(allowed)} and constants)",
        )
    return SearchSection(kind=kind, max_concurrent=max_concurrent)
