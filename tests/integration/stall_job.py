"""A plain Train script, as a user submits it with ``ray job submit`` (no raytop in it):
rank 1 stops before one of its reports, so rank 0 waits in that ``ray.train.report`` for
it. Torch-free.

``python stall_job.py [--reports N] [--stuck-at I]``; it attaches to ``RAY_ADDRESS``.
"""

from __future__ import annotations

import argparse
import time

import ray
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer


def train_func(config: dict) -> None:
    rank = ray.train.get_context().get_world_rank()
    for i in range(config["reports"]):
        if rank == 1 and i == config["stuck_at"]:
            time.sleep(3600)  # report i never comes from rank 1
        time.sleep(0.3)
        ray.train.report({"i": i})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--reports", type=int, default=100)
    parser.add_argument("--stuck-at", type=int, default=5)
    args = parser.parse_args()
    ray.init()
    DataParallelTrainer(
        train_func,
        train_loop_config={"reports": args.reports, "stuck_at": args.stuck_at},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(name="stall-job"),
    ).fit()
