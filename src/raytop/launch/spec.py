"""The run spec: a TOML file that says what to sweep, on what, and how to survive failures.

``load_spec(path)`` parses and validates it, purely: it imports no user code, creates no
folder and writes no file, so previews, plans and listings can read any spec safely.
``preflight(spec)`` does what only a launch or an actual resume may do: import the
entrypoint and prove the local storage writable. Every problem becomes a ``SpecError``
whose message is one line naming the file, the section and the key (docs/spec.md).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import math
import os
import re
import secrets
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from raytop.model.paths import join_path

SAMPLER_KINDS = ("grid", "choice", "uniform", "loguniform", "randint", "constant")

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


class SpecError(Exception):
    """A spec that cannot be used; ``str(err)`` is the one-line message shown to the user."""


@dataclass(frozen=True)
class Sampler:
    """One ``[param_space]`` entry. ``kind`` is one of SAMPLER_KINDS.

    grid/choice: ``values`` is the list; uniform/loguniform/randint: ``values`` is
    ``(low, high)``; constant: ``values`` is the value itself.
    """

    kind: str
    values: Any


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


@dataclass(frozen=True)
class ScalingSection:
    num_workers: int | tuple[int, int] = 1  # (min, max) is elastic
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    placement_strategy: str = "PACK"  # PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    # torch.distributed backend; None: Ray's choice (nccl with use_gpu, else gloo). "gloo"
    # with use_gpu runs GPU placement on logical GPUs without CUDA (RAY_NOTES k).
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


# Torch trials only drive a TorchTrainer; their Train workers need the CPUs. A dummy
# non-CPU request keeps the trial schedulable without starving them (RAY_NOTES e).
DEFAULT_TORCH_TRIAL_RESOURCES: dict[str, float] = {"CPU": 0, "memory": 1}
DEFAULT_FUNCTION_TRIAL_RESOURCES: dict[str, float] = {"CPU": 1}


@dataclass(frozen=True)
class RunSpec:
    path: Path  # the spec file, absolute
    experiment: ExperimentSection
    trainable: TrainableSection
    param_space: dict[str, Sampler] = field(default_factory=dict)
    tune: TuneSection = field(default_factory=TuneSection)
    scaling: ScalingSection = field(default_factory=ScalingSection)
    failure: FailureSection = field(default_factory=FailureSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    cluster: ClusterSection = field(default_factory=ClusterSection)
    base_dir: Path | None = None  # set when it is not the file's folder (a saved copy)

    @property
    def spec_dir(self) -> Path:
        """Where relative paths and the entrypoint's module resolve."""
        return self.base_dir or self.path.parent

    @property
    def experiment_path(self) -> str:
        return join_path(self.experiment.storage_path, self.experiment.name)

    @property
    def trial_resources(self) -> dict[str, float]:
        if self.tune.trial_resources is not None:
            return dict(self.tune.trial_resources)
        if self.trainable.kind == "torch":
            return dict(DEFAULT_TORCH_TRIAL_RESOURCES)
        return dict(DEFAULT_FUNCTION_TRIAL_RESOURCES)


def load_spec(path: str | Path, base_dir: str | Path | None = None) -> RunSpec:
    """Read, parse and validate a spec file; raise SpecError with a one-line message.

    Pure: the entrypoint is not imported and the storage is not touched (``preflight``).
    ``base_dir``: the folder relative paths and the entrypoint resolve against, when it is
    not the file's own (the copy saved at launch, read back for a resume)."""
    given = Path(path)
    label = str(path)
    data = _read_toml(given, label)
    spec_path = Path(os.path.abspath(given))
    base = Path(os.path.abspath(base_dir)) if base_dir is not None else spec_path.parent
    ctx = _Ctx(label)

    for name, value in data.items():
        if name in _SECTION_KEYS:
            continue
        if not isinstance(value, dict):
            owners = [sec for sec, keys in _SECTION_KEYS.items() if name in keys]
            hint = f" (did you mean '[{owners[0]}] {name}'?)" if owners else ""
            ctx.fail(name, f"unknown top-level key; keys belong in a section{hint}")
        ctx.fail(f"[{name}]", "unknown section" + _did_you_mean(name, _SECTION_KEYS, "'[{}]'"))
    if "trainable" not in data:
        ctx.fail("[trainable]", "missing section (required: kind and entrypoint)")

    experiment = _parse_experiment(ctx, _section(ctx, data, "experiment"), spec_path, base)
    trainable = _parse_trainable(ctx, _section(ctx, data, "trainable"))
    param_space = _parse_param_space(ctx, data.get("param_space", {}))
    tune = _parse_tune(ctx, _section(ctx, data, "tune"))
    scaling = _parse_scaling(ctx, _section(ctx, data, "scaling"))
    failure = _parse_failure(ctx, _section(ctx, data, "failure"))
    checkpoint = _parse_checkpoint(ctx, _section(ctx, data, "checkpoint"))
    cluster = _parse_cluster(ctx, _section(ctx, data, "cluster"))
    _check_trial_count(ctx, param_space, tune)

    return RunSpec(
        path=spec_path,
        base_dir=base if base_dir is not None else None,
        experiment=experiment,
        trainable=trainable,
        param_space=param_space,
        tune=tune,
        scaling=scaling,
        failure=failure,
        checkpoint=checkpoint,
        cluster=cluster,
    )


# --------------------------------------------------------------------------- helpers

_SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "experiment": ("name", "storage_path"),
    "trainable": ("kind", "entrypoint"),
    "param_space": (),  # free-form: one sampler per key
    "tune": ("metric", "mode", "num_samples", "max_concurrent_trials", "trial_resources"),
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
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# ``s3:/bucket`` or ``s3:bucket``: a scheme without its ``//``, which would otherwise be a
# relative local folder named ``s3:``.
_MISTYPED_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")
_ENTRYPOINT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_PROBE_NAME = ".raytop-write-probe"


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


class _Ctx:
    """Carries the file label so every error starts the same way."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, where: str, message: str) -> NoReturn:
        raise SpecError(_one_line(f"{self.label}: {where}: {message}"))


def _read_toml(path: Path, label: str) -> dict[str, Any]:
    if not path.exists():
        raise SpecError(_one_line(f"spec not found: {label}"))
    if path.is_dir():
        raise SpecError(_one_line(f"spec is a directory, not a file: {label}"))
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise SpecError(_one_line(f"cannot read spec {label}: {err.strerror or err}")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SpecError(_one_line(f"{label}: not valid UTF-8 text ({err.reason})")) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SpecError(_one_line(f"{label}: TOML syntax error: {err}")) from None


def _did_you_mean(word: str, choices: Any, fmt: str = "'{}'") -> str:
    """`` (did you mean 'x'?)`` for the closest choice (case-insensitive), else ``''``."""
    lowered = {str(c).lower(): str(c) for c in choices}
    match = difflib.get_close_matches(str(word).lower(), list(lowered), n=1)
    if not match:
        return ""
    return f" (did you mean {fmt.format(lowered[match[0]])}?)"


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_repr(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _shown(value: Any) -> str:
    text = _toml_repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _described(value: Any) -> str:
    """The value and its TOML type, for wrong-type messages: ``'abc' (a string)``."""
    kind = _TYPE_NAMES.get(type(value), type(value).__name__)
    return f"{_shown(value)} ({kind})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _section(ctx: _Ctx, data: dict[str, Any], name: str) -> dict[str, Any]:
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        ctx.fail(f"[{name}]", f"expected a table, got {_described(raw)}")
    known = _SECTION_KEYS[name]
    for key in raw:
        if key not in known:
            hint = _did_you_mean(key, known) or f" (known keys: {', '.join(known)})"
            ctx.fail(f"[{name}] {key}", "unknown key" + hint)
    return raw


def _int(ctx: _Ctx, where: str, value: Any, minimum: int) -> int:
    expected = f"expected an integer >= {minimum}"
    if not _is_int(value):
        ctx.fail(where, f"{expected}, got {_described(value)}")
    if value < minimum:
        ctx.fail(where, f"{expected}, got {value}")
    return value


def _bool(ctx: _Ctx, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        ctx.fail(where, f"expected a boolean (true or false), got {_described(value)}")
    return value


def _str(ctx: _Ctx, where: str, value: Any) -> str:
    if not isinstance(value, str):
        ctx.fail(where, f"expected a string, got {_described(value)}")
    if not value.strip():
        ctx.fail(where, "expected a non-empty string, got ''")
    return value


def _one_of(ctx: _Ctx, where: str, value: Any, choices: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{c}'" for c in choices)
    if not isinstance(value, str):
        ctx.fail(where, f"expected one of {listed}, got {_described(value)}")
    if value not in choices:
        ctx.fail(where, f"expected one of {listed}, got {value!r}" + _did_you_mean(value, choices))
    return value


def _resources(ctx: _Ctx, where: str, value: Any, *, for_ray_init: bool = False) -> dict:
    """A table of resource name -> number >= 0; ``cpu``/``gpu`` become ``CPU``/``GPU``."""
    if not isinstance(value, dict):
        ctx.fail(where, f"expected a table of resource name -> number, got {_described(value)}")
    out: dict[str, float] = {}
    for name, amount in value.items():
        key_where = f"{where}.{name}"
        if not name.strip():
            ctx.fail(where, "resource names must be non-empty")
        canonical = name.upper() if name.lower() in ("cpu", "gpu") else name
        if for_ray_init and canonical in ("CPU", "GPU"):
            ctx.fail(key_where, f"use [cluster] num_{canonical.lower()}s instead")
        if not _is_number(amount):
            ctx.fail(key_where, f"expected a number >= 0, got {_described(amount)}")
        if amount < 0:
            ctx.fail(key_where, f"expected a number >= 0, got {_shown(amount)}")
        if canonical in out:
            ctx.fail(key_where, f"{canonical!r} is given twice ({name!r} means {canonical!r})")
        out[canonical] = amount
    return out


# --------------------------------------------------------------------------- sections


def _parse_experiment(
    ctx: _Ctx, raw: dict[str, Any], spec_path: Path, base: Path
) -> ExperimentSection:
    if "name" in raw:
        name = _str(ctx, "[experiment] name", raw["name"])
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

    storage = _str(ctx, "[experiment] storage_path", raw.get("storage_path", "results"))
    if _URI.match(storage):
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


def _check_uri(ctx: _Ctx, uri: str) -> None:
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


def _parse_trainable(ctx: _Ctx, raw: dict[str, Any]) -> TrainableSection:
    for key in ("kind", "entrypoint"):
        if key not in raw:
            ctx.fail(f"[trainable] {key}", "missing (required)")
    kind = _one_of(ctx, "[trainable] kind", raw["kind"], _TRAINABLE_KINDS)
    entrypoint = _str(ctx, "[trainable] entrypoint", raw["entrypoint"])
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


def _parse_param_space(ctx: _Ctx, raw: Any) -> dict[str, Sampler]:
    if not isinstance(raw, dict):
        ctx.fail("[param_space]", f"expected a table, got {_described(raw)}")
    return {key: _parse_sampler(ctx, f"[param_space] {key}", value) for key, value in raw.items()}


def _parse_sampler(ctx: _Ctx, where: str, value: Any) -> Sampler:
    if not isinstance(value, dict):
        return Sampler("constant", value)  # a plain scalar or array
    kinds = ", ".join(SAMPLER_KINDS)
    if len(value) != 1:
        got = ", ".join(value) if value else "an empty table"
        ctx.fail(where, f"expected a table with exactly one of {kinds}; got {got}")
    ((kind, arg),) = value.items()
    if kind not in SAMPLER_KINDS:
        hint = _did_you_mean(kind, SAMPLER_KINDS) or f" (expected one of {kinds})"
        ctx.fail(where, f"unknown sampler {kind!r}{hint}")
    where = f"{where}.{kind}"
    if kind == "constant":
        return Sampler(kind, arg)
    if kind in ("grid", "choice"):
        if not isinstance(arg, list) or not arg:
            ctx.fail(where, f"expected a non-empty array of values, got {_described(arg)}")
        return Sampler(kind, tuple(arg))

    # uniform / loguniform / randint: [low, high]
    want_int = kind == "randint"
    element = "integers" if want_int else "finite numbers"
    if not isinstance(arg, list):
        ctx.fail(where, f"expected [low, high] ({element}), got {_described(arg)}")
    if len(arg) != 2:
        ctx.fail(where, f"expected [low, high] (2 {element}), got {len(arg)} values")
    check = _is_int if want_int else _is_number
    for bound in arg:
        if not check(bound):
            ctx.fail(where, f"expected [low, high] ({element}), got {_described(bound)} in it")
    low, high = arg
    if low >= high:
        ctx.fail(where, f"expected low < high, got [{_shown(low)}, {_shown(high)}]")
    if kind == "loguniform" and low <= 0:
        ctx.fail(where, f"expected low > 0 for a log scale, got {_shown(low)}")
    if want_int:
        return Sampler(kind, (low, high))
    return Sampler(kind, (float(low), float(high)))


def _parse_tune(ctx: _Ctx, raw: dict[str, Any]) -> TuneSection:
    metric = _str(ctx, "[tune] metric", raw["metric"]) if "metric" in raw else None
    mode = _one_of(ctx, "[tune] mode", raw["mode"], _MODES) if "mode" in raw else None
    if metric is not None and mode is None:
        ctx.fail("[tune] mode", "missing; metric and mode must be given together")
    if mode is not None and metric is None:
        ctx.fail("[tune] metric", "missing; metric and mode must be given together")
    num_samples = _int(ctx, "[tune] num_samples", raw.get("num_samples", 1), 1)
    max_concurrent = None
    if "max_concurrent_trials" in raw:
        max_concurrent = _int(ctx, "[tune] max_concurrent_trials", raw["max_concurrent_trials"], 1)
    trial_resources = None
    if "trial_resources" in raw:
        trial_resources = _resources(ctx, "[tune] trial_resources", raw["trial_resources"])
    return TuneSection(
        metric=metric,
        mode=mode,
        num_samples=num_samples,
        max_concurrent_trials=max_concurrent,
        trial_resources=trial_resources,
    )


def _check_trial_count(ctx: _Ctx, param_space: dict[str, Sampler], tune: TuneSection) -> None:
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


def _parse_num_workers(ctx: _Ctx, value: Any) -> int | tuple[int, int]:
    where = "[scaling] num_workers"
    result: int | tuple[int, int]
    if isinstance(value, list):
        if len(value) != 2 or not all(_is_int(v) for v in value):
            ctx.fail(where, f"expected [min, max] (2 integers) for elastic, got {_shown(value)}")
        low, high = value
        if not 1 <= low <= high:
            ctx.fail(where, f"expected [min, max] with 1 <= min <= max, got {_shown(value)}")
        result = (low, high)
    else:
        if not _is_int(value):
            ctx.fail(where, f"expected an integer >= 1 or [min, max], got {_described(value)}")
        result = high = _int(ctx, where, value, 1)
    if high > MAX_WORKERS:
        ctx.fail(where, f"{high:,} workers is above the limit of {MAX_WORKERS:,} per trial")
    return result


def _parse_scaling(ctx: _Ctx, raw: dict[str, Any]) -> ScalingSection:
    num_workers = _parse_num_workers(ctx, raw.get("num_workers", 1))
    use_gpu = _bool(ctx, "[scaling] use_gpu", raw.get("use_gpu", False))
    per_worker = None
    if "resources_per_worker" in raw:
        where = "[scaling] resources_per_worker"
        per_worker = _resources(ctx, where, raw["resources_per_worker"])
        # Ray's ScalingConfig rule: GPU in resources_per_worker must agree with use_gpu.
        gpus = per_worker.get("GPU", 0)
        if per_worker and not use_gpu and gpus > 0:
            ctx.fail(f"{where}.GPU", "GPU > 0 needs [scaling] use_gpu = true (Ray's rule)")
        if per_worker and use_gpu and "GPU" in per_worker and gpus == 0:
            ctx.fail(f"{where}.GPU", "GPU = 0 contradicts [scaling] use_gpu = true (Ray's rule)")
    strategy = _one_of(
        ctx,
        "[scaling] placement_strategy",
        raw.get("placement_strategy", "PACK"),
        _PLACEMENT_STRATEGIES,
    )
    backend = None
    if "backend" in raw:
        backend = _one_of(ctx, "[scaling] backend", raw["backend"], _BACKENDS)
    return ScalingSection(
        num_workers=num_workers,
        use_gpu=use_gpu,
        resources_per_worker=per_worker,
        placement_strategy=strategy,
        backend=backend,
    )


def _parse_failure(ctx: _Ctx, raw: dict[str, Any]) -> FailureSection:
    defaults = FailureSection()
    values = {
        key: _int(ctx, f"[failure] {key}", raw.get(key, getattr(defaults, key)), -1)
        for key in _SECTION_KEYS["failure"]
    }
    return FailureSection(**values)


def _parse_checkpoint(ctx: _Ctx, raw: dict[str, Any]) -> CheckpointSection:
    if "num_to_keep" not in raw:
        return CheckpointSection()
    return CheckpointSection(
        num_to_keep=_int(ctx, "[checkpoint] num_to_keep", raw["num_to_keep"], 1)
    )


def _parse_cluster(ctx: _Ctx, raw: dict[str, Any]) -> ClusterSection:
    num_cpus = _int(ctx, "[cluster] num_cpus", raw["num_cpus"], 0) if "num_cpus" in raw else None
    num_gpus = _int(ctx, "[cluster] num_gpus", raw["num_gpus"], 0) if "num_gpus" in raw else None
    resources = {}
    if "resources" in raw:
        resources = _resources(ctx, "[cluster] resources", raw["resources"], for_ray_init=True)
    return ClusterSection(num_cpus=num_cpus, num_gpus=num_gpus, resources=resources)


# --------------------------------------------------------------------------- preflight


def preflight(spec: RunSpec) -> None:
    """What only a launch or an actual resume may do: import the entrypoint (running the
    user's module) and prove the local storage writable (creating the folder and a probe
    file, removed again). Raises SpecError (one line). Safe to call twice."""
    ctx = _Ctx(str(spec.path))
    _check_entrypoint(ctx, spec.trainable, spec.spec_dir)
    _check_storage(ctx, spec.experiment.storage_path)


def _check_entrypoint(ctx: _Ctx, trainable: TrainableSection, spec_dir: Path) -> None:
    where = f"[trainable] entrypoint {trainable.entrypoint!r}"
    module_name, func_name = trainable.module, trainable.function
    entry = str(spec_dir)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()  # the module may have just been written
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as err:
        ctx.fail(
            where,
            f"cannot import module {module_name!r}: {type(err).__name__}: {err}",
        )
    finally:
        # Undo only our own insertion: the module may have edited sys.path on purpose.
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)
    if not hasattr(module, func_name):
        ctx.fail(where, f"{func_name!r} not found in module {module_name!r}")
    if not callable(getattr(module, func_name)):
        ctx.fail(where, f"{trainable.entrypoint!r} is not callable")


_PROBE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | os.O_CLOEXEC


def _check_storage(ctx: _Ctx, storage_path: str) -> None:
    """Create the folder and write a probe into it. The probe's name is unpredictable and it
    is created exclusively without following a symlink, relative to the opened folder: a
    link planted in the folder can neither be guessed nor written through."""
    if storage_path.startswith("file://"):
        storage_path = storage_path[len("file://") :]
    elif _URI.match(storage_path):
        return  # remote storage is Ray's business
    where = f"[experiment] storage_path {storage_path!r}"
    if os.path.lexists(storage_path) and not os.path.isdir(storage_path):
        try:
            os.stat(storage_path)
        except OSError as err:  # e.g. a symlink loop, a dangling link
            ctx.fail(where, f"not a folder ({err.strerror or err})")
        ctx.fail(where, "not a folder (a file is in the way)")
    name = f"{_PROBE_NAME}-{secrets.token_hex(16)}"
    try:
        os.makedirs(storage_path, exist_ok=True)
        folder = os.open(storage_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = os.open(name, _PROBE_FLAGS, 0o600, dir_fd=folder)
            try:
                os.write(fd, b"ok")
            finally:
                os.close(fd)
            os.unlink(name, dir_fd=folder)
        finally:
            os.close(folder)
    except OSError as err:
        ctx.fail(where, f"not writable ({err.strerror or err})")
