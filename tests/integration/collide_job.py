"""A plain Train script, as a user submits it with ``ray job submit`` (no raytop in it):
its two ranks save different contents under one name, ``model.pt``, into every checkpoint,
so one rank's file overwrites the other's on storage. Torch-free: the bytes are each
rank's own, of one size, so only the probe's content hashes tell the copies apart.

``python collide_job.py [--epochs N]``; it attaches to the cluster of ``RAY_ADDRESS``.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import ray
import ray.train
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer


def train_func(config: dict) -> None:
    rank = ray.train.get_context().get_world_rank()
    for epoch in range(config["epochs"]):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "model.pt"), "wb") as f:
                f.write(bytes([rank]) * 256)  # the same size on every rank, other bytes
            ray.train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    ray.init()
    DataParallelTrainer(
        train_func,
        train_loop_config={"epochs": args.epochs},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(name="collide-job"),
    ).fit()
