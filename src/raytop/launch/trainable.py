"""The Tune function trainables raytop launches (Ray 2.58's documented Tune-with-Train way).

For ``kind = "torch"`` each Tune trial is the driver of its own Train run: it builds a
``TorchTrainer`` inside the trial, passes the trial's params through
``train_loop_config``, gives the run a unique name and storage under the experiment, and
builds ``ray.train.RunConfig(callbacks=[TuneReportCallback(), ReportProbe(), RunProbe()])``
inside the Tune session (the Tune callback's constructor needs the session). Train and Tune failure
settings stay apart. A trial on GPUs (NCCL) gives its workers PyTorch's Flight Recorder
(``launch.flight_recorder``) through ``RunConfig.worker_runtime_env``, its dumps in the
experiment's raytop dir under the trial's id.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from raytop.launch.flight_recorder import dump_prefix, worker_env
from raytop.launch.spec import RunSpec
from raytop.model.paths import join_path
from raytop.probe.trial_registry import register_trial
from raytop.rundir import TRAIN_RUNS_DIR, train_run_name
from raytop.wire.torch_flight_recorder import FLIGHT_RECORDER_VARS


def load_entrypoint(spec: RunSpec) -> Callable[..., Any]:
    """Import ``module:function`` with the spec's folder importable (as on the workers)."""
    folder = str(spec.spec_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module(spec.trainable.module)
    return getattr(module, spec.trainable.function)


def train_storage_path(spec: RunSpec) -> str:
    """Where the torch trials' Train runs go: ``train_runs`` in the experiment folder. Joined
    with ``join_path``: a URI's query (``s3://b/p?endpoint_override=…``) must stay at the
    end, or Ray would read ``/train_runs`` as part of the endpoint."""
    return join_path(spec.experiment_path, TRAIN_RUNS_DIR)


def make_torch_trainable(spec: RunSpec) -> Callable[[dict[str, Any]], None]:
    train_loop = load_entrypoint(spec)
    scaling = spec.scaling
    failure = spec.failure
    num_to_keep = spec.checkpoint.num_to_keep
    train_storage = train_storage_path(spec)
    # Built in the driver, whose environment is the user's (``raytop run``'s): what they
    # set for the Flight Recorder there is kept, and passed on to the workers.
    user_env = {name: os.environ[name] for name in FLIGHT_RECORDER_VARS if name in os.environ}

    def raytop_torch_trial(config: dict[str, Any]) -> None:
        # heavy: Ray Tune, imported in the trial's own worker process (Tune made it)
        from ray import tune

        # Registered first, before torch's import (seconds on a loaded node): placement
        # names the trial's group from the moment its actor is alive.
        ctx = tune.get_context()
        register_trial(ctx.get_experiment_name(), ctx.get_trial_id())
        # heavy: Ray Train, torch and the probes built on them
        import ray.train
        from ray.train.torch import TorchConfig, TorchTrainer
        from ray.tune.integration.ray_train import TuneReportCallback

        from raytop.probe.report_probe import ReportProbe
        from raytop.probe.run_probe import RunProbe

        env = worker_env(spec, ctx.get_trial_id(), user_env=user_env, node_env=os.environ)
        if env:
            _make_dump_folder(spec, ctx.get_trial_id())
        run_config = ray.train.RunConfig(
            name=train_run_name(ctx.get_experiment_name(), ctx.get_trial_id()),
            storage_path=train_storage,
            callbacks=[TuneReportCallback(), ReportProbe(), RunProbe()],
            failure_config=ray.train.FailureConfig(
                max_failures=failure.max_failures,
                controller_failure_limit=failure.controller_failure_limit,
                max_preemption_failures=failure.max_preemption_failures,
            ),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=num_to_keep),
            worker_runtime_env={"env_vars": env} if env else None,
        )
        num_workers = scaling.num_workers
        trainer = TorchTrainer(
            train_loop,
            train_loop_config=dict(config),
            torch_config=TorchConfig(backend=scaling.backend) if scaling.backend else None,
            scaling_config=ray.train.ScalingConfig(
                num_workers=tuple(num_workers) if isinstance(num_workers, tuple) else num_workers,
                use_gpu=scaling.use_gpu,
                resources_per_worker=scaling.resources_per_worker,
                placement_strategy=scaling.placement_strategy,
            ),
            run_config=run_config,
        )
        trainer.fit()

    return raytop_torch_trial


def _make_dump_folder(spec: RunSpec, trial_id: str) -> None:
    """Torch does not create the dump file's folder (it logs an error and goes on): make it
    here, on the trial's node (the experiment folder is shared when nodes are)."""
    # No folder: torch says so in the worker's log if it ever dumps; training goes on.
    with contextlib.suppress(OSError):
        dump_prefix(spec, trial_id).parent.mkdir(parents=True, exist_ok=True)


def make_function_trainable(spec: RunSpec) -> Callable[[dict[str, Any]], Any]:
    """The user's function, preceded by the trial's registration (placement owners)."""
    user_fn = load_entrypoint(spec)

    def raytop_function_trial(config: dict[str, Any]) -> Any:
        # heavy: Ray Tune, imported in the trial's own worker process
        from ray import tune

        ctx = tune.get_context()
        register_trial(ctx.get_experiment_name(), ctx.get_trial_id())
        return user_fn(config)

    return raytop_function_trial


def make_trainable(spec: RunSpec) -> Callable[[dict[str, Any]], Any]:
    if spec.trainable.kind == "torch":
        return make_torch_trainable(spec)
    return make_function_trainable(spec)


def param_space(spec: RunSpec) -> dict[str, Any]:
    """The ``[param_space]`` samplers as Tune search-space objects."""
    # heavy: Ray Tune, only in the driver that builds the search space
    from ray import tune

    space: dict[str, Any] = {}
    for key, sampler in spec.param_space.items():
        values = sampler.values
        if sampler.kind == "grid":
            space[key] = tune.grid_search(list(values))
        elif sampler.kind == "choice":
            space[key] = tune.choice(list(values))
        elif sampler.kind == "uniform":
            space[key] = tune.uniform(*values)
        elif sampler.kind == "loguniform":
            space[key] = tune.loguniform(*values)
        elif sampler.kind == "randint":
            space[key] = tune.randint(*values)
        else:
            space[key] = values
    return space
