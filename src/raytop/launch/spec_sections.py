"""The sections of a run spec: each section's dataclass, the keys it takes, and its parser.

A parser takes the section's TOML table and returns the section's dataclass, or fails with
one line naming the file, the section and the key (``spec_values``). Pure: nothing is
imported and no file is touched (``preflight`` does that, on the way to a launch).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raytop.launch.spec_param_space import Sampler
from raytop.launch.spec_tune import (
    SchedulerSection,
    SearchSection,
    parse_scheduler,
    parse_search,
)
from raytop.launch.spec_values import (
    URI,
    SpecFile,
    boolean,
    described,
    did_you_mean,
    integer,
    is_int,
    one_of,
    resource_table,
    shown,
    string,
)

# File names are limited to 255 bytes. The longest one raytop derives from the experiment
# name is a Train run folder, ``<name>-<trial_id>`` (``-abcde_00000``: 12 bytes, see
# ``rundir.train_run_name``), after ``run --new-name`` added ``-YYYYmmdd-HHMMSS`` (16
# bytes): 200 + 16 + 12 = 228 leaves a margin.
MAX_NAME_BYTES = 200
# Trials in one sweep (num_samples x the grid's combinations). Tune keeps every trial in
# memory and in experiment_state; five-digit trial indexes (``abcde_00000``) also keep
# MAX_NAME_BYTES honest. The planner answers within 2 s up to this many.
MAX_TRIALS = 100_000
# Train workers per trial: far above real worker groups; it bounds the planner's work per
# group (its exact one-group check is polynomial in the group size).
MAX_WORKERS = 10_000


@dataclass(frozen=True)
class ExperimentSection:
    name: str
    storage_path: str  # absolute local path, or a URI such as s3://bucket/prefix


@dataclass(frozen=True)
class TrainableSection:
    kind: str  # "torch" | "function"
    entrypoint: str  # "module:function"

    @property
    def module(self) -> str:
        return self.entrypoint.split(":", 1)[0]

    @property
    def function(self) -> str:
        return self.entrypoint.split(":", 1)[1]


@dataclass(frozen=True)
class TuneSection:
    metric: str | None = None
    mode: str | None = None  # "min" | "max"
    num_samples: int = 1
    max_concurrent_trials: int | None = None
    trial_resources: dict[str, float] | None = None  # None: the kind's default
    # Each trial stops after this many results (Tune's MaximumIterationStopper); None: none.
    stop_iterations: int | None = None
    scheduler: SchedulerSection = field(default_factory=SchedulerSection)  # [tune.scheduler]
    search: SearchSection = field(default_factory=SearchSection)  # [tune.search]


@dataclass(frozen=True)
class ScalingSection:
    num_workers: int | tuple[int, int] = 1  # (min, max) is elastic
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    placement_strategy: str = "PACK"  # PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    # torch.distributed backend; None: Ray's choice (nccl with use_gpu, else gloo). "gloo"
    # with use_gpu runs GPU placement on logical GPUs without CUDA (a local cluster declaring
    # num_gpus places {"GPU": 1} bundles as on GPU nodes; only CUDA itself is missing).
    backend: str | None = None


@dataclass(frozen=True)
class FailureSection:
    # Train (ray.train.FailureConfig)
    max_failures: int = 0
    controller_failure_limit: int = -1
    max_preemption_failures: int = -1
    # Tune (ray.tune.FailureConfig(max_failures=...)), per trial
    trial_max_failures: int = 0


@dataclass(frozen=True)
class CheckpointSection:
    num_to_keep: int | None = None


@dataclass(frozen=True)
class ClusterSection:
    """Logical resources of the embedded cluster (ignored when attaching to one)."""

    num_cpus: int | None = None
    num_gpus: int | None = None
    resources: dict[str, float] = field(default_factory=dict)


SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "experiment": ("name", "storage_path"),
    "trainable": ("kind", "entrypoint"),
    "param_space": (),  # free-form: one sampler per key
    "tune": (
        "metric",
        "mode",
        "num_samples",
        "max_concurrent_trials",
        "trial_resources",
        "stop_iterations",
        "scheduler",
        "search",
    ),
    "scaling": ("num_workers", "use_gpu", "resources_per_worker", "placement_strategy", "backend"),
    "failure": (
        "max_failures",
        "controller_failure_limit",
        "max_preemption_failures",
        "trial_max_failures",
    ),
    "checkpoint": ("num_to_keep",),
    "cluster": ("num_cpus", "num_gpus", "resources"),
}

_TRAINABLE_KINDS = ("torch", "function")
_MODES = ("min", "max")
_PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
_BACKENDS = ("gloo", "nccl")
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")
# ``s3:/bucket`` or ``s3:bucket``: a scheme without its ``//``, which would otherwise be a
# relative local folder named ``s3:``.
_MISTYPED_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")
_ENTRYPOINT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def section(ctx: SpecFile, data: dict[str, Any], name: str) -> dict[str, Any]:
    """Section ``name``'s table (empty when the spec leaves it out), every key known."""
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        ctx.fail(f"[{name}]", f"expected a table, got {described(raw)}")
    known = SECTION_KEYS[name]
    for key in raw:
        if key not in known:
            hint = did_you_mean(key, known) or f" (known keys: {', '.join(known)})"
            ctx.fail(f"[{name}] {key}", "unknown key" + hint)
    return raw


def parse_experiment(
    ctx: SpecFile, raw: dict[str, Any], spec_path: Path, base: Path
) -> ExperimentSection:
    if "name" in raw:
        name = string(ctx, "[experiment] name", raw["name"])
        if not _SAFE_NAME.fullmatch(name) or name in (".", ".."):
            ctx.fail(
                "[experiment] name",
                f"expected a safe folder name (letters, digits, '-', '_', '.'), got {name!r}",
            )
    else:
        name = spec_path.stem
        if not _SAFE_NAME.fullmatch(name) or name in (".", ".."):
            ctx.fail(
                "[experiment] name",
                f"the default (the file's stem {name!r}) is not a safe folder name "
                "(letters, digits, '-', '_', '.'); set it explicitly",
            )
    size = len(name.encode())
    if size > MAX_NAME_BYTES:
        default = "" if "name" in raw else " (the default: the file's stem)"
        ctx.fail(
            "[experiment] name",
            f"{size} bytes{default}, longer than the limit of {MAX_NAME_BYTES}: the Train "
            "run folders raytop names after it (<name>-<trial_id>) must fit the 255-byte "
            "file-name limit",
        )

    storage = string(ctx, "[experiment] storage_path", raw.get("storage_path", "results"))
    if URI.match(storage):
        _check_uri(ctx, storage)
    else:
        typo = _MISTYPED_URI.match(storage)
        if typo:
            scheme = typo.group(1)
            ctx.fail(
                "[experiment] storage_path",
                f"{storage!r} looks like a mistyped URI (expected '{scheme}://bucket/path'); "
                f"as written it would be a local folder named '{scheme}:'",
            )
        storage = os.path.normpath(os.path.join(base, os.path.expanduser(storage)))
    return ExperimentSection(name=name, storage_path=storage)


def _check_uri(ctx: SpecFile, uri: str) -> None:
    """A remote URI names its bucket (``s3://`` alone, or ``s3:///x``, names none);
    ``file://`` is a local path and has no bucket."""
    scheme, _, rest = uri.partition("://")
    if scheme.lower() == "file":
        if not rest.startswith("/"):
            ctx.fail("[experiment] storage_path", f"expected 'file:///absolute/path', got {uri!r}")
        return
    bucket = rest.split("/", 1)[0].split("?", 1)[0]
    if not bucket:
        ctx.fail(
            "[experiment] storage_path",
            f"{uri!r} names no bucket (expected '{scheme}://bucket/path')",
        )


def parse_trainable(ctx: SpecFile, raw: dict[str, Any]) -> TrainableSection:
    for key in ("kind", "entrypoint"):
        if key not in raw:
            ctx.fail(f"[trainable] {key}", "missing (required)")
    kind = one_of(ctx, "[trainable] kind", raw["kind"], _TRAINABLE_KINDS)
    entrypoint = string(ctx, "[trainable] entrypoint", raw["entrypoint"])
    if not _ENTRYPOINT.fullmatch(entrypoint):
        ctx.fail(
            "[trainable] entrypoint",
            f"expected 'module:function' (e.g. 'train:train_func'), got {entrypoint!r}",
        )
    # Decided from the name alone (nothing is imported): 'os:system' or 'builtins:exec'
    # would run an arbitrary function of Python's own, never a train loop.
    top = entrypoint.split(":", 1)[0].split(".", 1)[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        ctx.fail(
            "[trainable] entrypoint",
            f"{entrypoint!r} names the standard-library module {top!r}; "
            "expected your own train module (e.g. 'train:train_func')",
        )
    return TrainableSection(kind=kind, entrypoint=entrypoint)


def parse_tune(
    ctx: SpecFile, raw: dict[str, Any], param_space: dict[str, Sampler] | None = None
) -> TuneSection:
    metric = string(ctx, "[tune] metric", raw["metric"]) if "metric" in raw else None
    mode = one_of(ctx, "[tune] mode", raw["mode"], _MODES) if "mode" in raw else None
    if metric is not None and mode is None:
        ctx.fail("[tune] mode", "missing; metric and mode must be given together")
    if mode is not None and metric is None:
        ctx.fail("[tune] metric", "missing; metric and mode must be given together")
    num_samples = integer(ctx, "[tune] num_samples", raw.get("num_samples", 1), 1)
    max_concurrent = None
    if "max_concurrent_trials" in raw:
        max_concurrent = integer(
            ctx, "[tune] max_concurrent_trials", raw["max_concurrent_trials"], 1
        )
    trial_resources = None
    if "trial_resources" in raw:
        trial_resources = resource_table(ctx, "[tune] trial_resources", raw["trial_resources"])
    stop_iterations = None
    if "stop_iterations" in raw:
        stop_iterations = integer(ctx, "[tune] stop_iterations", raw["stop_iterations"], 1)
    samplers = {key: s.kind for key, s in (param_space or {}).items()}
    scheduler = parse_scheduler(ctx, raw.get("scheduler"), metric, tuple(samplers))
    search = parse_search(ctx, raw.get("search"), metric, samplers)
    return TuneSection(
        metric=metric,
        mode=mode,
        num_samples=num_samples,
        max_concurrent_trials=max_concurrent,
        trial_resources=trial_resources,
        stop_iterations=stop_iterations,
        scheduler=scheduler,
        search=search,
    )


def check_trial_count(ctx: SpecFile, param_space: dict[str, Sampler], tune: TuneSection) -> None:
    """Refuse sweeps above MAX_TRIALS (num_samples x the grid's combinations)."""
    limit = f"the limit is {MAX_TRIALS:,} trials"
    if tune.num_samples > MAX_TRIALS:
        ctx.fail("[tune] num_samples", f"{tune.num_samples:,} is above the limit ({limit})")
    grids = {k: len(s.values) for k, s in param_space.items() if s.kind == "grid"}
    trials = math.prod(grids.values()) * tune.num_samples
    if trials > MAX_TRIALS:
        sizes = " x ".join(str(n) for n in grids.values())
        ctx.fail(
            "[param_space]",
            f"the grid ({sizes}) x [tune] num_samples ({tune.num_samples}) makes "
            f"{trials:,} trials; {limit}",
        )


def _parse_num_workers(ctx: SpecFile, value: Any) -> int | tuple[int, int]:
    where = "[scaling] num_workers"
    result: int | tuple[int, int]
    if isinstance(value, list):
        if len(value) != 2 or not all(is_int(v) for v in value):
            ctx.fail(where, f"expected [min, max] (2 integers) for elastic, got {shown(value)}")
        low, high = value
        if not 1 <= low <= high:
            ctx.fail(where, f"expected [min, max] with 1 <= min <= max, got {shown(value)}")
        result = (low, high)
    else:
        if not is_int(value):
            ctx.fail(where, f"expected an integer >= 1 or [min, max], got {described(value)}")
        result = high = integer(ctx, where, value, 1)
    if high > MAX_WORKERS:
        ctx.fail(where, f"{high:,} workers is above the limit of {MAX_WORKERS:,} per trial")
    return result


def parse_scaling(ctx: SpecFile, raw: dict[str, Any]) -> ScalingSection:
    num_workers = _parse_num_workers(ctx, raw.get("num_workers", 1))
    use_gpu = boolean(ctx, "[scaling] use_gpu", raw.get("use_gpu", False))
    per_worker = None
    if "resources_per_worker" in raw:
        where = "[scaling] resources_per_worker"
        per_worker = resource_table(ctx, where, raw["resources_per_worker"])
        # Ray's ScalingConfig rule: GPU in resources_per_worker must agree with use_gpu.
        gpus = per_worker.get("GPU", 0)
        if per_worker and not use_gpu and gpus > 0:
            ctx.fail(f"{where}.GPU", "GPU > 0 needs [scaling] use_gpu = true (Ray's rule)")
        if per_worker and use_gpu and "GPU" in per_worker and gpus == 0:
            ctx.fail(f"{where}.GPU", "GPU = 0 contradicts [scaling] use_gpu = true (Ray's rule)")
    strategy = one_of(
        ctx,
        "[scaling] placement_strategy",
        raw.get("placement_strategy", "PACK"),
        _PLACEMENT_STRATEGIES,
    )
    backend = None
    if "backend" in raw:
        backend = one_of(ctx, "[scaling] backend", raw["backend"], _BACKENDS)
    return ScalingSection(
        num_workers=num_workers,
        use_gpu=use_gpu,
        resources_per_worker=per_worker,
        placement_strategy=strategy,
        backend=backend,
    )


def parse_failure(ctx: SpecFile, raw: dict[str, Any]) -> FailureSection:
    defaults = FailureSection()
    values = {
        key: integer(ctx, f"[failure] {key}", raw.get(key, getattr(defaults, key)), -1)
        for key in SECTION_KEYS["failure"]
    }
    return FailureSection(**values)


def parse_checkpoint(ctx: SpecFile, raw: dict[str, Any]) -> CheckpointSection:
    if "num_to_keep" not in raw:
        return CheckpointSection()
    return CheckpointSection(
        num_to_keep=integer(ctx, "[checkpoint] num_to_keep", raw["num_to_keep"], 1)
    )


def parse_cluster(ctx: SpecFile, raw: dict[str, Any]) -> ClusterSection:
    num_cpus = integer(ctx, "[cluster] num_cpus", raw["num_cpus"], 0) if "num_cpus" in raw else None
    num_gpus = integer(ctx, "[cluster] num_gpus", raw["num_gpus"], 0) if "num_gpus" in raw else None
    resources = {}
    if "resources" in raw:
        resources = resource_table(ctx, "[cluster] resources", raw["resources"], for_ray_init=True)
    return ClusterSection(num_cpus=num_cpus, num_gpus=num_gpus, resources=resources)
