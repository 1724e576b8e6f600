"""A rank's beat checked on the plain path (``untrusted_beats._plain``) comes out as the
field-by-field check makes it (``_checked``): the same beat, or the same error naming the
same field, whatever the Ledger (or someone writing its keys) put there."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from raytop.model import untrusted
from raytop.model.untrusted_beats import INTEGERS, NUMBERS, _checked, _plain, ledger_beats

SPECIAL = [math.nan, math.inf, -math.inf, True, False, 2**53, 2**53 + 1, -(2**53), 10**400,
           1e6, 1e6 + 1, 100.0, 100.5, -0.5, 3.0, "7", [1]]  # fmt: skip
FIGURE = st.one_of(
    st.none(),
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-5.0, max_value=150.0),
    st.integers(min_value=-(2**60), max_value=2**60),
)
ACTIVITY = st.one_of(st.none(), st.just({"kind": "collective", "where": "all_reduce",
                                         "since": 1.0, "sampled_at": 2.0, "samples": 3,
                                         "waiting": 0.5}))  # fmt: skip
# Any figure, or null (the numbers) or absent (the integers): both are read as no figure.
BEAT = st.fixed_dictionaries(
    {**dict.fromkeys((*NUMBERS, *INTEGERS), FIGURE), "activity": ACTIVITY}
).map(lambda beat: {k: v for k, v in beat.items() if v is not None or k in NUMBERS})


def outcome(check, beat):
    try:
        return "ok", check(beat)
    except untrusted.Invalid as exc:
        return "invalid", str(exc)


# Its numbers all good (so the integers are what is judged), and any integers.
GOOD_NUMBERS = st.fixed_dictionaries(
    {**dict.fromkeys(NUMBERS, st.one_of(st.none(), st.floats(0.0, 100.0))),
     **dict.fromkeys(INTEGERS, FIGURE)}
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.one_of(BEAT, GOOD_NUMBERS))
@example({"cpu_percent": math.nan})
@example({"received_at": -math.inf, "rss_bytes": 1})
@example({"received_at": 2**53 + 1})
@example({"gpu_util_percent": 100.5})
@example({"rss_bytes": True})
@example({"optimizer_steps": 7.0})
def test_the_plain_path_gives_what_the_checked_path_gives(beat):
    checked = outcome(lambda b: _checked(b, "ranks.0"), beat)
    plain = outcome(lambda b: ledger_beats({"ranks": {"0": b}})["0"], beat)
    assert plain == checked
    made = _plain(beat)
    if made is not None:  # what the plain path took, the checked one takes alike
        assert checked == ("ok", made)
        assert all(v is None or math.isfinite(v) for k, v in made.items() if k in NUMBERS)


@pytest.mark.parametrize(
    ("figure", "value"),
    [
        ("cpu_percent", True),
        ("rss_bytes", 3.0),
        ("optimizer_steps", False),
        ("received_at", 2**60),
        ("step_rate", 2e6),
    ],
)
def test_what_only_the_checked_path_decides_is_left_to_it(figure, value):
    """A bool, an integral float for an int, an int a float cannot hold, a figure out of
    range: the plain path declines (the checked path refuses or converts)."""
    assert _plain({figure: value}) is None


def test_a_beat_stamped_as_the_one_checked_before_is_that_beat():
    """The Ledger stamps each beat it receives (``received_at``): a rank's beat with the
    stamp of its beat checked at the last read keeps that checked beat, the very object;
    a new stamp, a rank not read before or a beat with no stamp is checked."""
    parsed = {"0": {"received_at": 10.0, "cpu_percent": 5.0},
              "1": {"received_at": 10.5, "cpu_percent": 6.0},
              "3": {"cpu_percent": 1.0}}  # fmt: skip
    first = ledger_beats({"ranks": parsed})
    moved = {**parsed, "1": {"received_at": 11.5, "cpu_percent": 7.0},
             "2": {"received_at": 10.0, "cpu_percent": 5.0}}  # fmt: skip
    again = ledger_beats({"ranks": moved}, first)
    assert again["0"] is first["0"]  # the very object: what is made of it is kept
    assert again["1"]["cpu_percent"] == 7.0 and again["2"] == first["0"]
    assert again["2"] is not first["0"] and again["3"] is not first["3"]
    # Another beat under the same stamp (no Ledger sends one) shows the checked figures.
    same_stamp = {**moved, "0": {"received_at": 10.0, "cpu_percent": "hot"}}
    assert ledger_beats({"ranks": same_stamp}, again)["0"] is first["0"]
    # A new beat is checked, and a bad one refuses the chunk as without ``before``.
    bad = {**moved, "1": {"received_at": 12.5, "cpu_percent": "hot"}}
    with pytest.raises(untrusted.Invalid, match="ranks.1.cpu_percent"):
        ledger_beats({"ranks": bad}, first)
