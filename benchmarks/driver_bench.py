"""What raytop's TrialProbe costs the user's Tune driver, measured in a real Tune driver.

A real local Ray cluster and a real ``Tuner`` run ``--trials`` trials of a function
trainable that reports ``--reports`` results (Tune reuses its actors, so thousands of
trials run on two CPUs). Tune is let create every trial up front
(``TUNE_MAX_PENDING_TRIALS_PG``), so the table holds all of them from the first result on,
and a sweep larger than ``--budget-from`` trials runs for ``--budget`` seconds (Tune's
``time_budget_s``) rather than to its end: 10,000 trials would take hours on two CPUs, and
every result in the budget is one of a 10,000-row table. Two callbacks ride in the same
driver, on the same results:

- ``TrialProbe``, raytop's, which writes only the trials that changed
  (``probe.trial_table``: a row's segment and the index);
- the baseline, the probe as it was before: every write builds and writes the whole table
  (``trial_row`` of every trial, ``write_json_atomic`` of ``trials.json``), at most every
  0.2 s, while any trial reports.

Each callback's CPU is timed on the driver's thread (``time.thread_time``) around every
call Tune makes to it; per result is its total over the run divided by the results, and
the largest single call is its worst pause of the driver. The driver process's own CPU
(``time.process_time``) is the whole for the shares.

    PYTHONPATH=src .venv/bin/python benchmarks/driver_bench.py [--trials 10,10000] [--reports 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ray
from ray import tune

from raytop.jsonfile import write_json_atomic
from raytop.probe.trial_probe import TrialProbe, trial_row

CALLS = ("on_trial_result", "on_trial_start", "on_trial_complete", "on_trial_error",
         "on_step_end", "on_experiment_end")  # fmt: skip


class Timed:
    """Times each of the wrapped callback's calls, on the thread Tune calls it from."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def wrap(self, callback: Any) -> Any:
        for name in CALLS:
            method = getattr(callback, name)

            def timed(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                start = time.thread_time()
                try:
                    return _method(*args, **kwargs)
                finally:
                    self.calls.append(time.thread_time() - start)

            setattr(callback, name, timed)
        return callback


class WholeTableProbe(tune.Callback):
    """The baseline: the TrialProbe of before, which rewrote the whole table (every
    trial's row) whenever a trial reported, at most every ``min_interval_s``."""

    def __init__(self, path: Path, min_interval_s: float = 0.2) -> None:
        self._path = path
        self._min_interval_s = min_interval_s
        self._trials: list[Any] = []
        self._results: dict[str, dict[str, Any]] = {}
        self._last_write = 0.0
        self._dirty = False
        self.writes = 0

    def _flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self._dirty or (not force and now - self._last_write < self._min_interval_s):
            return
        rows = [trial_row(t, self._results.get(t.trial_id)) for t in self._trials]
        write_json_atomic(self._path, {"updated_at": time.time(), "trials": rows})
        self._dirty, self._last_write = False, now
        self.writes += 1

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._results[trial.trial_id] = dict(result)
        self._trials, self._dirty = trials, True
        self._flush()

    def on_trial_start(self, iteration, trials, trial, **info):
        self._trials, self._dirty = trials, True

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._trials, self._dirty = trials, True

    def on_trial_error(self, iteration, trials, trial, **info):
        self._trials, self._dirty = trials, True

    def on_step_end(self, iteration, trials, **info):
        if len(trials) != len(self._trials):
            self._trials, self._dirty = trials, True
        self._flush()

    def on_experiment_end(self, trials, **info):
        self._trials, self._dirty = trials, True
        self._flush(force=True)


def trainable(config: dict[str, Any]) -> None:
    for i in range(config["reports"]):
        tune.report({"loss": config["x"] / (i + 1)})


def _summary(timed: Timed, results: int) -> dict[str, Any]:
    calls = sorted(timed.calls)
    return {
        "cpu_s": sum(calls),
        "per_result_s": sum(calls) / max(1, results),
        "calls": len(calls),
        "call_p50_s": statistics.median(calls) if calls else 0.0,
        "call_p99_s": calls[int(0.99 * (len(calls) - 1))] if calls else 0.0,
        "call_max_s": calls[-1] if calls else 0.0,
    }


def run(trials: int, reports: int, root: Path, budget_s: float | None) -> dict[str, Any]:
    """One Tune run of ``trials`` trials with both probes (for at most ``budget_s``);
    their costs and the driver's."""
    raytop_dir = root / f"raytop-{trials}"
    ours, baseline = Timed(), Timed()
    probe = ours.wrap(TrialProbe(str(raytop_dir), metric="loss"))
    whole = baseline.wrap(WholeTableProbe(root / f"whole-{trials}.json"))
    tuner = tune.Tuner(
        trainable,
        param_space={"x": tune.uniform(0.0, 1.0), "reports": reports},
        tune_config=tune.TuneConfig(num_samples=trials, reuse_actors=True,
                                    time_budget_s=budget_s),
        run_config=tune.RunConfig(
            name=f"driver-bench-{trials}", storage_path=str(root / "storage"),
            callbacks=[probe, whole], verbose=0,
        ),
    )  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    grid = tuner.fit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    results = sum(r.metrics.get("training_iteration", 0) for r in grid if r.metrics)
    table = sum(f.stat().st_size for f in (raytop_dir / "trials").iterdir())
    return {
        "trials": trials, "reports": reports, "results": results, "errors": grid.num_errors,
        "budget_s": budget_s,
        "trials_run": sum(1 for r in grid if (r.metrics or {}).get("training_iteration")),
        "driver_wall_s": wall, "driver_cpu_s": cpu,
        "probe": {**_summary(ours, results), "table_bytes": table},
        "whole_table": {**_summary(baseline, results), "writes": whole.writes,
                        "table_bytes": (root / f"whole-{trials}.json").stat().st_size},
    }  # fmt: skip


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def report(result: dict[str, Any]) -> None:
    print(f"\n== {result['trials']} trials in the table, {result['trials_run']} run, "
          f"{result['results']} results ({result['errors']} errors): driver "
          f"{result['driver_wall_s']:.1f} s wall, {result['driver_cpu_s']:.1f} s CPU")  # fmt: skip
    for name in ("probe", "whole_table"):
        r = result[name]
        share = r["cpu_s"] / result["driver_cpu_s"] if result["driver_cpu_s"] else 0.0
        print(f"   {name:<12} per result {_ms(r['per_result_s'])}, total {r['cpu_s']:.2f} s "
              f"({share:.1%} of the driver's CPU); calls {r['calls']}: p50 "
              f"{_ms(r['call_p50_s'])}, p99 {_ms(r['call_p99_s'])}, max {_ms(r['call_max_s'])}"
              f"; table {r['table_bytes'] / 1e6:.2f} MB")  # fmt: skip
    ratio = result["whole_table"]["per_result_s"] / max(result["probe"]["per_result_s"], 1e-9)
    print(f"   the whole-table baseline costs {ratio:.2f}x the probe per result")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="10,10000", help="comma-separated trial counts")
    parser.add_argument("--reports", type=int, default=3, help="results per trial")
    parser.add_argument(
        "--budget",
        type=float,
        default=420.0,
        help="seconds a large sweep runs (Tune's time_budget_s)",
    )
    parser.add_argument(
        "--budget-from",
        type=int,
        default=1000,
        help="sweeps of this many trials or more run for --budget only",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs; python "
          f"{sys.version.split()[0]}, ray {ray.__version__}")  # fmt: skip
    results = []
    # Every trial created up front: the table is whole from the first result on.
    os.environ["TUNE_MAX_PENDING_TRIALS_PG"] = str(max(int(n) for n in args.trials.split(",")))
    # Ray 2.60's local ray.init() would write ~/.ray/auth_token, and every `ray start` on
    # this machine turn token authentication on from then on (docs/RAY_FACTS.md#token-auth).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    with tempfile.TemporaryDirectory(prefix="raytop-driver-") as root:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                 _temp_dir=str(Path(root) / "ray"))  # fmt: skip
        try:
            for trials in (int(n) for n in args.trials.split(",")):
                budget = args.budget if trials >= args.budget_from else None
                results.append(run(trials, args.reports, Path(root), budget))
                report(results[-1])
        finally:
            ray.shutdown()
    print(f"load average at the end {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
