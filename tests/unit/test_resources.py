"""Resource names as Ray spells them: ``cpu``/``gpu`` in any case are ``CPU``/``GPU``."""

from __future__ import annotations

import pytest

from raytop.model.resources import resource_name


@pytest.mark.parametrize(
    ("written", "ray"),
    [
        ("cpu", "CPU"),
        ("Cpu", "CPU"),
        ("CPU", "CPU"),
        ("gpu", "GPU"),
        ("gPU", "GPU"),
        ("memory", "memory"),
        ("TPU", "TPU"),
        ("hi_mem", "hi_mem"),
        ("cpus", "cpus"),  # only the exact names: a custom resource keeps its spelling
    ],
)
def test_resource_name(written: str, ray: str) -> None:
    assert resource_name(written) == ray
