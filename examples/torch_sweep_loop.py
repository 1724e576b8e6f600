"""The per-worker train loop of examples/torch_sweep.toml.

Shows what Ray Train leaves to the user (docs/RAY_FACTS.md#train-leaves-state-to-user): rank
0 saves model, optimizer, LR scheduler, RNG states and the data position (epoch) explicitly;
every rank calls ``ray.train.report`` the same number of times (the others with
``checkpoint=None``); metrics are averaged across ranks with a collective, because Train
does not.

``epoch_seconds`` paces the example so that it is worth watching: an epoch of this small
problem takes milliseconds, so each rank waits out the rest of ``epoch_seconds`` before it
reports (0: no pacing, as the tests run it).
"""

import os
import random
import tempfile
import time

import ray.train
import torch
import torch.distributed as dist
from ray.train import Checkpoint
from ray.train.torch import prepare_data_loader, prepare_model
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

STATE_FILE = "state.pt"


def synthetic_data(seed: int, n: int = 1024, features: int = 8):
    """A fixed regression problem: the same data on every rank and every run."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    w = torch.randn(features, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def train_loop(config: dict) -> None:
    ctx = ray.train.get_context()
    rank, world_size = ctx.get_world_rank(), ctx.get_world_size()
    seed = int(config.get("seed", 0))
    torch.manual_seed(seed + rank)
    random.seed(seed + rank)

    x, y = synthetic_data(seed)
    model = nn.Sequential(nn.Linear(x.shape[1], config["hidden"]), nn.ReLU(),
                          nn.Linear(config["hidden"], 1))  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    start_epoch = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, STATE_FILE), weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"][rank % len(state["torch_rng"])])
        random.setstate(state["python_rng"])
        start_epoch = state["epoch"] + 1

    model = prepare_model(model)
    loader = prepare_data_loader(
        DataLoader(TensorDataset(x, y), batch_size=config["batch_size"], shuffle=True)
    )
    loss_fn = nn.MSELoss()

    pace_s = float(config.get("epoch_seconds", 0))
    for epoch in range(start_epoch, config["epochs"]):
        epoch_started = time.monotonic()
        if world_size > 1:
            loader.sampler.set_epoch(epoch)  # a different shuffle per epoch, same on all ranks
        model.train()
        totals = torch.zeros(2)  # (sum of losses, number of samples) on this rank
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            totals += torch.tensor([loss.item() * len(xb), len(xb)])
        scheduler.step()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(totals)  # sum over ranks, then average: every rank agrees
        metrics = {"loss": float(totals[0] / totals[1]), "epoch": epoch,
                   "lr": scheduler.get_last_lr()[0], "start_epoch": start_epoch}  # fmt: skip

        # Every rank's RNG state goes into rank 0's checkpoint (a collective: all ranks call).
        rng_states = [torch.get_rng_state()]
        if dist.is_available() and dist.is_initialized():
            rng_states = [None] * world_size
            dist.all_gather_object(rng_states, torch.get_rng_state())

        time.sleep(max(0.0, pace_s - (time.monotonic() - epoch_started)))
        if rank == 0:
            with tempfile.TemporaryDirectory() as folder:
                inner = model.module if hasattr(model, "module") else model
                torch.save(
                    {
                        "model": inner.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "torch_rng": rng_states,
                        "python_rng": random.getstate(),
                        "epoch": epoch,  # the data position: whole epochs are done
                    },
                    os.path.join(folder, STATE_FILE),
                )
                ray.train.report(metrics, checkpoint=Checkpoint.from_directory(folder))
        else:
            ray.train.report(metrics, checkpoint=None)
