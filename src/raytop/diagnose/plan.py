"""Capacity planning before launch: can a sweep's concurrent trials place, and how many at once?

A torch trial holds two things at once: its Tune trial bundle (the trial driver) and, once
it runs, its Train worker group (``num_workers`` identical bundles placed with the scaling
strategy). Tune starts up to ``max_concurrent_trials`` drivers without knowing about the
worker groups they will ask for (docs/RAY_FACTS.md#tune-train-nesting): drivers that take
what the workers need deadlock every trial. Summed totals do not say whether each bundle
fits (docs/RAY_FACTS.md#placement-group-table), so this works node by node, strategy by
strategy.

Given how many driver bundles sit on each node, the free worker slots per node ``s_i`` decide
how many worker groups of ``n`` bundles fit:

* PACK / SPREAD (soft): ``sum(s_i) // n``
* STRICT_PACK: ``sum(s_i // n)`` (each group on one node)
* STRICT_SPREAD: the largest ``k`` with ``sum(min(s_i, k)) >= k * n`` (each group on ``n``
  distinct nodes; groups may share nodes)

The planner looks for the driver placement that lets the most trials run: exhaustively on
small clusters; on large ones, the best of three greedy placements (which may under-count
running trials, never over-count them), and an exact check that one group can run before it
says no trial can. A deadlock verdict therefore means no placement of the drivers can let
any trial run.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from dataclasses import dataclass

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
EXHAUSTIVE_LIMIT = 20_000  # driver placements tried exactly before falling back to greedy
ALWAYS = 1 << 30  # "unlimited" copies of a bundle (far above any trial or worker count)

FITS, NEVER_PLACEABLE, DEADLOCK, UNDER_UTILISED = (
    "fits", "never_placeable", "deadlock", "under_utilised",
)  # fmt: skip
EXIT_CODES = {FITS: 0, NEVER_PLACEABLE: 12, DEADLOCK: 13, UNDER_UTILISED: 13}


@dataclass(frozen=True)
class NodeShape:
    name: str
    resources: dict[str, float]


@dataclass(frozen=True)
class TrialShape:
    driver: dict[str, float]  # the Tune trial bundle
    worker: dict[str, float]  # one Train worker bundle
    num_workers: int
    strategy: str = "PACK"


@dataclass(frozen=True)
class Plan:
    verdict: str
    trials: int  # trials in the sweep
    concurrent: int  # trials Tune would start at once (drivers placed)
    running: int  # of those, how many can have their worker group placed
    binding: str | None  # the resource that limits concurrency
    reasons: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()
    suggested_max_concurrent: int | None = None
    num_workers: int = 0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def fmt_res(resources: dict[str, float]) -> str:
    shown = {k: v for k, v in resources.items() if v}
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(shown.items())) + "}"


def slots(free: dict[str, float], bundle: dict[str, float]) -> int:
    """How many copies of ``bundle`` fit in ``free``; a bundle asking nothing fits 'always'
    (``ALWAYS``, also the most counted: a tiny need, e.g. ``CPU = 1e-320``, would otherwise
    make the ratio infinite)."""
    counts = [free.get(r, 0.0) / need for r, need in bundle.items() if need > 0]
    return max(0, math.floor(min(min(counts), ALWAYS) + 1e-9)) if counts else ALWAYS


def groups(worker_slots: list[int], n: int, strategy: str) -> int:
    """How many worker groups of ``n`` bundles fit, given free worker slots per node."""
    if n <= 0:
        return ALWAYS
    if strategy == "STRICT_PACK":
        return sum(s // n for s in worker_slots)
    if strategy == "STRICT_SPREAD":
        counts = Counter(worker_slots)  # few distinct values on real clusters
        lo, hi = 0, sum(worker_slots) // n
        while lo < hi:  # the largest k with sum(min(s, k)) >= k * n
            mid = (lo + hi + 1) // 2
            if sum(min(v, mid) * c for v, c in counts.items()) >= mid * n:
                lo = mid
            else:
                hi = mid - 1
        return lo
    return sum(worker_slots) // n


class _Capacity:
    """Worker slots left on node ``i`` with ``d`` drivers on it, computed on demand and
    shared between nodes of the same shape (large clusters are mostly identical nodes)."""

    def __init__(self, nodes: list[NodeShape], trial: TrialShape, max_drivers: int) -> None:
        self.trial = trial
        ids: dict[tuple, int] = {}
        self.shape_of = [
            ids.setdefault(tuple(sorted(n.resources.items())), len(ids)) for n in nodes
        ]
        self.resources = {i: dict(shape) for shape, i in ids.items()}
        cap_of = {i: min(slots(r, trial.driver), max_drivers) for i, r in self.resources.items()}
        self.caps = [cap_of[i] for i in self.shape_of]
        self._cache: dict[tuple[int, int], int] = {}
        # Drivers that take nothing a worker needs (the torch default {CPU: 0, memory: 1}
        # next to {CPU: 1} workers) leave every node's worker slots as they are: then where
        # they go does not matter, and the worker groups of the empty cluster all run.
        self.independent = not any(
            need > 0 and trial.worker.get(r, 0) > 0 for r, need in trial.driver.items()
        )
        self.empty_groups = groups(
            [self.worker_slots(i, 0) for i in range(len(nodes))], trial.num_workers, trial.strategy
        )

    def worker_slots(self, i: int, drivers: int) -> int:
        key = (self.shape_of[i], drivers)
        found = self._cache.get(key)
        if found is None:
            free = dict(self.resources[key[0]])
            for r, need in self.trial.driver.items():
                free[r] = free.get(r, 0.0) - drivers * need
            found = self._cache[key] = slots(free, self.trial.worker)
        return found


def best_running(capacity: _Capacity, drivers: int) -> int:
    """How many of ``drivers`` started trials can run (have their worker group placed next
    to all the driver bundles), for the best driver placement (exhaustive when small, greedy
    otherwise); -1 if the drivers themselves do not fit."""
    trial = capacity.trial
    caps = [min(c, drivers) for c in capacity.caps]
    if sum(caps) < drivers:
        return -1
    if capacity.independent:
        return min(drivers, capacity.empty_groups)

    def value(placement: list[int] | tuple[int, ...]) -> int:
        s = [capacity.worker_slots(i, d) for i, d in enumerate(placement)]
        return min(drivers, groups(s, trial.num_workers, trial.strategy))

    count = 1
    for c in caps:
        count *= c + 1
        if count > EXHAUSTIVE_LIMIT:
            break
    if count <= EXHAUSTIVE_LIMIT:
        return max(
            value(p) for p in itertools.product(*(range(c + 1) for c in caps)) if sum(p) == drivers
        )
    # No single greedy is right for every strategy: take the best of three placements, and
    # never report 0 without checking exactly that no placement lets one group run.
    best = max(value(p) for p in _greedy_placements(capacity, caps, drivers))
    if best == 0 and drivers > 0 and _one_group_fits(capacity, caps, drivers):
        best = 1
    return best


def _greedy_placements(capacity: _Capacity, caps: list[int], drivers: int):
    """Drivers where they cost the fewest worker slots (STRICT_PACK: whole groups first),
    ties to the most room then to the least room; and the least roomy nodes filled first."""
    strict_pack = capacity.trial.strategy == "STRICT_PACK"
    unit = max(1, capacity.trial.num_workers) if strict_pack else 1
    for room in (-1, 1):
        placement = [0] * len(caps)
        heap = [_cost(capacity, placement, i, room, unit) for i, c in enumerate(caps) if c]
        heapq.heapify(heap)
        for _ in range(drivers):
            *_, i = heapq.heappop(heap)
            placement[i] += 1
            if placement[i] < caps[i]:
                heapq.heappush(heap, _cost(capacity, placement, i, room, unit))
        yield placement
    placement, left = [0] * len(caps), drivers
    for i in sorted(range(len(caps)), key=lambda i: (capacity.worker_slots(i, 0), -caps[i], i)):
        placement[i] = min(caps[i], left)
        left -= placement[i]
    yield placement


def _cost(
    capacity: _Capacity, placement: list[int], i: int, room: int, unit: int
) -> tuple[int, int, int, int]:
    here, then = capacity.worker_slots(i, placement[i]), capacity.worker_slots(i, placement[i] + 1)
    return here // unit - then // unit, here - then, room * here, i


def _one_group_fits(capacity: _Capacity, caps: list[int], drivers: int) -> bool:
    """Exactly: is there a placement of ``drivers`` driver bundles next to one worker group?
    Node i holding b worker bundles gives up ``loss(i, b)`` of its driver room; the group
    fits if the cheapest way to place it gives up no more than the spare room."""
    n, strategy = capacity.trial.num_workers, capacity.trial.strategy
    spare = sum(caps) - drivers
    memo: dict[tuple[int, int, int], int | None] = {}

    def loss(i: int, b: int) -> int | None:
        key = (capacity.shape_of[i], caps[i], b)
        if key not in memo:
            if capacity.worker_slots(i, 0) < b:
                memo[key] = None
            else:  # the most drivers that still leave b worker slots (slots fall with d)
                lo, hi = 0, caps[i]
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    lo, hi = (mid, hi) if capacity.worker_slots(i, mid) >= b else (lo, mid - 1)
                memo[key] = caps[i] - lo
        return memo[key]

    if strategy == "STRICT_PACK":
        return any((x := loss(i, n)) is not None and x <= spare for i in range(len(caps)))
    if strategy == "STRICT_SPREAD":
        losses = sorted(x for i in range(len(caps)) if (x := loss(i, 1)) is not None)
        return len(losses) >= n and sum(losses[:n]) <= spare
    # PACK / SPREAD: the cheapest way to spread n bundles, by dynamic programming over the
    # nodes (of one shape, n nodes at most can be useful), along the smaller of two axes:
    # the bundles placed (least loss for t bundles) or the spare room (most bundles for a
    # loss of c; a deadlock leaves no spare room, so this is one pass over the nodes).
    # A node's choices stop at the first b it cannot hold or that costs more than spare
    # (the loss never falls as b grows).
    per_shape: Counter = Counter()
    best = [0] + [math.inf] * n if spare >= n else [0] * (spare + 1)
    for i in range(len(caps)):
        per_shape[capacity.shape_of[i], caps[i]] += 1
        if per_shape[capacity.shape_of[i], caps[i]] > n:
            continue
        choices = []  # (loss, bundles) for b = 1..
        for b in range(1, n + 1):
            x = loss(i, b)
            if x is None or x > spare:
                break
            choices.append((x, b))
        if not choices:
            continue
        if spare >= n:  # best[t]: the least loss that places t bundles
            best = [
                min([best[t]] + [best[t - b] + x for x, b in choices if b <= t])
                for t in range(n + 1)
            ]
            if best[n] <= spare:
                return True
        else:  # best[c]: the most bundles placed for a loss of at most c
            most = {}
            for x, b in choices:  # per loss, the most bundles
                most[x] = b
            best = [
                max([best[c]] + [best[c - x] + b for x, b in most.items() if x <= c])
                for c in range(spare + 1)
            ]
            if best[spare] >= n:
                return True
    return best[n] <= spare if spare >= n else best[spare] >= n


def _trial_need(trial: TrialShape) -> dict[str, float]:
    """What one running trial holds in all: its driver and its whole worker group."""
    need: dict[str, float] = dict(trial.driver)
    for r, v in trial.worker.items():
        need[r] = need.get(r, 0.0) + v * trial.num_workers
    return need


def _whole_trials(nodes: list[NodeShape], trial: TrialShape) -> int:
    """How many running trials the cluster's summed totals could hold (an upper bound)."""
    totals = [
        sum(n.resources.get(r, 0.0) for n in nodes) / v
        for r, v in _trial_need(trial).items()
        if v > 0
    ]
    return math.floor(min(min(totals), ALWAYS) + 1e-9) if totals else ALWAYS


def _binding(nodes: list[NodeShape], trial: TrialShape) -> str | None:
    ratios = {}
    for r, v in _trial_need(trial).items():
        if v > 0:
            ratios[r] = sum(n.resources.get(r, 0.0) for n in nodes) / v
    return min(ratios, key=ratios.get) if ratios else None


def never_placeable_reasons(nodes: list[NodeShape], trial: TrialShape) -> list[str]:
    """Sentences for what cannot place even on the empty cluster."""
    reasons = []
    for label, bundle in (("the trial bundle", trial.driver), ("a worker bundle", trial.worker)):
        if any(slots(n.resources, bundle) > 0 for n in nodes):
            continue
        found = []  # this bundle's reasons (the other bundle's must not hide them)
        for r, need in sorted(bundle.items()):
            if need <= 0:
                continue
            largest = max((n.resources.get(r, 0.0) for n in nodes), default=0.0)
            if largest == 0:
                found.append(f"{label} needs {fmt_res({r: need})}; no node has {r}")
            elif largest < need:
                found.append(f"{label} needs {r} {need:g}; the largest node has {largest:g}")
        reasons += found or [f"{label} {fmt_res(bundle)} fits no single node"]
    if reasons:
        return reasons
    n = trial.num_workers
    worker_slots = [slots(node.resources, trial.worker) for node in nodes]
    if groups(worker_slots, n, trial.strategy) >= 1:
        return []
    if trial.strategy == "STRICT_PACK":
        total = fmt_res({r: v * n for r, v in trial.worker.items()})
        most = max(worker_slots)
        return [f"STRICT_PACK needs {total} on one node; the largest node holds {most} of the "
                f"{n} worker bundles"]  # fmt: skip
    if trial.strategy == "STRICT_SPREAD":
        able = sum(1 for s in worker_slots if s > 0)
        return [f"STRICT_SPREAD needs {n} nodes that each hold a worker bundle; {able} can"]
    total = fmt_res({r: v * n for r, v in trial.worker.items()})
    return [f"{n} worker bundles need {total}; the whole cluster holds {sum(worker_slots)} of them"]


def plan(
    nodes: list[NodeShape], trial: TrialShape, trials: int, max_concurrent: int | None
) -> Plan:
    """The verdict for a sweep of ``trials`` trials of this shape on these nodes."""
    wanted = min(trials, max_concurrent or trials)
    binding = _binding(nodes, trial)
    reasons = never_placeable_reasons(nodes, trial)
    if reasons:
        return Plan(
            NEVER_PLACEABLE, trials, 0, 0, binding, tuple(reasons), num_workers=trial.num_workers
        )
    capacity = _Capacity(nodes, trial, wanted)
    # Tune starts only the drivers that fit: d drivers fit (sum(min(cap_i, d)) >= d) exactly
    # when sum(cap_i) >= d, so no search is needed (a count-down was 100k calls at the cap).
    concurrent = min(wanted, sum(capacity.caps))
    running = best_running(capacity, concurrent)
    # The highest concurrency at which every started trial runs. If c trials fit with their
    # workers, so do c - 1: the predicate is monotone, so search it. The ``running`` trials
    # found above run on their own (the other drivers only took room); no more trials can
    # run than worker groups fit on the empty cluster, nor than the cluster's totals hold
    # whole trials. The top of that range is tried first: on uniform clusters it is the
    # answer, and the search is one call instead of ~17 at the trial cap.
    lo = min(running, concurrent)
    hi = min(concurrent, capacity.empty_groups, _whole_trials(nodes, trial))
    hi = max(lo, hi)
    if lo < hi and best_running(capacity, hi) >= hi:
        lo = hi  # the top holds: nothing left to search
    hi -= lo < hi  # else the top is out
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if best_running(capacity, mid) >= mid:
            lo = mid
        else:
            hi = mid - 1
    good = lo
    if running == concurrent == wanted < trials:
        binding = "max_concurrent_trials"
    suggestions: list[str] = []
    if good and good < wanted:
        suggestions.append(f"set [tune] max_concurrent_trials = {good}")
    uses_cpu = trial.driver.get("CPU", 0) > 0 and trial.worker.get("CPU", 0) > 0
    if uses_cpu:
        suggestions.append(
            "give trials no CPU: [tune] trial_resources = { CPU = 0, memory = 1 } (the trial "
            "only drives its TorchTrainer; the CPUs go to its workers)"
        )
    if running == 0:
        verdict = DEADLOCK
        reasons = [
            f"{concurrent} trial driver(s) of {fmt_res(trial.driver)} leave no room for a "
            f"worker group of {trial.num_workers} × {fmt_res(trial.worker)} "
            f"({trial.strategy}): every trial would wait forever (Train retries without limit)"
        ]
        if not good and not uses_cpu:
            suggestions.append("the cluster cannot run even one trial with its driver: add nodes")
    elif running < concurrent:
        verdict = UNDER_UTILISED
        reasons = [
            f"{concurrent} trials start but only {running} worker group(s) fit; the other "
            f"{concurrent - running} driver(s) hold {fmt_res(trial.driver)} while they wait"
        ]
    else:
        verdict = FITS
        reasons = [f"{running} trial(s) run at once; {binding or 'nothing'} binds"]
    return Plan(
        verdict, trials, concurrent, running, binding, tuple(reasons), tuple(suggestions),
        suggested_max_concurrent=good or None, num_workers=trial.num_workers,
    )  # fmt: skip
