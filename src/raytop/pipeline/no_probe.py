"""Each Train run with no probe report gets its reason (``diagnose.no_probe``), from the
evidence the cluster and this node give: what the run's job's probe filed in the KV store,
and the ``RAY_TRAIN_CALLBACKS`` of the process that built its trainer.

That process is the run's job's driver (the job table names its pid and address), or the
actor that owns the run's Train controller (a Tune trial's: the actor table names its pid
and node). A run is judged once it has been seen for the bound: from when this collector
first saw it, or from its job's start when the run was already there at raytop's first
look (a run that has been silent for an hour need not be watched for 20 s more).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from raytop.diagnose.no_probe import why_no_probe
from raytop.model import Node, TrainRun
from raytop.model.jobs import Job
from raytop.model.untrusted import Invalid
from raytop.model.untrusted_kv import probe_problem
from raytop.sources.trainer_env import TrainerEnvReader
from raytop.wire.gcs import ClusterUnreachable
from raytop.wire.kv_keys import PROBE_PROBLEM_PREFIX

MAX_REMEMBERED = 10_000  # runs whose first sighting is kept


class NoProbeReasons:
    """Judges the runs with no probe, remembering when each was first seen."""

    def __init__(self, env: TrainerEnvReader, is_local: Callable[[str], bool],
                 problems: Callable[[list[str]], dict[str, bytes]] | None) -> None:  # fmt: skip
        """``is_local(address)``: the address is this node's; ``problems(keys)``: the
        KV values of those keys (None: no KV store to ask)."""
        self._env = env
        self._is_local = is_local
        self._problems = problems
        self._first_seen: dict[str, float] = {}
        self._first_look = True
        self.warnings: list[str] = []

    def judge(self, runs: tuple[TrainRun, ...], actors: Mapping[str, dict[str, Any]],
              jobs: tuple[Job, ...], nodes: tuple[Node, ...],
              now: float) -> tuple[TrainRun, ...]:  # fmt: skip
        self.warnings = []
        silent = [r for r in runs if not r.instrumented]
        by_job = {j.job_id: j for j in jobs if j.job_id}
        problems = self._read_problems({r.job_id for r in silent if r.job_id})
        judged = {r.run_id: self._judge(r, actors, by_job, nodes, problems, now) for r in silent}
        self._first_look = False
        for gone in set(self._first_seen) - set(judged):
            del self._first_seen[gone]
        return tuple(dataclasses.replace(r, no_probe=judged.get(r.run_id)) for r in runs)

    def _judge(self, run, actors, by_job, nodes, problems, now):
        job = by_job.get(run.job_id or "")
        if run.run_id not in self._first_seen and len(self._first_seen) < MAX_REMEMBERED:
            since = job.start_time if self._first_look and job and job.start_time else now
            self._first_seen[run.run_id] = min(since, now)
        waited = now - self._first_seen.get(run.run_id, now)
        problem = problems.get(run.job_id or "")
        return why_no_probe(
            self._trainer_env(run, actors, job, nodes),
            ranks=len(run.workers),
            waited_s=waited,
            problem=problem["problem"] if problem else None,
            problem_ray=problem["ray"] if problem else None,
        )

    def _trainer_env(self, run, actors, job, nodes):
        controller = actors.get(run.run_id.removeprefix("actor-"))
        owner = None
        if controller is not None:
            owner = next((a for a in actors.values() if a["address"] == controller["owner"]), None)
        if owner is not None:
            address = next((n.address for n in nodes if n.node_id == owner["node_id"]), "")
            who = f"the actor that built the trainer ({owner['class_name']}, pid {owner['pid']})"
            return self._env.read(who, owner["pid"], bool(address) and self._is_local(address))
        if job is None:
            return self._env.read(f"the driver of job {run.job_id}", None, False)
        who = f"job {job.job_id}'s driver (pid {job.driver_pid})"
        local = bool(job.driver_ip) and self._is_local(job.driver_ip or "")
        return self._env.read(who, job.driver_pid, local, job.start_time)

    def _read_problems(self, job_ids: set[str]) -> dict[str, Any]:
        if not job_ids or self._problems is None:
            return {}
        keys = sorted(PROBE_PROBLEM_PREFIX + j for j in job_ids)
        try:
            found = self._problems(keys)
        except ClusterUnreachable:  # the ledger's reader says the KV store is unreachable
            return {}
        problems = {}
        for key, raw in found.items():
            try:
                problems[key.removeprefix(PROBE_PROBLEM_PREFIX)] = probe_problem(json.loads(raw))
            except (Invalid, ValueError) as exc:
                self.warnings.append(f"KV {key}: ignored: {exc}")
        return problems
