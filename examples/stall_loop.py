"""The train loop of examples/stall.toml: rank ``skip_rank`` skips one report."""

import time

import ray.train


def train_loop(config: dict) -> None:
    rank = ray.train.get_context().get_world_rank()
    for epoch in range(config["epochs"]):
        time.sleep(config["epoch_s"])  # the "training"
        if rank == config["skip_rank"] and epoch == config["skip_epoch"]:
            continue  # the bug: this rank does not report this epoch
        ray.train.report({"epoch": epoch, "rank": rank})
