"""The train loop of tests/integration/test_hangs.py: every step computes (a sleep with
jitter), all-reduces a tensor with gloo, and reports; at step ``hang_step`` the chosen
fault starts and its start time is written to ``marker_dir/hang_started`` (the tests
measure detection from it). ``mode``:

- ``healthy``: jittered steps (± ``jitter``), a checkpoint every 10 steps, forever fine;
- ``sleep_before_all_reduce``: rank ``bad_rank`` sleeps inside the step before its
  all_reduce, the others wait in the collective;
- ``data_loader``: rank ``bad_rank``'s Dataset blocks in ``__getitem__``;
- ``io``: rank ``bad_rank`` blocks reading a socket that never sends, before its
  all_reduce (the others wait in the collective);
- ``bad_metric``: every rank reports a metric the controller cannot load (it fails);
- ``stuck_metric``: every rank reports a metric whose loading never ends on the
  controller (the controller is stuck);
- ``slow_upload``: rank 0's checkpoint goes through an upload function that crawls;
- ``straggler``: rank ``bad_rank`` computes ``slow_factor`` times longer each step.
"""

import os
import random
import shutil
import socket
import tempfile
import time

import ray.train
import torch
import torch.distributed as dist
from ray.train import Checkpoint
from torch.utils.data import DataLoader, Dataset

HANG_S = 600.0  # longer than any test waits: the fault lasts until the run is stopped


def mark(config: dict) -> None:
    path = os.path.join(config["marker_dir"], "hang_started")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(repr(time.time()))


class Steps(Dataset):
    """One item a step; on the bad rank, item ``hang_step`` never comes (data_loader)."""

    def __init__(self, config: dict, rank: int) -> None:
        self.config, self.rank = config, rank

    def __len__(self) -> int:
        return self.config["steps"]

    def __getitem__(self, i: int):
        config = self.config
        bad = config["mode"] == "data_loader" and self.rank == config["bad_rank"]
        if bad and i == config["hang_step"]:
            mark(config)
            time.sleep(HANG_S)
        return torch.tensor([float(i)])


def crawling_upload(checkpoint, dir_name):
    """A custom upload that takes forever (an overloaded or throttled store)."""
    time.sleep(HANG_S)
    target = os.path.join(ray.train.get_context().get_storage().experiment_fs_path, dir_name)
    shutil.copytree(checkpoint.path, target, dirs_exist_ok=True)
    return Checkpoint(target)


class Unpicklable:
    """A metric value the controller cannot load: it fails to unpickle there."""

    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("this metric cannot be loaded by the controller")


class Endless:
    """A metric value whose loading on the controller never ends."""

    def __reduce__(self):
        return (time.sleep, (HANG_S,))


def train_loop(config: dict) -> None:
    rank = ray.train.get_context().get_world_rank()
    mode, bad, hang_step = config["mode"], config["bad_rank"], config["hang_step"]
    rng = random.Random(rank)
    loader = DataLoader(Steps(config, rank), batch_size=1, shuffle=False, num_workers=0)
    for step, batch in enumerate(loader):
        step_s = config["step_s"] * (1 + config["jitter"] * (2 * rng.random() - 1))
        if mode == "straggler" and rank == bad:
            step_s = config["step_s"] * config["slow_factor"]
        time.sleep(step_s)
        if mode == "sleep_before_all_reduce" and rank == bad and step == hang_step:
            mark(config)
            time.sleep(HANG_S)
        if mode == "io" and rank == bad and step == hang_step:
            mark(config)
            server = socket.create_server(("127.0.0.1", 0))
            peer = socket.create_connection(server.getsockname())
            peer.makefile("rb").read(1)  # in socket.py's reader: the server never sends
        total = batch.clone()
        dist.all_reduce(total)
        metrics = {"step": step, "total": float(total.item())}
        if mode in ("bad_metric", "stuck_metric") and step == hang_step:
            mark(config)
            metrics["bad"] = Unpicklable() if mode == "bad_metric" else Endless()
        checkpoint, upload = None, {}
        every = config["checkpoint_every"]
        if rank == 0 and every and step % every == every - 1:
            folder = tempfile.mkdtemp()
            with open(os.path.join(folder, "state.pt"), "wb") as f:
                f.write(b"s" * config["checkpoint_bytes"])
            checkpoint = Checkpoint.from_directory(folder)
            if mode == "slow_upload" and step >= hang_step:
                mark(config)
                upload = {"checkpoint_upload_fn": crawling_upload}
        ray.train.report(metrics, checkpoint=checkpoint, **upload)
