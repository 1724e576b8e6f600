"""Which changed beat chunks a refresh reads (``sources.ledger_beat_reads``): all at a new
second; between, only the chunks never read and those of the ranks that reported, learnt
from what was read."""

from __future__ import annotations

from raytop.sources.ledger_beat_reads import beats_to_read


def beats(*ranks: int) -> dict:
    return {str(r): {"received_at": 1.0} for r in ranks}


def page(*ranks: int) -> dict:
    return {"ranks": {str(r): {} for r in ranks}}


# attempt a (ranks 0-7 in beat chunk "a", 8-15 in "a~1") and attempt b (0-3 in "b")
HELD = {"a": beats(*range(8)), "a~1": beats(*range(8, 16)), "b": beats(0, 1, 2, 3)}
READ = {"a": 1, "a~1": 1, "b": 1}
MOVED = {"a": 2, "a~1": 2, "b": 2, "a~2": 1}  # every chunk moved; a~2 never read


def test_at_a_new_second_every_changed_chunk_is_read():
    assert beats_to_read(MOVED, READ, HELD, {}, due=True) == ["a", "a~1", "b", "a~2"]
    assert beats_to_read({**READ, "b": 2}, READ, HELD, {}, due=True) == ["b"]


def test_between_only_chunks_never_read_and_those_of_the_ranks_that_reported():
    assert beats_to_read(MOVED, READ, HELD, {}, due=False) == ["a~2"]
    reported = {"a~1": page(9, 10)}  # a page chunk of attempt a, as last read
    assert beats_to_read(MOVED, READ, HELD, reported, due=False) == ["a~1", "a~2"]
    both = {"a~1": page(7, 8), "b": page(2)}  # ranks 7 and 8 are in two beat chunks
    assert beats_to_read(MOVED, READ, HELD, both, due=False) == ["a", "a~1", "b", "a~2"]


def test_a_rank_whose_chunk_is_not_known_takes_its_attempts_changed_chunks():
    never = {"a~3": None}  # a page chunk never read: its ranks are not known
    assert beats_to_read(MOVED, READ, HELD, never, due=False) == ["a", "a~1", "a~2"]
    unheld = {"b~1": page(40)}  # attempt b's rank 40: no beat of it read yet
    assert beats_to_read(MOVED, READ, HELD, unheld, due=False) == ["b", "a~2"]


def test_a_chunk_that_did_not_move_is_never_read_again():
    assert beats_to_read(READ, READ, HELD, {"a~1": page(9)}, due=False) == []
    assert beats_to_read(READ, READ, HELD, {}, due=True) == []
