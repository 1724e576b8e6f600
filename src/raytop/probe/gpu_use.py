"""A rank's GPU, as NVML sees it: how busy its device is (the percent of the last sample
period a kernel ran, NVML's utilisation rate) and how much of its memory is in use (every
process on it, as ``nvidia-smi`` shows, not only this rank's tensors), beside where the
rank's time goes. GPU only: on a rank without CUDA both are None.

Read through ``torch.cuda.utilization`` / ``torch.cuda.device_memory_used`` (which map the
rank's CUDA device to NVML's index, ``CUDA_VISIBLE_DEVICES`` included; both need NVML's
Python binding, ``pynvml`` from the ``nvidia-ml-py`` package), or through ``pynvml``
itself when torch is not loaded. Once a heartbeat (a second), on the probe's thread; never
imports torch (the rank's own import is used, if any), and any error reads as unknown.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def gpu_use() -> tuple[float | None, int | None]:
    """(utilisation %, memory used in bytes) of this rank's GPU; None each when unknown."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return _through_torch(torch)
    pynvml = sys.modules.get("pynvml")
    if pynvml is not None:
        return _through_pynvml(pynvml)
    return None, None


def _through_torch(torch: Any) -> tuple[float | None, int | None]:
    try:
        if not torch.cuda.is_available():
            return None, None
        device = torch.cuda.current_device()
    except Exception:
        return None, None
    return (_read(lambda: float(torch.cuda.utilization(device))),
            _read(lambda: int(torch.cuda.device_memory_used(device))))  # fmt: skip


def _through_pynvml(pynvml: Any) -> tuple[float | None, int | None]:
    """The first visible device (a rank without torch names no current one)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    if not visible.isdigit():  # a UUID, or none visible
        return None, None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible))
    except Exception:
        return None, None
    return (_read(lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
            _read(lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)))  # fmt: skip


def _read(call: Any) -> Any:
    try:
        return call()
    except Exception:
        return None


__all__ = ["gpu_use"]
