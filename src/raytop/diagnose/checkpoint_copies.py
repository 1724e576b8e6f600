"""One relative path put into a checkpoint by several ranks: overwritten, replicated, or
not comparable, and the finding each is.

Train copies every rank's checkpoint folder into the same storage folder, so two ranks'
files of one name land on one path and the last copy wins. That loses data only when the
copies differ. Every rank of a DDP run holds the same weights, and Ray's own examples have
every rank save them (``ray.train.examples.pytorch.torch_linear_example``): identical
copies are replicated state, wasted uploads at worst. So a collision (ERROR,
``raytop check`` exits 14) needs positive evidence that the contents differ: two sizes, or
two content hashes (the probe's, under ``model.records.HASH_MAX_*``) that differ. Copies
hashed alike are an INFO naming the redundant uploads; the same size with a copy unhashed
is an INFO saying they could not be compared, and why.
"""

from __future__ import annotations

from typing import Any

from raytop.model import CheckpointRecord, Finding, Severity
from raytop.model.finding import about
from raytop.model.records import (
    HASH_MAX_CHECKPOINT_BYTES,
    HASH_MAX_FILE_BYTES,
    HASH_MAX_FILES,
)

DIFFER, SAME, UNKNOWN = "differ", "same", "unknown"
MAX_NAMED = 3  # paths named in a message; the evidence has them all


def compare(copies: dict[int, tuple[int, str | None]]) -> str:
    """One path's copies (rank → (size, hash or None)): ``DIFFER`` on evidence (two sizes,
    or two hashes), ``SAME`` when every copy was hashed alike at one size, else ``UNKNOWN``
    (one size, some copy unhashed)."""
    sizes = {nbytes for nbytes, _ in copies.values()}
    hashes = {digest for _, digest in copies.values() if digest is not None}
    if len(sizes) > 1 or len(hashes) > 1:
        return DIFFER
    return SAME if all(digest is not None for _, digest in copies.values()) else UNKNOWN


def redundant_bytes(copies: dict[int, tuple[int, str | None]]) -> int:
    """The bytes of one replicated path uploaded beyond its first copy."""
    nbytes = next(iter(copies.values()))[0]
    return max(nbytes, 0) * (len(copies) - 1)


def rank_list(ranks: list[int] | tuple[int, ...]) -> str:
    """``rank 3``, ``ranks 1–7``, ``ranks 0, 2–4, 9``: runs of consecutive ranks joined."""
    ordered = sorted(set(ranks))
    spans: list[list[int]] = []
    for rank in ordered:
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    text = ", ".join(str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}–{b}"
                     for a, b in spans)  # fmt: skip
    return f"{'rank' if len(ordered) == 1 else 'ranks'} {text}"


def size_text(nbytes: float) -> str:
    """``512 B``, ``3.8 KiB``, ``16 MiB``, ``120 GiB``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{value:.1f} {unit}" if unit != "B" and value < 10 else f"{value:.0f} {unit}"


def _named(paths: list[str]) -> str:
    shown = ", ".join(paths[:MAX_NAMED])
    more = len(paths) - MAX_NAMED
    return shown if more <= 0 else f"{shown} and {more} more"


def _all_ranks(paths: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Every rank that wrote one of ``paths`` (path → ranks), in order."""
    return tuple(sorted({r for ranks in paths.values() for r in ranks}))


def collision(
    c: CheckpointRecord, subject: str, evidence: dict[str, Any], refs: dict[str, Any]
) -> Finding:
    """ERROR: ranks wrote files of one name with different contents into ``c``;
    ``refs``: what the finding is about (``diagnose.refs``), its ranks added here (so for
    each builder below)."""
    path, ranks = next(iter(c.collisions.items()))
    more = len(c.collisions) - 1
    also = f" (and {more} more file{'s' if more > 1 else ''})" if more else ""
    return Finding(
        "checkpoint_collision", Severity.ERROR, subject,
        f"ranks {', '.join(map(str, ranks))} all wrote {path}{also} into {c.dir_name}: "
        "one overwrote the others (give each rank its own file name)",
        {**evidence, "path": path, "ranks": list(ranks),
         "collisions": {p: list(r) for p, r in c.collisions.items()}},
        **about(c.dir_name), **refs, ranks=_all_ranks(c.collisions),
    )  # fmt: skip


def replicated(
    c: CheckpointRecord, subject: str, evidence: dict[str, Any], refs: dict[str, Any]
) -> Finding:
    """INFO: ranks uploaded the same files (same size and hash) into ``c``: replicated
    state, every copy but one redundant."""
    paths = list(c.replicated)
    keepers = sorted({ranks[0] for ranks in c.replicated.values()})
    others = sorted({r for ranks in c.replicated.values() for r in ranks[1:]})
    keeper = f"rank {keepers[0]}" if len(keepers) == 1 else "a lower rank"
    what = paths[0] if len(paths) == 1 else f"{len(paths)} files ({_named(paths)})"
    uniform = len({c.replicated[p] for p in paths}) == 1
    redundant = (f"{len(others)} × {size_text(c.redundant_bytes / len(others))}"
                 if uniform else size_text(c.redundant_bytes))  # fmt: skip
    return Finding(
        "checkpoint_replicated", Severity.INFO, subject,
        f"{rank_list(others)} uploaded the same {what} as {keeper} into {c.dir_name}: "
        f"{redundant} redundant; attach it on {keeper} only (the others report "
        "checkpoint=None)",
        {**evidence, "replicated": {p: list(r) for p, r in c.replicated.items()},
         "redundant_bytes": c.redundant_bytes},
        **about(c.dir_name), **refs, ranks=_all_ranks(c.replicated),
    )  # fmt: skip


def uncompared(
    c: CheckpointRecord, subject: str, evidence: dict[str, Any], refs: dict[str, Any]
) -> Finding:
    """INFO: ranks wrote files of one name and size into ``c`` that were not all hashed:
    no evidence either way."""
    paths = list(c.uncompared)
    ranks = _all_ranks(c.uncompared)
    if c.mode == "NO_UPLOAD":
        why = ("written in place (NO_UPLOAD): each rank reads back the copy that survived, "
               "not the one it wrote")  # fmt: skip
    else:
        why = (f"the probe hashes files up to {size_text(HASH_MAX_FILE_BYTES)} each, "
               f"{size_text(HASH_MAX_CHECKPOINT_BYTES)} and {HASH_MAX_FILES} files a rank "
               "per checkpoint (or an older probe sent no hashes)")  # fmt: skip
    return Finding(
        "checkpoint_uncompared", Severity.INFO, subject,
        f"{rank_list(ranks)} all wrote {_named(paths)} into {c.dir_name} at the same size; "
        f"their contents were not compared: {why}",
        {**evidence, "uncompared": {p: list(r) for p, r in c.uncompared.items()}},
        **about(c.dir_name), **refs, ranks=ranks,
    )  # fmt: skip
