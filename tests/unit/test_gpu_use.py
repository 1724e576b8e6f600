"""A rank's GPU as NVML sees it (GPU only), simulated: no GPU here, so a stand-in NVML
source (a stand-in ``torch.cuda`` whose NVML calls answer, or a stand-in ``pynvml``)
feeds the probe; the reader checks what comes back; the rank table and screen show it."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from raytop.model import untrusted_beats
from raytop.model.untrusted import Invalid
from raytop.probe.gpu_use import gpu_use


def stand_in_torch(available=True, util=73, used=3 << 30, fails=False):
    def utilization(device):
        if fails:
            raise ModuleNotFoundError("pynvml does not seem to be installed")
        assert device == 1
        return util

    cuda = SimpleNamespace(is_available=lambda: available, current_device=lambda: 1,
                           utilization=utilization,
                           device_memory_used=lambda device: used)  # fmt: skip
    return SimpleNamespace(cuda=cuda)


def test_through_torch_cuda_on_the_ranks_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", stand_in_torch())
    assert gpu_use() == (73.0, 3 << 30)


def test_no_cuda_or_no_nvml_binding_is_unknown_never_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", stand_in_torch(available=False))
    assert gpu_use() == (None, None)
    monkeypatch.setitem(sys.modules, "torch", stand_in_torch(fails=True))
    assert gpu_use() == (None, 3 << 30)


def test_through_pynvml_when_torch_is_not_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    handles = []
    pynvml = SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: handles.append(i) or f"h{i}",
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=55),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=1 << 30),
    )
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,2")
    assert gpu_use() == (55.0, 1 << 30) and handles == [3]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-0b5c-uuid")
    assert gpu_use() == (None, None)


def test_a_rank_without_torch_or_nvml_has_no_gpu_figures(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    assert gpu_use() == (None, None)


BEAT = {"received_at": 10.0, "cpu_percent": 90.0, "rss_bytes": 1, "gpu_memory_bytes": 2}


def test_the_reader_keeps_the_gpu_figures_and_refuses_a_percent_that_is_none():
    (beat,) = untrusted_beats.ledger_beats({"ranks": {"0": {
        **BEAT, "gpu_util_percent": 73.0, "gpu_memory_used_bytes": 3 << 30}}}).values()  # fmt: skip
    assert (beat["gpu_util_percent"], beat["gpu_memory_used_bytes"]) == (73.0, 3 << 30)
    (beat,) = untrusted_beats.ledger_beats({"ranks": {"0": BEAT}}).values()
    assert beat["gpu_util_percent"] is None  # an older probe, or no GPU
    for bad in (250.0, -1.0, "73", float("nan")):
        with pytest.raises(Invalid, match="gpu_util_percent"):
            untrusted_beats.ledger_beats({"ranks": {"0": {**BEAT, "gpu_util_percent": bad}}})
