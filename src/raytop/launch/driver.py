"""The detached Tune driver process (``python -m raytop.launch.driver``, started by
``launcher.launch``): it outlives the terminal that started it, runs one ``Tuner.fit()``
and, whatever ends it, writes ``exit.json`` (code, error, time) in its raytop dir.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

from raytop.jsonfile import write_json_atomic
from raytop.launch.spec import RunSpec, load_spec, with_experiment
from raytop.launch.trainable import make_trainable, param_space
from raytop.launch.tune_algorithms import build_scheduler, build_search, iteration_budget


def run_driver(spec: RunSpec, address: str, raytop_dir: Path, restore: str | None) -> int:
    """The body of the detached driver process: one ``Tuner.fit()``, of a new tuner or of
    ``Tuner.restore`` (``restore``: what to do with errored trials)."""
    # Ray (and the modules built on it) imported here, inside ``main``'s guard: an import
    # that fails is recorded in exit.json like any other end of the driver.
    import ray
    from ray import tune
    from ray.tune.stopper import CombinedStopper, MaximumIterationStopper, Stopper

    from raytop.probe.trial_probe import TrialProbe, TrialStopper

    pythonpath = os.pathsep.join(p for p in (str(spec.spec_dir), os.environ.get("PYTHONPATH")) if p)
    ray.init(
        address=address,
        runtime_env={"env_vars": {"PYTHONPATH": pythonpath}},
        log_to_driver=True,
    )
    # The job id ties the placement groups Tune creates for pending trials to us.
    write_json_atomic(raytop_dir / "job.json", {"job_id": ray.get_runtime_context().get_job_id()})
    tune_config = tune.TuneConfig(
        metric=spec.tune.metric,
        mode=spec.tune.mode,
        num_samples=spec.tune.num_samples,
        max_concurrent_trials=spec.tune.max_concurrent_trials,
        scheduler=build_scheduler(spec),
        search_alg=build_search(spec),
    )
    stop: Stopper = TrialStopper(str(raytop_dir))
    limit = spec.tune.stop_iterations
    if limit is not None:
        stop = CombinedStopper(stop, MaximumIterationStopper(limit))
    probe = TrialProbe(
        str(raytop_dir),
        metric=spec.tune.metric,
        stop_limit=iteration_budget(spec),
        max_failures=spec.failure.trial_max_failures,
    )
    run_config = tune.RunConfig(
        name=spec.experiment.name,
        storage_path=spec.experiment.storage_path,
        failure_config=tune.FailureConfig(max_failures=spec.failure.trial_max_failures),
        callbacks=[probe],
        stop=stop,
        verbose=1,
    )
    resources = {
        k.lower() if k in ("CPU", "GPU") else k: v for k, v in spec.trial_resources.items()
    }
    trainable = tune.with_resources(make_trainable(spec), resources)
    if restore is not None:  # run config, callbacks and stopper come back from tuner.pkl
        tuner = tune.Tuner.restore(
            spec.experiment_path,
            trainable=trainable,
            resume_unfinished=True,
            resume_errored=restore == "resume",
            restart_errored=restore == "restart",
            param_space=param_space(spec),
        )
    else:
        tuner = tune.Tuner(
            trainable, param_space=param_space(spec), tune_config=tune_config,
            run_config=run_config,
        )  # fmt: skip
    results = tuner.fit()
    print(f"raytop driver: {len(results)} trials, {results.num_errors} errored")
    return 0 if results.num_errors == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raytop-driver")
    parser.add_argument("spec")
    parser.add_argument("--address", required=True)
    parser.add_argument("--raytop-dir", required=True)
    parser.add_argument("--restore", choices=("resume", "restart", "skip"))
    # The experiment as launched: `run --new-name` renames it, a resume takes its folder.
    parser.add_argument("--name", required=True)
    parser.add_argument("--storage-path", required=True)
    parser.add_argument("--spec-dir", help="where the spec's relative paths resolve")
    args = parser.parse_args(argv)
    raytop_dir = Path(args.raytop_dir)
    code, error = 1, None
    try:
        spec = with_experiment(load_spec(args.spec, args.spec_dir), args.name, args.storage_path)
        code = run_driver(spec, args.address, raytop_dir, args.restore)
    except BaseException as exc:  # record why, whatever it was, then re-raise
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
        raise
    finally:
        write_json_atomic(
            raytop_dir / "exit.json", {"code": code, "error": error, "finished_at": time.time()}
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
