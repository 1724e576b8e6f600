"""What Ray Train's own actors cost beside a run's workers (docs/PERFORMANCE.md, "Where the
suite's CPU goes, the whole suite by kind of process").

Starts a local 4-CPU cluster (no dashboard), runs a 2-rank TorchTrainer that reports once a
second for ``--seconds``, and prints the CPU-seconds of every ``ray::`` process by its name
(the placement-group cleaner, the synchronization actor, the dataset manager, ...) at a few
moments and at the end: what each costs to start, and what it costs a minute while the run
goes on. The test suite's CPU is mostly Train runs; this says how much of a run is Ray's
helpers, which no test can drop (every user's run has them).

    .venv/bin/python benchmarks/train_helpers.py [--seconds 80]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections import Counter

# A sibling script (its folder is sys.path[0] when run): the same /proc sampler and kinds of
# process as the suite's breakdown in docs/PERFORMANCE.md.
from cpu_by_process import PERIOD_S, kind, sample


def actors(seen: dict[tuple[int, str], tuple[float, str]]) -> str:
    """CPU-seconds so far of each kind of Ray actor process, on one line."""
    by_kind: Counter[str] = Counter()
    for cpu_s, command in seen.values():
        if (name := kind(command)).startswith("actor:"):
            by_kind[name.removeprefix("actor:")] += cpu_s
    return " ".join(f"{name}={cpu_s:.2f}" for name, cpu_s in sorted(by_kind.items()))


def loop(config: dict) -> None:
    import ray.train

    for i in range(config["seconds"]):
        time.sleep(1)
        ray.train.report({"i": i})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=80)
    args = parser.parse_args()

    import ray
    import ray.train
    from ray.train.torch import TorchTrainer

    # Ray 2.60's local ray.init() would write ~/.ray/auth_token, and every `ray start` on
    # this machine turn token authentication on from then on (docs/RAY_FACTS.md#token-auth).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)  # fmt: skip
    tree, seen = {os.getpid()}, {}  # this process's tree: the cluster ray.init started
    started, moments = time.monotonic(), list(range(25, args.seconds, 30))

    def watch() -> None:
        while True:
            sample(tree, seen)
            if moments and time.monotonic() - started >= moments[0]:
                print(f"t={moments.pop(0)}s {actors(seen)}", flush=True)
            time.sleep(PERIOD_S)

    threading.Thread(target=watch, daemon=True).start()
    TorchTrainer(
        loop, train_loop_config={"seconds": args.seconds},
        scaling_config=ray.train.ScalingConfig(num_workers=2),
        run_config=ray.train.RunConfig(name="helpers", storage_path=tempfile.mkdtemp()),
    ).fit()  # fmt: skip
    sample(tree, seen)
    print(f"end {actors(seen)}")
    ray.shutdown()


if __name__ == "__main__":
    main()
