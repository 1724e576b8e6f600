"""The suite's own early stop of a session cluster (``tests.conftest.last_users``): after
the last test that uses it in the run order, never after the last of a run of them."""

from __future__ import annotations

from types import SimpleNamespace

from tests.conftest import last_users


def _item(*fixtures: str) -> SimpleNamespace:
    return SimpleNamespace(fixturenames=list(fixtures))


def test_a_cluster_used_again_after_another_file_is_stopped_after_its_last_use():
    placement, refusal = _item("two_cpu_cluster"), _item("two_cpu_cluster")
    other = _item("tmp_path")
    last = last_users([placement, other, refusal], ["two_cpu_cluster"])
    assert last == {"two_cpu_cluster": refusal}


def test_each_cluster_has_its_own_last_user_and_an_unused_one_none():
    a, b = _item("probed_cluster", "two_cpu_cluster"), _item("probed_cluster")
    last = last_users([a, b, _item()], ["probed_cluster", "two_cpu_cluster", "hang_cluster"])
    assert last == {"probed_cluster": b, "two_cpu_cluster": a}
