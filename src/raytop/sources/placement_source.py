"""Placement groups from the GCS, each given an owner (who it is for: a fact of the
cluster's tables, read; why an unplaced one waits is the pipeline's judgement,
``pipeline.pending.with_why_pending``).

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
from raytop.model.jobs import Job
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
        self._bad: dict[str, str] = {}  # key → why its registration is left out
        self.warnings: list[str] = []  # the keys left out, one line each
        self._listed = False  # in this collection (``new_read``)
        # id(a group's row) → (the row, its Bundles): the rows last read
        self._bundles: dict[int, tuple[dict[str, Any], tuple[Bundle, ...]]] = {}
        # Every group of the last read, removed ones too: pg id → (creator job, creator
        # actor): whose a group was, even once Ray removed it (a run's job, its holdings).
        self.creators: dict[str, tuple[str, str]] = {}

    def new_read(self) -> None:
        """A collection begins: the registrations are listed again, once in it (``read``
        and ``raytop_trial_at`` both need them; the listing names every trial that ever
        started, 9,300 keys in a 10,000-trial sweep)."""
        self._listed = False

    def _registrations(self) -> dict[str, dict[str, Any]]:
        if self._listed:
            return self._trials
        self._listed = True
        try:
            listed = self._kv.keys(TRIAL_PREFIX)
            new = [k for k in listed if k[len(TRIAL_PREFIX) :] not in self._trials]
            found = self._kv.multi_get([k for k in new if k not in self._bad])
        except RayLacks:
            return self._trials
        for key, blob in found.items():
            try:
                if not isinstance(blob, (bytes, str)):
                    raise untrusted.Invalid(f"expected bytes, got {type(blob).__name__}")
                record = untrusted.parse(blob, untrusted.MAX_KV_VALUE_BYTES)
                self._trials[key[len(TRIAL_PREFIX) :]] = untrusted_kv.trial_registration(record)
            except ValueError as exc:
                self._bad[key] = untrusted.problem(key, exc)  # a registration is written once
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
        every = self._reader.placement_groups()
        self.creators = {g["pg_id"]: (g["creator_job_id"], g["creator_actor_id"]) for g in every}
        raw = [g for g in every if g["state"] != "REMOVED"]
        if not raw:
            return ()
        trials = self._registrations()
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
        known = _Known(by_pg, foreign_pg, actors, actor_at, trials, run_of_pg,
                       experiment_of_job, others)  # fmt: skip
        return tuple(self._labelled(g, self._bundles[id(g)][1], now, known) for g in raw)

    def raytop_trial_at(self, actors: dict[str, dict[str, Any]]) -> set[str]:
        """The addresses (``ip:port``) of the alive actors that are raytop's Tune trials."""
        trials = self._registrations()
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
            age_s=now - g["created_at"] if g["created_at"] else None,
            owner_kind=kind,
            owner=owner,
            experiment=experiment,
            trial_id=trial_id,
            leaked=g["creator_dead"] and not g["detached"],
        )


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
