"""Train loop for freshness_bench.py: every rank reports its wall-clock time, often."""

import time

import ray.train


def train_loop(config: dict) -> None:
    for step in range(config["steps"]):
        time.sleep(config["interval_s"])
        ray.train.report({"reported_at": time.time(), "step": step})
