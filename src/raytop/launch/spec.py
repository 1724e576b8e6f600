"""The run spec: a TOML file that says what to sweep, on what, and how to survive failures.

``load_spec(path)`` parses and validates it, purely: it imports no user code, creates no
folder and writes no file, so previews, plans and listings can read any spec safely.
``raytop.launch.preflight`` does what only a launch or an actual resume may do: import the
entrypoint and prove the local storage writable. Every problem becomes a ``SpecError``
whose message is one line naming the file, the section and the key (docs/spec.md).

Each section's dataclass and parser are in ``spec_sections``, the value checkers and
``SpecError`` in ``spec_values``; this module is the spec as a whole, and the names every
reader of a spec imports.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from raytop.launch.spec_param_space import SAMPLER_KINDS, Sampler, parse_param_space
from raytop.launch.spec_sections import (
    MAX_NAME_BYTES,
    MAX_TRIALS,
    MAX_WORKERS,
    SECTION_KEYS,
    CheckpointSection,
    ClusterSection,
    ExperimentSection,
    FailureSection,
    ScalingSection,
    TrainableSection,
    TuneSection,
    check_trial_count,
    parse_checkpoint,
    parse_cluster,
    parse_experiment,
    parse_failure,
    parse_scaling,
    parse_trainable,
    parse_tune,
    section,
)
from raytop.launch.spec_tune import SchedulerSection, SearchSection
from raytop.launch.spec_values import SpecError, SpecFile, did_you_mean, read_toml
from raytop.model.paths import join_path

__all__ = [
    "DEFAULT_FUNCTION_TRIAL_RESOURCES",
    "DEFAULT_TORCH_TRIAL_RESOURCES",
    "MAX_NAME_BYTES",
    "MAX_TRIALS",
    "MAX_WORKERS",
    "SAMPLER_KINDS",
    "CheckpointSection",
    "ClusterSection",
    "ExperimentSection",
    "FailureSection",
    "RunSpec",
    "Sampler",
    "ScalingSection",
    "SchedulerSection",
    "SearchSection",
    "SpecError",
    "TrainableSection",
    "TuneSection",
    "load_spec",
]


# Torch trials only drive a TorchTrainer; their Train workers need the CPUs. Tune refuses a
# trial asking for nothing ({"CPU": 0}: an empty resource request), and a trial holding a
# CPU can starve its own workers (2 trials on 2 CPUs deadlocked, measured on Ray 2.58): a
# dummy non-CPU request keeps the trial schedulable without starving them.
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
    # The bytes read and validated: what a launch saves as the spec as launched, and what
    # a resume compares the user's file with.
    source: bytes = field(default=b"", repr=False, compare=False)

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
    source, data = read_toml(given, label)
    spec_path = Path(os.path.abspath(given))
    base = Path(os.path.abspath(base_dir)) if base_dir is not None else spec_path.parent
    ctx = SpecFile(label)

    for name, value in data.items():
        if name in SECTION_KEYS:
            continue
        if not isinstance(value, dict):
            owners = [sec for sec, keys in SECTION_KEYS.items() if name in keys]
            hint = f" (did you mean '[{owners[0]}] {name}'?)" if owners else ""
            ctx.fail(name, f"unknown top-level key; keys belong in a section{hint}")
        ctx.fail(f"[{name}]", "unknown section" + did_you_mean(name, SECTION_KEYS, "'[{}]'"))
    if "trainable" not in data:
        ctx.fail("[trainable]", "missing section (required: kind and entrypoint)")

    experiment = parse_experiment(ctx, section(ctx, data, "experiment"), spec_path, base)
    trainable = parse_trainable(ctx, section(ctx, data, "trainable"))
    param_space = parse_param_space(ctx, data.get("param_space", {}))
    tune = parse_tune(ctx, section(ctx, data, "tune"), param_space)
    scaling = parse_scaling(ctx, section(ctx, data, "scaling"))
    failure = parse_failure(ctx, section(ctx, data, "failure"))
    checkpoint = parse_checkpoint(ctx, section(ctx, data, "checkpoint"))
    cluster = parse_cluster(ctx, section(ctx, data, "cluster"))
    check_trial_count(ctx, param_space, tune)

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
        source=source,
    )


def with_experiment(spec: RunSpec, name: str, storage_path: str) -> RunSpec:
    """``spec`` for the experiment ``storage_path/name`` (the file's own name may differ)."""
    experiment = dataclasses.replace(spec.experiment, name=name, storage_path=storage_path)
    return dataclasses.replace(spec, experiment=experiment)
