"""The train loop of tests/integration/test_retries.py: one rank, a checkpoint each epoch.
Each attempt starts its worker group afresh, a Python process per rank importing Train and
torch (~4.5 CPU-s each), and retries are what these tests are about, not world sizes (the
multi-node test retries two ranks, a node killed under one). Each trial is one ``case`` of
``CASES`` (several cases share one experiment, one trial each, so one Tune driver serves
them): rank ``fail_rank`` raises at ``fail_epoch`` on the first attempt only (``fail =
"once"``: a marker file in the case's own folder under ``marker_dir`` remembers it), on the
first two (``"twice"``), on every attempt (``"always"``) or never. ``ignore_checkpoint``:
every attempt starts at epoch 0, whatever it restored."""

import json
import os
import tempfile
import time

import ray.train

CASES = {
    # retried once, from the checkpoint of epoch 0
    "once": {"epochs": 3, "fail_epoch": 1, "fail": "once", "ignore_checkpoint": False},
    # retried once, but the loop starts again at epoch 0: goes backwards
    "restart_ignores": {"epochs": 4, "fail_epoch": 2, "fail": "once", "ignore_checkpoint": True},
    # the same error on every attempt: a retry loop
    "always": {"epochs": 2, "fail_epoch": 0, "fail": "always", "ignore_checkpoint": False},
    # fails on its first two attempts, then finishes
    "twice": {"epochs": 3, "fail_epoch": 1, "fail": "twice", "ignore_checkpoint": False},
    # never fails; slow enough to be killed mid-run, and ignores what it restores
    "resume_ignores": {
        "epochs": 16,
        "fail_epoch": -1,
        "fail": "never",
        "ignore_checkpoint": True,
        "epoch_s": 1.0,
    },  # fmt: skip
}


def train_loop(config: dict) -> None:
    case = {"epoch_s": 0.2, "fail_rank": 0, **CASES[config["case"]]}
    rank = ray.train.get_context().get_world_rank()
    start = 0
    restored = ray.train.get_checkpoint()
    if restored is not None and not case["ignore_checkpoint"]:
        with restored.as_directory() as folder, open(os.path.join(folder, "state.json")) as f:
            start = json.load(f)["epoch"] + 1
    markers = os.path.join(config["marker_dir"], config["case"])
    os.makedirs(markers, exist_ok=True)
    marker = os.path.join(markers, "failed-once")
    for epoch in range(start, case["epochs"]):
        time.sleep(case["epoch_s"])
        if rank == case["fail_rank"] and epoch == case["fail_epoch"]:
            _after_reported(markers, epoch - 1)
            if case["fail"] == "always":
                raise RuntimeError(f"boom at epoch {epoch} in pid {os.getpid()}")
            if case["fail"] == "once" and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError(f"boom once at epoch {epoch}")
            second = os.path.join(markers, "failed-twice")
            if case["fail"] == "twice" and not os.path.exists(second):
                open(second if os.path.exists(marker) else marker, "w").close()
                raise RuntimeError(f"boom at epoch {epoch}")
        if rank == 0:
            with tempfile.TemporaryDirectory() as folder:
                with open(os.path.join(folder, "state.json"), "w") as f:
                    json.dump({"epoch": epoch}, f)
                checkpoint = ray.train.Checkpoint.from_directory(folder)
                ray.train.report({"epoch": epoch}, checkpoint=checkpoint)
            open(os.path.join(markers, f"reported-{epoch}"), "w").close()
        else:
            ray.train.report({"epoch": epoch})


def _after_reported(markers: str, epoch: int) -> None:
    """Wait until rank 0's report (and checkpoint) of ``epoch`` is in Train's queue, and a
    second more. Train registers a checkpoint only once its controller has polled every
    rank's result of that round; a rank that raised before then would lose it to the
    retry, which restores the round before. Under a loaded CI machine rank 0's upload took
    more than this loop's 0.2 s epoch."""
    if epoch < 0:
        return
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(markers, f"reported-{epoch}")):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank 0 never reported epoch {epoch}")
        time.sleep(0.05)
    time.sleep(1.0)
