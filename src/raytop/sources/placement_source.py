"""Placement groups from the GCS, each given an owner and, when unplaced, a reason.

Owners: a raytop trial registers its actor and placement group (``trial/<actor id>`` in
the KV store); a Train worker group is known from the ledger (the probes report their
group) or from its creator, a TrainController owned by a registered trial actor; a group
created by a watched experiment's Tune driver with no owner yet is a pending trial's.

A registration is untrusted input (``model.untrusted_kv.trial_registration``): one over its
size cap or of the wrong shape is left out and ``warnings`` names its key.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from raytop.diagnose.placement import Capacity, why_pending
from raytop.model import (
    Bundle,
    Experiment,
    Node,
    PlacementGroup,
    TrainRun,
    untrusted,
    untrusted_kv,
)
from raytop.rundir import train_run_name
from raytop.wire.gcs import GcsKv, GcsReader
from raytop.wire.kv_keys import TRIAL_PREFIX


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

    def new_read(self) -> None:
        """A collection begins: the registrations are listed again, once in it (``read``
        and ``raytop_trial_at`` both need them; the listing names every trial that ever
        started, 9,300 keys in a 10,000-trial sweep)."""
        self._listed = False

    def _registrations(self) -> dict[str, dict[str, Any]]:
        if self._listed:
            return self._trials
        self._listed = True
        keys = [
            k
            for k in self._kv.keys(TRIAL_PREFIX)
            if k[len(TRIAL_PREFIX) :] not in self._trials and k not in self._bad
        ]
        for key, blob in self._kv.multi_get(keys).items():
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
        nodes: tuple[Node, ...],
        experiments: list[Experiment],
        runs: tuple[TrainRun, ...],
        actors: dict[str, dict[str, Any]],
        now: float | None = None,
    ) -> tuple[PlacementGroup, ...]:
        """``actors``: the alive actors (``GcsReader.actors``), read once per collect."""
        now = time.time() if now is None else now
        raw = [g for g in self._reader.placement_groups() if g["state"] != "REMOVED"]
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
        groups = [self._labelled(g, self._bundles[id(g)][1], now, by_pg, actors, actor_at,
                                 trials, run_of_pg, experiment_of_job) for g in raw]  # fmt: skip
        listed = list(nodes)
        capacity = Capacity(listed, groups)  # asked once, for every waiting group
        return tuple(
            g if g.placed else _with_reason(g, why_pending(g, listed, groups, capacity))
            for g in groups
        )

    def raytop_trial_at(self, actors: dict[str, dict[str, Any]]) -> set[str]:
        """The addresses (``ip:port``) of the alive actors that are raytop's Tune trials."""
        trials = self._registrations()
        return {a["address"] for actor_id, a in actors.items() if actor_id in trials}

    @staticmethod
    def _labelled(g, bundles, now, by_pg, actors, actor_at, trials, run_of_pg, experiment_of_job):
        kind, owner, experiment = "other", None, experiment_of_job.get(g["creator_job_id"])
        trial_id = None
        creator = actors.get(g["creator_actor_id"])
        if g["pg_id"] in by_pg:
            record = by_pg[g["pg_id"]]
            kind, owner, experiment = "trial", record["trial_id"], record["experiment"]
            trial_id = record["trial_id"]
        elif g["pg_id"] in run_of_pg:
            run = run_of_pg[g["pg_id"]]
            kind, owner, trial_id = "train_run", run.run_name, run.trial_id
        elif creator is not None and creator["class_name"] == "TrainController":
            record = trials.get(actor_at.get(creator["owner"], ""))
            kind = "train_run"
            if record:  # the raytop trainable names runs <experiment>-<trial id>
                owner = train_run_name(record["experiment"], record["trial_id"])
                experiment, trial_id = record["experiment"], record["trial_id"]
        elif experiment is not None and creator is None:
            kind = "pending_trial"
        if owner is None and kind == "other":
            owner = f"job {g['creator_job_id']}"
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


def _with_reason(pg: PlacementGroup, reason: str) -> PlacementGroup:
    return dataclasses.replace(pg, why_pending=reason)
