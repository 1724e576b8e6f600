"""Per-worker timeline of a test run: with ``RAYTOP_TIMELINE=FILE`` set, every test
appends one JSON line ``{"worker", "pid", "test", "start", "end"}`` (wall-clock seconds,
setup to teardown; ``pid`` the test process's, by which ``benchmarks/cpu_by_process.py
--timeline`` finds whose test started a process) to FILE. Which tests ran on which xdist
worker, in which order and when each worker went idle is what balancing the suite's two
workers needs; ``--durations`` and JUnit XML give neither the worker nor the order
(``benchmarks/timeline.py`` sums it up).
"""

from __future__ import annotations

import json
import os
import time

import pytest

TIMELINE_ENV = "RAYTOP_TIMELINE"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    path = os.environ.get(TIMELINE_ENV)
    start = time.time()
    yield
    if path:
        line = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "pid": os.getpid(),
                "test": item.nodeid, "start": start, "end": time.time()}  # fmt: skip
        with open(path, "a") as f:  # one short write per line: the workers' lines interleave whole
            f.write(json.dumps(line) + "\n")
