"""The detached Tune driver (DESIGN decision 4): it outlives the terminal that started it.

``launch(spec, target)`` starts ``python -m raytop.launch.driver`` in its own session with
its output in ``<raytop_dir>/driver.log`` and writes ``driver.json`` (pid and its start
time, host, spec, address, experiment path). When the driver ends it writes ``exit.json``.
The raytop dir sits inside the experiment folder for local storage (see ``raytop.rundir``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from raytop.home import register_experiment
from raytop.jsonfile import open_log, read_json, write_atomic, write_json_atomic
from raytop.launch.cluster import LOOPBACK_ENV, Target
from raytop.launch.spec import RunSpec, load_spec
from raytop.process_identity import process_create_time
from raytop.rundir import STOP_MARKER, raytop_dir_for

# Set for launched drivers unless the user set them; propagated by Ray to the Train
# controller and workers (RAY_NOTES h). The 0.5 s poll lets a worker's report reach the
# screen within a second instead of waiting for Train's default 2 s poll.
DRIVER_ENV_DEFAULTS = {
    "RAY_TRAIN_ENABLE_STATE_TRACKING": "1",
    "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5",
    # A missing metric becomes a raytop finding instead of crashing the whole sweep.
    "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",
    "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
}


@dataclass(frozen=True)
class Launched:
    pid: int
    raytop_dir: Path
    log_path: Path


def launch(spec: RunSpec, target: Target, errored: str | None = None) -> Launched:
    """Start the detached driver: a new sweep, or (``errored`` set: resume | restart | skip)
    ``Tuner.restore`` of the experiment, with what to do with its errored trials.

    Only raytop's own bookkeeping of the previous driver is replaced; Tune's and Train's
    files are never touched here. ``preflight`` first (SpecError, one line): every launch
    and actual resume imports the entrypoint and proves the storage writable here."""
    from raytop.launch.preflight import preflight

    preflight(spec)
    raytop_dir = raytop_dir_for(spec.experiment_path, spec.experiment.name)
    raytop_dir.mkdir(parents=True, exist_ok=True)
    spec_file = str(spec.path)
    if errored is not None:  # a resume runs the copy saved at launch: keep naming the user's
        previous = read_json(raytop_dir / "driver.json")
        if isinstance(previous, dict) and isinstance(previous.get("spec"), str):
            spec_file = previous["spec"]
    for stale in ("exit.json", "trials.json", "job.json", STOP_MARKER):
        (raytop_dir / stale).unlink(missing_ok=True)
    if errored is None:  # the bytes validated, not the file as it may be by now
        write_atomic(raytop_dir / "spec.toml", spec.source)
    log_path = raytop_dir / "driver.log"
    env = {**DRIVER_ENV_DEFAULTS, **os.environ}
    env.pop("RAY_ADDRESS", None)  # the driver gets the resolved address explicitly
    if target.loopback_only:
        env.update(LOOPBACK_ENV)
    with open_log(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "raytop.launch.driver", str(spec.path),
             "--address", target.address, "--raytop-dir", str(raytop_dir),
             "--name", spec.experiment.name, "--storage-path", spec.experiment.storage_path,
             "--spec-dir", str(spec.spec_dir),
             *(["--restore", errored] if errored else [])],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env, cwd=spec.spec_dir,
        )  # fmt: skip
    write_json_atomic(
        raytop_dir / "driver.json",
        {
            "pid": proc.pid,
            # With the pid, what proves later that a live pid is still this driver.
            "pid_create_time": process_create_time(proc.pid),
            "host": socket.gethostname(),
            "spec": spec_file,
            "address": target.address,
            "experiment_name": spec.experiment.name,
            "experiment_path": spec.experiment_path,
            "metric": spec.tune.metric,
            "mode": spec.tune.mode,
            "started_at": time.time(),
        },
    )
    register_experiment(spec.experiment.name, spec.experiment_path, raytop_dir)
    return Launched(proc.pid, raytop_dir, log_path)


def with_experiment(spec: RunSpec, name: str, storage_path: str) -> RunSpec:
    """``spec`` for the experiment ``storage_path/name`` (the file's own name may differ)."""
    experiment = dataclasses.replace(spec.experiment, name=name, storage_path=storage_path)
    return dataclasses.replace(spec, experiment=experiment)


def run_driver(spec: RunSpec, address: str, raytop_dir: Path, restore: str | None) -> int:
    """The body of the detached driver process: one ``Tuner.fit()``, of a new tuner or of
    ``Tuner.restore`` (``restore``: what to do with errored trials)."""
    import ray
    from ray import tune
    from ray.tune.stopper import CombinedStopper, MaximumIterationStopper, Stopper

    from raytop.launch.trainable import make_trainable, param_space
    from raytop.launch.tune_algorithms import build_scheduler, build_search, iteration_budget
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
