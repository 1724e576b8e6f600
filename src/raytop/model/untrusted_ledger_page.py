"""A page of the report ledger (``ledger/page/<run_id>.<attempt_id>[~<chunk>]``), validated,
with the records of the ranks that did not change taken from the page read before.

A page holds up to ``PAGE_CHUNK_RANKS`` ranks, and is sent again whole when one of them changes:
at 2,000 ranks with 1 % of them reporting, validating every rank of every changed page
was the largest part of a refresh. The Ledger numbers each rank's record
(``rank_versions``: the ledger's version when that rank's record last changed), so a rank
whose number is the one read before keeps the record validated then: what is shown is
always a validated record, and a number that lies can only show a rank's last validated
record. A page of a Ledger before the numbers, or with numbers of the wrong shape, is
validated whole. A new Ledger numbers from 1 again: its reader drops every page it held
first (``sources.ledger_source``).

Pure and stdlib only (``model`` layer): no Ray, no I/O.
"""

from __future__ import annotations

from typing import Any

from raytop.model.records import LedgerPage
from raytop.model.untrusted import MAX_RANKS, integer, number, obj, text
from raytop.model.untrusted_kv import rank_keys, rank_record


def rank_versions(value: Any) -> dict[str, int]:
    """``{rank: version}``; empty when absent or of the wrong shape (then every rank is
    validated: the numbers only spare work, they never decide what is shown)."""
    if not isinstance(value, dict) or len(value) > MAX_RANKS:
        return {}
    good = {k: v for k, v in value.items()
            if isinstance(k, str) and type(v) is int and v >= 0}  # fmt: skip
    return good if len(good) == len(value) else {}


def ledger_page(data: Any, previous: LedgerPage | None = None) -> LedgerPage:
    """One attempt and the record of each rank (of that chunk); a rank whose version is
    the one in ``previous`` (the same page as read last) keeps ``previous``'s record."""
    raw = obj(data)
    run_id, run_name, attempt_id = (text(raw, key) for key in ("run_id", "run_name", "attempt_id"))
    world_size = integer(raw, "world_size", maximum=MAX_RANKS)
    first_seen_at = number(raw, "first_seen_at")
    placement_group_id = text(raw, "placement_group_id", optional=True)
    ranks = obj(raw.get("ranks") or {}, "ranks")
    rank_keys(ranks)
    versions = rank_versions(raw.get("rank_versions"))
    before = previous["ranks"] if previous is not None else {}
    was = previous.get("rank_versions", {}) if previous is not None else {}
    return LedgerPage(
        run_id=run_id, run_name=run_name, attempt_id=attempt_id, world_size=world_size,
        first_seen_at=first_seen_at, placement_group_id=placement_group_id,
        ranks={
            key: before[key]
            if key in before and key in versions and versions[key] == was.get(key)
            else rank_record(record, f"ranks.{key}")
            for key, record in ranks.items()
        },
        rank_versions=versions,
    )  # fmt: skip
