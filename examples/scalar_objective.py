"""The function trainable of examples/scalar.toml: best at x = 3 with score 0."""

import time

from ray import tune


def objective(config: dict) -> None:
    x = config["x"]
    for step in range(config["steps"]):
        time.sleep(0.2)
        tune.report({"score": -((x - 3) ** 2), "step": step})
