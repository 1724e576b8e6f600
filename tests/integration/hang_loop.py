"""The train loop of tests/integration/test_hangs.py: every step computes (a sleep with
jitter), all-reduces a tensor with gloo, and reports. ``phases`` are the faults of one run,
in order: phase ``i`` starts at step ``hang_step + i * phase_gap``, writes its start time
to ``marker_dir/hang_started_<phase>`` (the tests measure detection from it) and lasts
until the test writes ``marker_dir/release_<phase>`` (or ``HANG_S``). The gap is long
enough for the last fault's long report interval to leave the run's recent intervals
(a rank's last 32), so each fault is judged on the run's usual rhythm. A phase:

- ``healthy``: no fault (jittered steps, a checkpoint every ``checkpoint_every`` steps);
- ``sleep_before_all_reduce``: rank ``bad_rank`` sleeps inside the step before its
  all_reduce, the others wait in the collective;
- ``data_loader``: rank ``bad_rank``'s Dataset blocks in ``__getitem__``;
- ``io``: rank ``bad_rank`` blocks reading a socket that sends nothing until the release,
  before its all_reduce (the others wait in the collective);
- ``bad_metric``: every rank reports a metric the controller cannot load (it fails);
- ``stuck_metric``: every rank reports a metric whose loading never ends on the
  controller (the controller is stuck; never released);
- ``slow_upload``: rank 0's first checkpoint of the phase goes through an upload
  function that crawls;
- ``straggler``: rank ``bad_rank`` computes ``slow_factor`` times longer each step.
"""

import functools
import os
import random
import shutil
import socket
import tempfile
import threading
import time

import ray.train
import torch
import torch.distributed as dist
from ray.train import Checkpoint
from torch.utils.data import DataLoader, Dataset

HANG_S = 600.0  # longer than any test waits: unreleased, a fault lasts until the stop


def phase_step(config: dict, phase: str) -> int | None:
    """The step at which ``phase`` starts (None: not a phase of this run)."""
    phases = config["phases"]
    if phase not in phases:
        return None
    return config["hang_step"] + phases.index(phase) * config["phase_gap"]


def starts(config: dict, phase: str, step: int) -> bool:
    return phase_step(config, phase) == step


def mark(config: dict, phase: str) -> None:
    path = os.path.join(config["marker_dir"], f"hang_started_{phase}")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(repr(time.time()))


def released(config: dict, phase: str) -> bool:
    return os.path.exists(os.path.join(config["marker_dir"], f"release_{phase}"))


def hold(config: dict, phase: str) -> None:
    """The fault itself: a sleep until the test releases ``phase`` (or ``HANG_S``)."""
    end = time.monotonic() + HANG_S
    while not released(config, phase) and time.monotonic() < end:
        time.sleep(0.2)


class Steps(Dataset):
    """One item a step; on the bad rank, item ``hang_step`` is late (data_loader)."""

    def __init__(self, config: dict, rank: int) -> None:
        self.config, self.rank = config, rank

    def __len__(self) -> int:
        return self.config["steps"]

    def __getitem__(self, i: int):
        config = self.config
        if self.rank == config["bad_rank"] and starts(config, "data_loader", i):
            mark(config, "data_loader")
            hold(config, "data_loader")
        return torch.tensor([float(i)])


def crawling_upload(config, checkpoint, dir_name):
    """A custom upload that takes until the release (an overloaded or throttled store)."""
    hold(config, "slow_upload")
    target = os.path.join(ray.train.get_context().get_storage().experiment_fs_path, dir_name)
    shutil.copytree(checkpoint.path, target, dirs_exist_ok=True)
    return Checkpoint(target)


def blocked_read(config: dict) -> None:
    """Read a socket whose peer sends one byte only at the release: the train loop waits
    in socket.py's reader (an I/O hang) until then."""
    server = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(server.getsockname())

    def send_at_release() -> None:
        conn, _ = server.accept()
        hold(config, "io")
        conn.sendall(b"x")

    threading.Thread(target=send_at_release, daemon=True).start()
    peer.makefile("rb").read(1)


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
    bad = config["bad_rank"]
    rng = random.Random(rank)
    loader = DataLoader(Steps(config, rank), batch_size=1, shuffle=False, num_workers=0)
    slow = "straggler" in config["phases"] and rank == bad
    upload_at = phase_step(config, "slow_upload")
    for step, batch in enumerate(loader):
        step_s = config["step_s"] * (1 + config["jitter"] * (2 * rng.random() - 1))
        if slow:
            step_s = config["step_s"] * config["slow_factor"]
        time.sleep(step_s)
        if rank == bad and starts(config, "sleep_before_all_reduce", step):
            mark(config, "sleep_before_all_reduce")
            hold(config, "sleep_before_all_reduce")
        if rank == bad and starts(config, "io", step):
            mark(config, "io")
            blocked_read(config)
        total = batch.clone()
        dist.all_reduce(total)
        metrics = {"step": step, "total": float(total.item())}
        for fault, value in (("bad_metric", Unpicklable), ("stuck_metric", Endless)):
            if starts(config, fault, step):
                mark(config, fault)
                metrics["bad"] = value()
        checkpoint, upload = None, {}
        every = config["checkpoint_every"]
        if rank == 0 and every and step % every == every - 1:
            folder = tempfile.mkdtemp()
            with open(os.path.join(folder, "state.pt"), "wb") as f:
                f.write(b"s" * config["checkpoint_bytes"])
            checkpoint = Checkpoint.from_directory(folder)
            if upload_at is not None and upload_at <= step < upload_at + every:
                mark(config, "slow_upload")
                upload = {"checkpoint_upload_fn": functools.partial(crawling_upload, config)}
        ray.train.report(metrics, checkpoint=checkpoint, **upload)
