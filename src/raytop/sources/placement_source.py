"""Placement groups from the GCS, each given an owner (who it is for: a fact of the
cluster's tables, read; why an unplaced one waits is the pipeline's judgement,
``pipeline.pending``).

Owners: a raytop trial registers its actor and placement group (``trial/<actor id>`` in
the KV store); a Train worker group is known from the ledger (the probes report their
group) or from its creator, a TrainController owned by a registered trial actor; a group
created by a watched experiment's Tune driver with no owner yet is a pending trial's.

For an experiment raytop did not launch there is no registration: a trial's group is
known from the trial's actor (``Others.trials``: the pipeline found it by the pid its last
result names, ``pipeline.foreign``), which Ray schedules into it; a placed group its
driver created for a trial not known yet is named by its job. Any other group is named
by its creator job: ``Ray job <submission id>: <command>`` or ``driver script: <command>``
when the job is known (``model.jobs.Job.label``).

A registration is untrusted input (``model.untrusted_kv.trial_registration``): one over its
size cap or of the wrong shape is left out and ``warnings`` names its key. On a Ray that
cannot list or fetch KV keys (``wire.gcs.RayLacks``) the groups are read with no
registrations (the collector's warnings name what this Ray lacks).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raytop.model import (
    Bundle,
    Experiment,
    PlacementGroup,
    TrainRun,
    untrusted,
    untrusted_kv,
)
from raytop.model.evolve import evolve
from raytop.model.identity import same_items, same_values
from raytop.model.jobs import Job
from raytop.model.refresh import same_second
from raytop.rundir import train_run_name
from raytop.wire.gcs import GcsKv, GcsReader, RayLacks
from raytop.wire.kv_keys import TRIAL_PREFIX


@dataclass(frozen=True)
class Others:
    """What the pipeline knows of the runs raytop did not launch, to name their groups:
    ``trials``: actor id → (experiment, trial id) of their trials' alive actors;
    ``jobs``: the cluster's jobs by id; ``drivers``: the jobs of their Tune drivers."""

    trials: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    jobs: Mapping[str, Job] = field(default_factory=dict)
    drivers: frozenset[str] = frozenset()


class PlacementReader:
    def __init__(self, reader: GcsReader, kv: GcsKv) -> None:
        self._reader = reader
        self._kv = kv
        self._trials: dict[str, dict[str, Any]] = {}  # actor id → registration
        self._bad: dict[str, str] = {}  # actor id → why its registration is left out
        self._asking = _Asking()
        self.warnings: list[str] = []  # the keys left out, one line each
        self._listed = False  # in this collection (``new_read``)
        # id(a group's row) → (the row, its Bundles): the rows last read
        self._bundles: dict[int, tuple[dict[str, Any], tuple[Bundle, ...]]] = {}
        # Every group of the last read, removed ones too: pg id → (creator job, creator
        # actor): whose a group was, even once Ray removed it (a run's job, its holdings).
        self.creators: dict[str, tuple[str, str]] = {}
        self._every: list[dict[str, Any]] = []  # the rows ``creators`` was made of
        self._made: _Made | None = None  # the last read's groups, and what they came of
        # The groups the read before handed out, when this read's are those with only their
        # ages moved (what was said of them but their ages holds: ``pipeline.kept_groups``).
        self.aged_from: tuple[PlacementGroup, ...] | None = None

    def new_read(self) -> None:
        """A collection begins: registrations are asked for again, once in it (``read`` and
        ``raytop_trial_at`` both need them)."""
        self._listed = False

    def _registrations(self, actors: Mapping[str, Mapping[str, Any]],
                       now: float) -> dict[str, dict[str, Any]]:  # fmt: skip
        """The registrations of the alive actors that are raytop's trials, by actor id.

        Only an alive trial actor's registration names anything (its group, its address),
        and the trial writes it itself, once it runs: so it is fetched by key for the
        alive actors that could be a trial and are not known yet, never by listing every
        trial that ever registered (9,300 keys, 353 kB a refresh in a 10,000-trial
        sweep). A raytop trial actor is made by its Tune driver, a driver, not an actor,
        into the placement group Tune's default resource manager makes for every trial:
        actors an alive actor owns (Train's controller, its workers and helpers), or in no
        group (raytop's Ledger), are never asked for. One with no registration is asked
        again on a schedule (``_Asking``), so a trial that registers late is still named."""
        if self._listed:
            return self._trials
        self._listed = True
        # What no longer lives names nothing: forgotten, so a long sweep holds no more
        # than its alive trials (and a bad registration's warning ends with its actor).
        self._trials = {a: r for a, r in self._trials.items() if a in actors}
        self._bad = {a: why for a, why in self._bad.items() if a in actors}
        addresses = {row.get("address") for row in actors.values()}
        candidates = [a for a, row in actors.items()
                      if row.get("pg_id") and row.get("owner") not in addresses
                      and a not in self._trials and a not in self._bad]  # fmt: skip
        due = self._asking.due(candidates, now)
        try:
            found = self._kv.multi_get([TRIAL_PREFIX + a for a in due]) if due else {}
        except RayLacks:
            return self._trials
        for key, blob in found.items():
            actor = key[len(TRIAL_PREFIX) :]
            try:
                if not isinstance(blob, (bytes, str)):
                    raise untrusted.Invalid(f"expected bytes, got {type(blob).__name__}")
                record = untrusted.parse(blob, untrusted.MAX_KV_VALUE_BYTES)
                self._trials[actor] = untrusted_kv.trial_registration(record)
            except ValueError as exc:
                self._bad[actor] = untrusted.problem(key, exc)  # a registration is written once
        self.warnings = list(self._bad.values())
        return self._trials

    def read(
        self,
        experiments: list[Experiment],
        runs: tuple[TrainRun, ...],
        actors: dict[str, dict[str, Any]],
        now: float | None = None,
        others: Others | None = None,
    ) -> tuple[PlacementGroup, ...]:
        """``actors``: the alive actors (``GcsReader.actors``), read once per collect;
        ``others``: what is known of the runs raytop did not launch."""
        now = time.time() if now is None else now
        others = others or Others()
        self.aged_from = None
        every = self._reader.placement_groups()
        if not same_items(self._every, every):  # the same rows: the very same dict
            self.creators = {g["pg_id"]: (g["creator_job_id"], g["creator_actor_id"])
                             for g in every}  # fmt: skip
            self._every = every
        raw = [g for g in every if g["state"] != "REMOVED"]
        if not raw:
            self._made = None
            return ()
        trials = self._registrations(actors, now)
        by_pg = {t["pg_id"]: t for t in trials.values() if t.get("pg_id")}
        actor_at = {a["address"]: actor_id for actor_id, a in actors.items()}
        run_of_pg = {r.placement_group_id: r for r in runs if r.placement_group_id}
        experiment_of_job = {e.job_id: e.name for e in experiments if e.job_id}
        # A group row the GCS reader did not parse again (unchanged) keeps its bundles.
        before, self._bundles = self._bundles, {}
        for g in raw:
            kept = before.get(id(g))
            self._bundles[id(g)] = (
                kept if kept is not None and kept[0] is g
                else (g, tuple(Bundle(**b) for b in g["bundles"]))
            )  # fmt: skip
        # A trial of an experiment raytop did not launch: its actor's group is the trial's.
        foreign_pg = {actors[a]["pg_id"]: t for a, t in others.trials.items()
                      if a in actors and actors[a].get("pg_id")}  # fmt: skip
        basis = _Basis(raw, actors, trials, {g: (r.run_name, r.trial_id)
                       for g, r in run_of_pg.items()}, experiment_of_job, others)  # fmt: skip
        made = self._made
        if made is not None and made.basis == basis:
            # The very same tuple while the wall clock is in the same second (their ages
            # as of when they were made, ``model.refresh``): at 2,000 groups, making and
            # judging them again was a quarter of a refresh where nothing changed
            # (docs/PERFORMANCE.md, issue 25).
            if same_second(now, made.at):
                return made.groups
            # Only time moved: the same groups, each with its age moved on (~1 µs a group;
            # labelling 2,000 again was ~15 ms once a second).
            groups = tuple(evolve(g, age_s=_age(now, g.created_at)) for g in made.groups)
            self._made, self.aged_from = _Made(basis, now, groups), made.groups
            return groups
        known = _Known(by_pg, foreign_pg, actors, actor_at, trials, run_of_pg,
                       experiment_of_job, others)  # fmt: skip
        groups = tuple(self._labelled(g, self._bundles[id(g)][1], now, known) for g in raw)
        self._made = _Made(basis, now, groups)
        return groups

    def raytop_trial_at(self, actors: dict[str, dict[str, Any]]) -> set[str]:
        """The addresses (``ip:port``) of the alive actors that are raytop's Tune trials."""
        trials = self._registrations(actors, time.time())
        return {a["address"] for actor_id, a in actors.items() if actor_id in trials}

    @staticmethod
    def _labelled(g: dict[str, Any], bundles: tuple[Bundle, ...], now: float,
                  known: _Known) -> PlacementGroup:  # fmt: skip
        kind, owner, experiment = "other", None, known.experiment_of_job.get(g["creator_job_id"])
        trial_id = None
        creator = known.actors.get(g["creator_actor_id"])
        placed = g["state"] == "CREATED"
        if g["pg_id"] in known.by_pg:
            record = known.by_pg[g["pg_id"]]
            kind, owner, experiment = "trial", record["trial_id"], record["experiment"]
            trial_id = record["trial_id"]
        elif g["pg_id"] in known.foreign_pg:
            experiment, trial_id = known.foreign_pg[g["pg_id"]]
            kind, owner = "trial", trial_id
        elif g["pg_id"] in known.run_of_pg:
            run = known.run_of_pg[g["pg_id"]]
            kind, owner, trial_id = "train_run", run.run_name, run.trial_id
        elif creator is not None and creator["class_name"] == "TrainController":
            trial_actor = known.actor_at.get(creator["owner"], "")
            record = known.trials.get(trial_actor)
            foreign = known.others.trials.get(trial_actor)
            kind = "train_run"
            if record:  # the raytop trainable names runs <experiment>-<trial id>
                owner = train_run_name(record["experiment"], record["trial_id"])
                experiment, trial_id = record["experiment"], record["trial_id"]
            elif foreign:  # a user's trainable names its run as it likes: not known here
                experiment, trial_id = foreign
                owner = f"of trial {trial_id}"
        elif (experiment is not None and creator is None
              and not (placed and g["creator_job_id"] in known.others.drivers)):  # fmt: skip
            # Unplaced: a trial Tune has not started. Placed, for a driver raytop did not
            # launch: a trial's, not known yet which (its first result names its actor).
            kind = "pending_trial"
        if owner is None and kind == "other":
            job = known.others.jobs.get(g["creator_job_id"])
            owner = job.label if job is not None else f"job {g['creator_job_id']}"
        return PlacementGroup(
            pg_id=g["pg_id"],
            strategy=g["strategy"],
            state=g["state"],
            scheduling_state=g["scheduling_state"],
            bundles=bundles,
            name=g["name"],
            attempts=g["attempts"],
            created_at=g["created_at"],
            age_s=_age(now, g["created_at"]),
            owner_kind=kind,
            owner=owner,
            experiment=experiment,
            trial_id=trial_id,
            leaked=g["creator_dead"] and not g["detached"],
        )


def _age(now: float, created_at: float | None) -> float | None:
    return now - created_at if created_at else None


@dataclass(frozen=True)
class _Known:
    """What one read names groups from (built once per read)."""

    by_pg: dict[str, dict[str, Any]]  # a raytop trial's registration, by its group
    foreign_pg: dict[str, tuple[str, str]]  # (experiment, trial id), by the trial's group
    actors: dict[str, dict[str, Any]]
    actor_at: dict[str, str]  # actor id, by its address
    trials: dict[str, dict[str, Any]]  # raytop's registrations, by actor id
    run_of_pg: dict[str, TrainRun]
    experiment_of_job: dict[str, str]
    others: Others


class _Basis:
    """What a read's groups are made of: the GCS's rows, the alive actors and the trials'
    registrations (each the very objects the readers hold, until read again), the Train
    runs' groups, the experiments' jobs, what is known of the runs raytop did not
    launch. Equal when all of them are."""

    def __init__(self, rows: list[dict[str, Any]], actors: Mapping[str, Any],
                 trials: Mapping[str, Any], runs: dict[str, tuple[str, str | None]],
                 jobs: dict[str, str], others: Others) -> None:  # fmt: skip
        self.rows, self.actors, self.trials = rows, actors, trials
        self.runs, self.jobs, self.others = runs, jobs, others

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Basis):
            return NotImplemented
        return (
            same_items(self.rows, other.rows)
            and same_values(self.actors, other.actors)
            and same_values(self.trials, other.trials)
            and (self.runs, self.jobs, self.others) == (other.runs, other.jobs, other.others)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class _Made:
    basis: _Basis
    at: float
    groups: tuple[PlacementGroup, ...]


class _Asking:
    """When to ask again for the registration of an alive actor that had none: at every
    collection for its first ``EVERY_COLLECTION_S`` (a raytop trial registers as its
    function starts, a moment after its actor is alive, later on a loaded node), then after
    as long again as it has been seen, at most every ``AT_MOST_EVERY_S`` (an actor that
    never registers: another Tune driver's trial). An actor no longer asked about is
    forgotten."""

    EVERY_COLLECTION_S = 15.0
    AT_MOST_EVERY_S = 60.0

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, float]] = {}  # actor id → (first seen, next ask)

    def due(self, actors: list[str], now: float) -> list[str]:
        """Of ``actors`` (those with no registration yet), the ones to ask for now."""
        seen, self._seen, due = self._seen, {}, []
        for actor in actors:
            first, next_ask = seen.get(actor, (now, now))
            if now >= next_ask:
                due.append(actor)
                age = now - first
                wait = 0.0 if age < self.EVERY_COLLECTION_S else min(age, self.AT_MOST_EVERY_S)
                next_ask = now + wait
            self._seen[actor] = (first, next_ask)
        return due
