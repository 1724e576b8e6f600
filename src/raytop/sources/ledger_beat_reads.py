"""Which of the ledger's changed beat chunks a refresh reads (``ledger_source``).

Each probe beats once a second (``probe.rank_state.HEARTBEAT_S``), its ranks' beats
arrive spread over that second, and the Ledger re-sends a chunk of ``BEAT_CHUNK_RANKS``
ranks' beats when any of them moved. Read at each new version, at a 0.25 s refresh, every
run of a large cluster was made and judged again four times a second (2,000 ranks: over
half a core). So a chunk already read is read again at most once a second: at the first
refresh of each second, the one at which the groups' ages and the runs' waits move on
(``model.refresh``); a second after the last read instead, a run was made again twice a
second.

A chunk never read is read at once. So is the changed chunk of a rank whose page changed
(it reported): its beat of the same moment, so that its run is not made again at the
next second for it alone. Only that rank's chunk: the whole attempt's changed beats with
each page of a 2,000-rank run that trains (one rank or another reports at nearly every
refresh) made nearly every refresh read every beat. A rank whose chunk is not known (its
page, or its beat, never read) takes its attempt's changed chunks, as all did before.
The chunks a rank is in are learnt from what was read, never worked out from its number.
"""

from __future__ import annotations

from raytop.model.records import LedgerPage, RankBeat
from raytop.wire.kv_keys import split_chunk_key


def beats_to_read(
    listed: dict[str, int],
    versions: dict[str, int],
    held: dict[str, dict[str, RankBeat]],
    pages: dict[str, LedgerPage | None],
    due: bool,
) -> list[str]:
    """The beat chunks to read (names, as the index lists them): of those ``listed``
    whose version moved from the one read (``versions``), all when ``due`` (a new
    second); else those never read (not in ``held``) and those holding a rank of a
    changed page chunk (``pages``: its name → the chunk as last read, None if never read).
    """
    moved = [name for name, version in listed.items() if versions.get(name) != version]
    if due or not moved:
        return moved
    whole: set[str] = set()  # attempts (page keys) whose every changed chunk is read
    reported: dict[str, set[str]] = {}  # attempt → the ranks of its changed page chunks
    for name, page in pages.items():
        key = split_chunk_key(name)[0]
        if page is None:
            whole.add(key)
        else:
            reported.setdefault(key, set()).update(page["ranks"])
    wanted: set[str] = set()
    for name, beats in held.items():
        left = reported.get(split_chunk_key(name)[0])
        if left:
            found = left & beats.keys()
            if found:
                wanted.add(name)
                left -= found
    whole.update(key for key, left in reported.items() if left)
    return [
        name for name in moved
        if name not in held or name in wanted or split_chunk_key(name)[0] in whole
    ]  # fmt: skip


__all__ = ["beats_to_read"]
