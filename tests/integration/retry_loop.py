"""The train loop of tests/integration/test_retries.py: 2 ranks, a checkpoint each epoch;
rank ``fail_rank`` raises at ``fail_epoch`` on the first attempt only (``fail = "once"``:
a marker file in ``marker_dir`` remembers it), on the first two (``"twice"``) or on every
attempt (``"always"``).
``ignore_checkpoint``: every attempt starts at epoch 0, whatever it restored."""

import json
import os
import tempfile
import time

import ray.train


def train_loop(config: dict) -> None:
    rank = ray.train.get_context().get_world_rank()
    start = 0
    restored = ray.train.get_checkpoint()
    if restored is not None and not config["ignore_checkpoint"]:
        with restored.as_directory() as folder, open(os.path.join(folder, "state.json")) as f:
            start = json.load(f)["epoch"] + 1
    marker = os.path.join(config["marker_dir"], "failed-once")
    for epoch in range(start, config["epochs"]):
        time.sleep(config["epoch_s"])
        if rank == config["fail_rank"] and epoch == config["fail_epoch"]:
            if config["fail"] == "always":
                raise RuntimeError(f"boom at epoch {epoch} in pid {os.getpid()}")
            if config["fail"] == "once" and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError(f"boom once at epoch {epoch}")
            second = os.path.join(config["marker_dir"], "failed-twice")
            if config["fail"] == "twice" and not os.path.exists(second):
                open(second if os.path.exists(marker) else marker, "w").close()
                raise RuntimeError(f"boom at epoch {epoch}")
        if rank == 0:
            with tempfile.TemporaryDirectory() as folder:
                with open(os.path.join(folder, "state.json"), "w") as f:
                    json.dump({"epoch": epoch}, f)
                checkpoint = ray.train.Checkpoint.from_directory(folder)
                ray.train.report({"epoch": epoch}, checkpoint=checkpoint)
        else:
            ray.train.report({"epoch": epoch})
