"""A ledger page read against the page read before (``model.untrusted_ledger_page``): a
rank whose number is unchanged keeps its validated record, whatever the page now says of
it; any other rank, and every rank of a page without good numbers, is validated."""

import pytest

from raytop.model import untrusted
from raytop.model.untrusted_ledger_page import ledger_page, rank_versions
from tests.unit.test_untrusted import PAGE, RANK

TWO = {**PAGE, "world_size": 2,
       "ranks": {"0": RANK, "1": {**RANK, "rank": 1, "pid": 12}},
       "rank_versions": {"0": 4, "1": 7}}  # fmt: skip


def test_an_unchanged_number_keeps_the_record_a_changed_one_is_validated():
    first = ledger_page(TWO)
    again = ledger_page({**TWO, "ranks": {**TWO["ranks"], "1": {**RANK, "rank": 1, "pid": 13}},
                         "rank_versions": {"0": 4, "1": 8}}, first)  # fmt: skip
    assert again["ranks"]["0"] is first["ranks"]["0"]
    assert again["ranks"]["1"] is not first["ranks"]["1"] and again["ranks"]["1"]["pid"] == 13


def test_a_number_that_lies_shows_the_last_validated_record_never_the_new_value():
    first = ledger_page(TWO)
    bad = {**TWO, "ranks": {**TWO["ranks"], "0": {**RANK, "pid": "not a pid"}}}
    assert ledger_page(bad, first)["ranks"]["0"]["pid"] == 11  # the number says unchanged
    with pytest.raises(untrusted.Invalid, match="ranks.0"):
        ledger_page(bad)  # read afresh, it is refused as ever


@pytest.mark.parametrize("versions", [None, [], {"0": -1, "1": 7}, {"0": True, "1": 7},
                                      {"0": "4", "1": 7}, {"0": 4.0, "1": 7}])  # fmt: skip
def test_numbers_of_the_wrong_shape_mean_every_rank_is_validated(versions):
    first = ledger_page(TWO)
    page = ledger_page({**TWO, "rank_versions": versions}, first)
    assert rank_versions(versions) == {}
    assert all(page["ranks"][k] is not first["ranks"][k] for k in ("0", "1"))


def test_a_rank_new_to_the_page_or_a_page_before_the_numbers_is_validated():
    first = ledger_page({**TWO, "ranks": {"0": RANK}, "rank_versions": {"0": 4}})
    page = ledger_page(TWO, first)
    assert page["ranks"]["0"] is first["ranks"]["0"] and page["ranks"]["1"]["pid"] == 12
    older = {k: v for k, v in TWO.items() if k != "rank_versions"}
    assert ledger_page(older, ledger_page(older))["ranks"]["0"] is not first["ranks"]["0"]
