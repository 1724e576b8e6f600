"""A run spec's ``[param_space]``: one sampler per hyperparameter (a grid, a choice, a
range, or a constant), each checked to be what Tune can sample from. Pure, like the rest
of the spec (``spec_values`` says how a key fails).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raytop.launch.spec_values import (
    SpecFile,
    described,
    did_you_mean,
    is_int,
    is_number,
    ordered_bounds,
)

SAMPLER_KINDS = ("grid", "choice", "uniform", "loguniform", "randint", "constant")


@dataclass(frozen=True)
class Sampler:
    """One ``[param_space]`` entry. ``kind`` is one of SAMPLER_KINDS.

    grid/choice: ``values`` is the list; uniform/loguniform/randint: ``values`` is
    ``(low, high)``; constant: ``values`` is the value itself.
    """

    kind: str
    values: Any


def parse_param_space(ctx: SpecFile, raw: Any) -> dict[str, Sampler]:
    if not isinstance(raw, dict):
        ctx.fail("[param_space]", f"expected a table, got {described(raw)}")
    return {key: _parse_sampler(ctx, f"[param_space] {key}", value) for key, value in raw.items()}


def _parse_sampler(ctx: SpecFile, where: str, value: Any) -> Sampler:
    if not isinstance(value, dict):
        return Sampler("constant", value)  # a plain scalar or array
    kinds = ", ".join(SAMPLER_KINDS)
    if len(value) != 1:
        got = ", ".join(value) if value else "an empty table"
        ctx.fail(where, f"expected a table with exactly one of {kinds}; got {got}")
    ((kind, arg),) = value.items()
    if kind not in SAMPLER_KINDS:
        hint = did_you_mean(kind, SAMPLER_KINDS) or f" (expected one of {kinds})"
        ctx.fail(where, f"unknown sampler {kind!r}{hint}")
    where = f"{where}.{kind}"
    if kind == "constant":
        return Sampler(kind, arg)
    if kind in ("grid", "choice"):
        if not isinstance(arg, list) or not arg:
            ctx.fail(where, f"expected a non-empty array of values, got {described(arg)}")
        return Sampler(kind, tuple(arg))

    # uniform / loguniform / randint: [low, high]
    want_int = kind == "randint"
    element = "integers" if want_int else "finite numbers"
    if not isinstance(arg, list):
        ctx.fail(where, f"expected [low, high] ({element}), got {described(arg)}")
    if len(arg) != 2:
        ctx.fail(where, f"expected [low, high] (2 {element}), got {len(arg)} values")
    check = is_int if want_int else is_number
    for bound in arg:
        if not check(bound):
            ctx.fail(where, f"expected [low, high] ({element}), got {described(bound)} in it")
    low, high = arg
    ordered_bounds(ctx, where, kind, low, high)
    if want_int:
        return Sampler(kind, (low, high))
    return Sampler(kind, (float(low), float(high)))
