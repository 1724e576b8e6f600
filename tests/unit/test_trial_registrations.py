"""The trial registrations placement names groups by (``sources.placement_source``): fetched
by the alive trial actor's key, asked for again on a schedule while missing, forgotten
once the actor is gone."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from raytop.sources.placement_source import PlacementReader, _Asking
from raytop.wire.kv_keys import TRIAL_PREFIX
from tests.fakes import FakeKv

DRIVER = "10.0.0.9:1"


class NoGroups:
    def placement_groups(self):
        return []


def trial(port: int) -> dict:
    return {"address": f"10.0.0.1:{port}", "owner": DRIVER, "pg_id": f"pg{port}"}


def registration(actor: str) -> bytes:
    return json.dumps({"experiment": "e", "trial_id": f"t-{actor}", "actor_id": actor,
                       "pg_id": f"pg-{actor}"}).encode()  # fmt: skip


def asked_for(kv: FakeKv) -> list[str]:
    return [k for keys in kv.multi_gets for k in keys]


def test_a_trial_that_registers_late_is_named_at_the_next_collection_in_its_first_seconds():
    kv = FakeKv()
    reader = PlacementReader(NoGroups(), kv)
    actors = {"a1": trial(1)}
    for t in (0.0, 0.25, 0.5):
        reader.new_read()
        assert reader._registrations(actors, t) == {}
    kv.data[TRIAL_PREFIX + "a1"] = registration("a1")
    reader.new_read()
    assert reader._registrations(actors, 0.75)["a1"]["trial_id"] == "t-a1"
    reader.new_read()
    reader._registrations(actors, 1.0)
    assert asked_for(kv) == [TRIAL_PREFIX + "a1"] * 4  # known: not asked again


def test_an_actor_with_no_registration_is_asked_less_and_less_then_every_minute():
    kv = FakeKv()
    reader = PlacementReader(NoGroups(), kv)
    asks = []
    for step in range(4 * 600):  # ten minutes at a 0.25 s refresh
        now = step * 0.25
        before = len(kv.multi_gets)
        reader.new_read()
        reader._registrations({"a1": trial(1)}, now)
        if len(kv.multi_gets) > before:
            asks.append(now)
    assert asks[:60] == [i * 0.25 for i in range(60)]  # each collection, its first 15 s
    gaps = [b - a for a, b in zip(asks[60:], asks[61:], strict=False)]
    assert gaps == sorted(gaps) and max(gaps) == _Asking.AT_MOST_EVERY_S
    assert len(asks) < 80


def test_an_actor_an_actor_owns_or_in_no_group_is_never_asked_for():
    kv = FakeKv()
    reader = PlacementReader(NoGroups(), kv)
    controller = {"address": "10.0.0.2:5", "owner": "10.0.0.1:1", "pg_id": "pg1"}  # a1's
    worker = {"address": "10.0.0.3:5", "owner": "10.0.0.2:5", "pg_id": "pg2"}
    ledger = {"address": "10.0.0.4:5", "owner": DRIVER, "pg_id": ""}
    actors = {"a1": trial(1), "c1": controller, "w1": worker, "l1": ledger}
    reader._registrations(actors, 0.0)
    assert asked_for(kv) == [TRIAL_PREFIX + "a1"]


def test_an_actor_gone_is_forgotten_with_its_warning():
    kv = FakeKv({TRIAL_PREFIX + "a1": registration("a1"), TRIAL_PREFIX + "a2": b"[1]"})
    reader = PlacementReader(NoGroups(), kv)
    both = {"a1": trial(1), "a2": trial(2)}
    assert set(reader._registrations(both, 0.0)) == {"a1"}
    assert reader.warnings == ["trial/a2: top level: expected a dict, got a list"]
    reader.new_read()
    assert reader._registrations({}, 1.0) == {}
    assert reader.warnings == []
    reader.new_read()
    assert set(reader._registrations(both, 2.0)) == {"a1"}  # alive again: asked again
    assert asked_for(kv).count(TRIAL_PREFIX + "a2") == 2


@given(gaps=st.lists(st.floats(0.01, 30.0), min_size=1, max_size=200))
def test_an_unregistered_actor_is_never_left_unasked_longer_than_a_minute(gaps):
    asking = _Asking()
    now, last = 0.0, 0.0
    assert asking.due(["a"], now) == ["a"]
    for gap in gaps:
        now += gap
        if asking.due(["a"], now):
            last = now
        else:  # a collection that does not ask is within a minute of the last ask
            assert now - last < _Asking.AT_MOST_EVERY_S
