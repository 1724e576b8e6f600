"""Who is missing from which collective: the Flight Recorder dumps of a run's ranks, read
side by side (``model.flight_recorder``).

Every collective a rank enters on a process group gets the group's next sequence number
(``collective_seq_id``; point-to-point operations have their own and are left out). In
a hang the ranks that entered collective #N wait inside it for the ones that never got
there: those ranks are behind, their last sequence number is below N, and they are what
to look at (their stacks say where they are instead). Each rank's numbers come from its
dump's ``pg_status`` (last enqueued, started, completed) and its ring buffer's entries,
whichever is newer. Pure: no I/O, no torch.
"""

from __future__ import annotations

from dataclasses import replace

from raytop.model.collectives import GroupProgress, RankProgress
from raytop.model.flight_recorder import RankDump


def _newest(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def group_progress(dumps: list[RankDump]) -> tuple[GroupProgress, ...]:
    """Each process group seen in ``dumps``, with each rank's progress and the ranks
    missing from the newest collective any rank entered."""
    descs: dict[str, str] = {}
    members: dict[str, set[int]] = {}
    progress: dict[str, dict[int, RankProgress]] = {}
    for dump in dumps:
        for name, ranks in dump.members.items():
            members.setdefault(name, set()).update(ranks)
        by_group: dict[str, list] = {}
        for entry in dump.entries:
            if entry.is_p2p:
                continue
            by_group.setdefault(entry.pg_name, []).append(entry)
            descs.setdefault(entry.pg_name, entry.pg_desc)
        for name, entries in by_group.items():
            last = max(entries, key=lambda e: (e.collective_seq_id, e.record_id))
            status = dump.status.get(last.pg_id)
            started = [e.collective_seq_id for e in entries if e.state != "scheduled"]
            completed = [e.collective_seq_id for e in entries if e.state == "completed"]
            enqueued = _newest([last.collective_seq_id, status and status.last_enqueued])
            progress.setdefault(name, {})[dump.rank] = RankProgress(
                rank=dump.rank,
                last_enqueued=enqueued,
                last_started=_newest([*started, status and status.last_started]),
                last_completed=_newest([*completed, status and status.last_completed]),
                last_op=last.profiling_name if enqueued == last.collective_seq_id else None,
            )
    dumped = {d.rank for d in dumps}
    groups = []
    for name in sorted(progress, key=_group_order):
        ranks = progress[name]
        for rank in sorted(members.get(name, set()) & dumped - set(ranks)):
            ranks[rank] = RankProgress(rank, None, None, None, None)  # a member, never entered
        newest = _newest([r.last_enqueued for r in ranks.values()])
        newest_op = next(
            (r.last_op for r in ranks.values() if r.last_enqueued == newest and r.last_op), None
        )
        missing = tuple(sorted(
            r.rank for r in ranks.values()
            if newest is not None and (r.last_enqueued is None or r.last_enqueued < newest)
        ))  # fmt: skip
        group = GroupProgress(
            name=name, desc=descs.get(name, ""),
            ranks=tuple(ranks[r] for r in sorted(ranks)),
            newest=newest, newest_op=newest_op, missing=missing,
            no_dump=tuple(sorted(members.get(name, set()) - dumped)),
        )  # fmt: skip
        groups.append(replace(group, line=group.message))
    return tuple(groups)


def _group_order(name: str) -> tuple[int, int, str]:
    """Numeric group names (torch's default: "0", "1", …) in number order, then others."""
    return (0, int(name), "") if name.isdigit() and len(name) < 18 else (1, 0, name)
