"""Two plain Train scripts, as users submit them with ``ray job submit`` (no raytop in
them), each spending its time on one kind of work until it is stopped:

- ``data_loader``: a DataLoader whose dataset reads each sample slowly (a stand-in for
  slow storage), two ranks with DDP, a report every 20 batches;
- ``compute``: one rank busy in its own math (matrix products on one thread), a report
  after each three seconds of it.

``python share_job.py data_loader|compute``; it attaches to the cluster of ``RAY_ADDRESS``.
"""

from __future__ import annotations

import sys
import time

import ray.train
import ray.train.torch
import torch
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


class SlowSamples(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, index: int):
        time.sleep(0.01)  # a sample read from slow storage
        return torch.randn(8), torch.randn(1)


def data_loader_loop(config: dict) -> None:
    model = ray.train.torch.prepare_model(torch.nn.Linear(8, 1))
    loader = ray.train.torch.prepare_data_loader(
        torch.utils.data.DataLoader(SlowSamples(), batch_size=8)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 19:
            ray.train.report({"loss": loss.item(), "step": step})


def compute_loop(config: dict) -> None:
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    step = 0
    while True:
        until = time.monotonic() + 3.0  # three seconds of math between reports
        while time.monotonic() < until:
            a = torch.tanh(a @ a.T / 256.0)
        step += 1
        ray.train.report({"step": step, "mean": float(a.mean())})


if __name__ == "__main__":
    kind = sys.argv[1]
    loop, workers = (data_loader_loop, 2) if kind == "data_loader" else (compute_loop, 1)
    TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=workers)).fit()
