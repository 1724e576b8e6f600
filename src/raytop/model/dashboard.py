"""What the overview's dashboard says about one trial's Train run, as plain values.

The overview shows, beside the trials, the run of the selected (or the only running)
trial: the phase it is in and for how long, a strip of its ranks, its latest
checkpoints and where its bundles are. The decisions (which phase, which ranks to list
when there are too many to show, what to leave out when lines are short) are here, free
of Textual, so they are unit-tested and the widgets only paint them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from raytop.model.cluster import PlacementGroup
from raytop.model.format import fmt_duration
from raytop.model.snapshot import Trial
from raytop.model.train_run import CheckpointRecord, TrainRun, Worker

# Phases in the order a run goes through them.
WAITING = "waiting"  # the trial itself is not placed yet
SCHEDULING = "scheduling"  # the trial runs; its Train worker group is being placed
STARTING = "starting"  # the worker group is placed; its ranks are coming up
TRAINING = "training"
PAUSED = "paused"
FINISHED = "finished"
ERRORED = "errored"
UNFINISHED = "unfinished"  # history from storage: not ended when storage last heard of it
PHASES = (WAITING, SCHEDULING, STARTING, TRAINING, PAUSED, FINISHED, ERRORED, UNFINISHED)


@dataclass(frozen=True)
class Phase:
    name: str  # one of PHASES
    detail: str  # one short sentence: what it waits for, or how far it is


def groups_of(trial: Trial, run: TrainRun | None, groups: Sequence[PlacementGroup]):
    """The placement groups serving ``trial``: its own (Tune's) and its Train run's."""
    pg_id = run.placement_group_id if run else None
    return tuple(g for g in groups if g.trial_id == trial.trial_id or g.pg_id == pg_id)


def run_phase(trial: Trial, run: TrainRun | None, groups: Sequence[PlacementGroup] = ()) -> Phase:
    """Where ``trial``'s Train run is, from its Tune status, the ledger's record of its
    ranks (``run``: None until a rank has started) and its placement groups."""
    if trial.status == "ERROR":
        return Phase(ERRORED, _first_line(trial.error) or "the trial raised")
    if run is not None and run.from_storage:  # history: no ledger, no ranks to count
        kept = f"from storage · {len(run.checkpoints)} checkpoint(s)"
        if trial.status == "TERMINATED":
            return Phase(FINISHED, kept)
        return Phase(UNFINISHED, f"{trial.status} when last saved · {kept}")
    if trial.status == "TERMINATED" or (run is not None and run.finished):
        return Phase(FINISHED, f"{_reports(run)} reports" if run else "done")
    if trial.status == "PAUSED":
        return Phase(PAUSED, "paused by the scheduler")
    if trial.status != "RUNNING":
        return Phase(WAITING, trial.pending_reason or "waiting for the trial's resources")
    if run is None and trial.iterations > 0:  # Tune has results: it trains, unprobed
        return Phase(TRAINING, f"iteration {trial.iterations} (no report ledger for its ranks)")
    if run is None:
        worker_group = [g for g in groups if g.owner_kind == "train_run"]
        if not worker_group:
            return Phase(SCHEDULING, "the Train controller is starting")
        group = worker_group[-1]
        size = len(group.bundles)
        if not group.placed:
            why = group.why_pending or "waiting for resources"
            return Phase(SCHEDULING, f"placing {size} worker bundle(s): {why}")
        return Phase(STARTING, f"worker group placed, ranks starting 0/{size}")
    up, size = len(run.workers), run.world_size
    if up < size:
        return Phase(STARTING, f"worker group starting {up}/{size}")
    if not any(w.reports_entered for w in run.workers):
        return Phase(STARTING, f"{size}/{size} ranks up, waiting for the first report")
    return Phase(TRAINING, f"report {_reports(run)} · {size} rank(s)")


def _reports(run: TrainRun | None) -> int:
    return max((w.reports_exited for w in run.workers), default=0) if run else 0


def _first_line(text: str | None) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


class PhaseClock:
    """How long each subject has been in its phase, as raytop saw it: the moment a new
    phase was first seen (a phase that began before raytop attached counts from then,
    which the label says with ``≥``)."""

    def __init__(self) -> None:
        self._since: dict[str, tuple[str, float, bool]] = {}

    def seen(self, subject: str, phase: str, now: float, at_least: str = "≥") -> str:
        """``for 12s`` (``for ≥12s`` when the phase was already on at the first look)."""
        known = self._since.get(subject)
        if known is None:
            self._since[subject] = (phase, now, True)
        elif known[0] != phase:
            self._since[subject] = (phase, now, False)
        _, since, at_first_look = self._since[subject]
        return f"for {at_least if at_first_look else ''}{fmt_duration(now - since)}"


# -- the rank strip ---------------------------------------------------------------------


@dataclass(frozen=True)
class RankCell:
    rank: int
    reports: int  # reports it has entered: where a barrier stall shows
    behind: int
    age_s: float | None  # since it last entered report
    state: str  # Worker.state: training, waiting, behind, silent, dead, done
    stalled: bool  # the one a barrier waits for

    rate_per_min: float | None = None  # Worker.rate_per_min: the one rate of the rank
    # Its time shares (the last minute's, else its attempt's; ``Worker.time_shares``).
    shares: dict[str, float] | None = field(default=None, hash=False)

    @property
    def text(self) -> str:
        """``r3 41 -1 12s``: rank, reports, how many behind (if any), last report age."""
        behind = f" -{self.behind}" if self.behind else ""
        return f"r{self.rank} {self.reports}{behind} {fmt_duration(self.age_s)}"


@dataclass(frozen=True)
class CountBar:
    """One line of the histogram: how many ranks have made ``reports`` reports."""

    reports: int
    ranks: int
    share: float  # of the largest bar, 0..1


@dataclass(frozen=True)
class RankStrip:
    cells: tuple[RankCell, ...] = ()  # every rank, when they fit
    bars: tuple[CountBar, ...] = ()  # else: the counts as a histogram …
    laggards: tuple[RankCell, ...] = ()  # … and the ranks that need a look
    more_laggards: int = 0  # laggards not listed for want of room
    cell_width: int = 0


MIN_CELL_WIDTH = len("r0 0 0s") + 2  # the narrowest a rank's cell can be, with its gap


def _cell(w: Worker, stalled: frozenset[int], now: float) -> RankCell:
    return RankCell(
        w.rank, w.reports_entered, w.behind, w.since_report(now), w.state, w.rank in stalled,
        w.rate_per_min, w.recent_time_shares or w.time_shares,
    )  # fmt: skip


def rank_cells(run: TrainRun, now: float, stalled: Sequence[int] = ()) -> tuple[RankCell, ...]:
    """Every rank of the run as a cell, by rank; its age as of ``now``
    (``Snapshot.ages_at``)."""
    stall = frozenset(stalled)
    return tuple(_cell(w, stall, now) for w in sorted(run.workers, key=lambda w: w.rank))


def rank_strip(
    run: TrainRun, now: float, width: int, lines: int, stalled: Sequence[int] = ()
) -> RankStrip:
    """Every rank as a cell (ages as of ``now``) when they fit in ``lines`` lines of
    ``width`` characters;
    otherwise a histogram of report counts (most common count first) and a line of the
    ranks that are behind, stalled or unwell: with hundreds of ranks, those are the ones
    a user needs named."""
    if not run.workers or lines <= 0:
        return RankStrip()
    stall = frozenset(stalled)
    if len(run.workers) <= max(1, width // MIN_CELL_WIDTH) * lines:  # they may fit
        cells = rank_cells(run, now, stalled)
        cell_width = max(len(c.text) for c in cells) + 2
        per_line = max(1, width // cell_width)
        if len(cells) <= per_line * lines:
            return RankStrip(cells=cells, cell_width=cell_width)
    # Too many to show each: counted from the workers, cells made for the laggards alone
    # (a 2,000-rank run's strip took 5 ms a redraw making a cell and its text per rank).
    counts = Counter(w.reports_entered for w in run.workers)
    top = counts.most_common(max(1, lines - 1))
    biggest = top[0][1]
    bars = tuple(
        CountBar(reports, ranks, ranks / biggest)
        for reports, ranks in sorted(top, key=lambda kv: -kv[0])
    )
    laggards = [
        w for w in sorted(run.workers, key=lambda w: w.rank)
        if w.rank in stall or w.behind or w.state in ("silent", "dead", "behind")
    ]  # fmt: skip
    # Cells for those that could be shown at all (at the narrowest cell width).
    shown = tuple(_cell(w, stall, now) for w in laggards[: max(1, (width - 10) // MIN_CELL_WIDTH)])
    cell_width = max((len(c.text) for c in shown), default=MIN_CELL_WIDTH - 2) + 2
    room = max(1, (width - 10) // cell_width)
    return RankStrip(
        bars=bars,
        laggards=shown[:room],
        more_laggards=max(0, len(laggards) - room),
        cell_width=cell_width,
    )


# -- checkpoints and placement, one line each -------------------------------------------


def latest_checkpoints(run: TrainRun, count: int) -> tuple[CheckpointRecord, ...]:
    """The newest ``count`` checkpoints of the run (by report, then folder name)."""
    ordered = sorted(
        run.checkpoints, key=lambda c: (c.report_index is not None, c.report_index or 0, c.dir_name)
    )
    return tuple(reversed(ordered))[: max(0, count)]


def bundle_places(
    groups: Sequence[PlacementGroup], run: TrainRun | None
) -> list[tuple[int, str | None, tuple[str, ...]]]:
    """(bundle index, its node or None while unplaced, the GPU ids its rank holds) for
    the Train worker group (else the trial's own group). A rank's GPUs are matched to the
    bundle of the same index on the same node: Train gives rank i bundle i."""
    worker_groups = [g for g in groups if g.owner_kind == "train_run"] or list(groups)
    if not worker_groups:
        return []
    group = worker_groups[-1]
    gpus = {w.rank: (w.node_id, w.gpu_ids) for w in run.workers} if run else {}
    places = []
    for bundle in group.bundles:
        node, ids = gpus.get(bundle.index, (None, ()))
        held = ids if node is not None and node == bundle.node_id else ()
        places.append((bundle.index, bundle.node_id, tuple(held)))
    return places
