"""How rank_0 and rank_1 here were recorded (run by hand, never by the tests: it needs
torch). PyTorch 2.13 (CPU build) records gloo collectives into its Flight Recorder too; its
in-process dump (``torch._C._distributed_c10d._dump_fr_trace``) is the same pickled dict
(``FlightRecorder<>::dump``, version "2.10") that ProcessGroupNCCL writes to
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>`` on a timeout or a write to its dump pipe.

The hang recorded: two ranks all-reduce three times on the default group and once on a
sub-group; then rank 0 enters a fourth all-reduce on the default group that rank 1 has not
reached. Both dump there (rank 0 while its fourth is pending), then rank 1 joins so the
script ends. ``json/rank_<N>``: the same moment as torch's JSON dump
(``_dump_fr_trace_json``: no stack frames, pg_status values as strings).

    python tests/data/flight_recorder/record_dumps.py tests/data/flight_recorder
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json


def rank_main(rank: int, world: int, out: str, barrier) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29571", TORCH_FR_BUFFER_SIZE="2000")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    pair = dist.new_group([0, 1], group_desc="pair")
    t = torch.ones(4)
    for _ in range(3):
        dist.all_reduce(t)
    dist.all_reduce(t, group=pair)
    pending = dist.all_reduce(t, async_op=True) if rank == 0 else None
    with open(os.path.join(out, f"rank_{rank}"), "wb") as f:
        f.write(_dump_fr_trace())
    os.makedirs(os.path.join(out, "json"), exist_ok=True)
    with open(os.path.join(out, "json", f"rank_{rank}"), "wb") as f:
        f.write(_dump_fr_trace_json())
    barrier.wait()  # both dumped: rank 1 now joins the fourth all-reduce
    if rank == 1:
        dist.all_reduce(t)
    else:
        pending.wait()
    dist.destroy_process_group()


if __name__ == "__main__":
    barrier = mp.get_context("spawn").Barrier(2)
    mp.spawn(rank_main, args=(2, sys.argv[1], barrier), nprocs=2)
