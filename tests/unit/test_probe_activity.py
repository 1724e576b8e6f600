"""The probe's stack sampler on real threads: each blocks in a function compiled under
the file name of the library it stands for (torch.distributed, torch.utils.data, …), so
the sampler reads genuine frames with no torch and no Ray; and the reader of its record."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from raytop.model import untrusted_ledger_page
from raytop.probe.activity import ActivitySampler, classify

SITE = f"{os.sep}venv{os.sep}lib{os.sep}site-packages{os.sep}"
LIBRARY = """
def {name}(event):
    event.wait(10)
"""


def library_function(path: str, name: str):
    namespace: dict = {}
    exec(compile(LIBRARY.format(name=name), SITE + path, "exec"), namespace)
    return namespace[name]


def user_step(event, call):  # the user's own code (this test file is not a library)
    call(event)


@contextmanager
def blocked_in(path: str, name: str) -> Iterator[int]:
    """A thread blocked in library function ``name`` of ``path``, called from user code."""
    event, started = threading.Event(), threading.Event()
    function = library_function(path, name)

    def body():
        started.set()
        user_step(event, function)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    started.wait(5)
    try:
        yield thread.ident
    finally:
        event.set()
        thread.join(5)


@pytest.mark.parametrize("path, name, kind, where", [
    ("torch/distributed/distributed_c10d.py", "all_reduce", "collective",
     "torch.distributed.all_reduce from user_step (test_probe_activity.py:"),
    ("torch/utils/data/dataloader.py", "__next__", "data_loader",
     "DataLoader.__next__ from user_step"),
    ("torch/autograd/__init__.py", "backward", "backward", "loss.backward() (DDP"),
    ("botocore/endpoint.py", "make_request", "io", "endpoint.make_request from user_step"),
    ("ray/train/v2/api/train_fn_utils.py", "report", "report", "ray.train.report"),
])  # fmt: skip
def test_a_thread_is_classified_by_the_library_call_it_waits_in(path, name, kind, where):
    with blocked_in(path, name) as ident:
        import sys

        found_kind, found_where = classify(sys._current_frames()[ident])
    assert found_kind == kind and found_where.startswith(where), found_where


def test_the_users_own_line_is_named_when_no_library_call_is_recognised():
    event = threading.Event()
    started = threading.Event()

    def train_loop():
        started.set()
        event.wait(10)  # the line the sampler shows

    thread = threading.Thread(target=train_loop, daemon=True)
    thread.start()
    started.wait(5)
    sampler = ActivitySampler(thread.ident)
    try:
        sampler.sample(100.0)
        sampler.sample(101.0)
    finally:
        event.set()
        thread.join(5)
    record = sampler.record()
    assert record["kind"] == "user"
    assert record["where"].startswith("train_loop (test_probe_activity.py:")
    assert "event.wait(10)" in record["where"]
    assert record["since"] == 100.0 and record["sampled_at"] == 101.0  # same place: kept
    assert "samples" not in record and "waiting" not in record  # the time shares' to add
    # A dead thread is not sampled (the record stays as it was).
    sampler.sample(102.0)
    assert sampler.record()["sampled_at"] == 101.0


GOOD = {"kind": "collective", "where": "torch.distributed.all_reduce", "since": 5.0,
        "sampled_at": 9.0, "samples": 10, "waiting": 0.5}  # fmt: skip


@pytest.mark.parametrize("bad", [
    "collective", {**GOOD, "kind": "sleeping"}, {**GOOD, "where": 3},
    {**GOOD, "since": float("nan")}, {**GOOD, "sampled_at": None}, {**GOOD, "samples": -1},
    {**GOOD, "samples": True}, {**GOOD, "waiting": 1.5}, {**GOOD, "waiting": "0.5"},
])  # fmt: skip
def test_a_bad_activity_drops_the_field_never_the_rank(bad):
    from tests.unit.test_untrusted import PAGE, RANK

    page = untrusted_ledger_page.ledger_page({**PAGE, "ranks": {"0": {**RANK, "activity": bad}}})
    assert page["ranks"]["0"]["activity"] is None and page["ranks"]["0"]["pid"] == 11
    good = untrusted_ledger_page.ledger_page({**PAGE, "ranks": {"0": {**RANK, "activity": GOOD}}})
    assert good["ranks"]["0"]["activity"] == GOOD
    long = {**GOOD, "where": "x" * 500}
    cut = untrusted_ledger_page.ledger_page({**PAGE, "ranks": {"0": {**RANK, "activity": long}}})
    assert len(cut["ranks"]["0"]["activity"]["where"]) == 200
