"""From a run spec and a cluster description to the planner's input (``diagnose.plan``).

Node shapes come from the live cluster (each alive node's total resources), from a
NODES.toml that describes a cluster not yet there (e.g. a KubeRay worker group of 4 × 4-GPU
nodes), or from the spec's ``[cluster]`` (the embedded cluster ``raytop run`` would start).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from raytop.diagnose.plan import NodeShape, Plan, TrialShape, plan
from raytop.diagnose.search import SweepIntent, search_not_adaptive
from raytop.jsonfile import DIRECTORY, MISSING, Unread, read_capped
from raytop.launch.spec import RunSpec, SpecError
from raytop.launch.toml_text import MAX_TOML_BYTES, TomlUnusable, parse_toml
from raytop.model import Finding
from raytop.model.paths import is_uri
from raytop.model.resources import resource_name

PLENTY = 1e18  # a resource a node description leaves out is not what binds
# Nodes a NODES.toml may describe (all counts together). The planner looks at nodes one by
# one; at this size a plan at the trial cap (spec.MAX_TRIALS) still answers within 2 s.
MAX_NODES = 10_000


def trial_count(spec: RunSpec) -> int:
    """Trials the sweep creates: the product of the grid sizes, times num_samples."""
    grid = math.prod(len(s.values) for s in spec.param_space.values() if s.kind == "grid")
    return grid * spec.tune.num_samples


def worker_bundle(spec: RunSpec) -> dict[str, float]:
    """Ray Train's default per-worker resources: {CPU: 1}, or {GPU: 1} (and no CPU) with
    use_gpu; the spec's ``resources_per_worker`` when it gives them."""
    if spec.scaling.resources_per_worker is not None:
        return dict(spec.scaling.resources_per_worker)
    return {"GPU": 1.0} if spec.scaling.use_gpu else {"CPU": 1.0}


def trial_shapes(spec: RunSpec) -> list[TrialShape]:
    """One shape, or two for elastic scaling (planned at both ends)."""
    if spec.trainable.kind != "torch":  # a function trainable is its own driver: no workers
        return [TrialShape(spec.trial_resources, {}, 0)]
    sizes = spec.scaling.num_workers
    ends = list(sizes) if isinstance(sizes, tuple) else [sizes]
    return [
        TrialShape(spec.trial_resources, worker_bundle(spec), n, spec.scaling.placement_strategy)
        for n in ends
    ]


def nodes_from_spec(spec: RunSpec) -> list[NodeShape]:
    resources = {"CPU": float(spec.cluster.num_cpus or os.cpu_count() or 1),
                 "memory": PLENTY, **spec.cluster.resources}  # fmt: skip
    if spec.cluster.num_gpus:
        resources["GPU"] = float(spec.cluster.num_gpus)
    return [NodeShape("embedded", resources)]


def nodes_from_file(path: Path) -> list[NodeShape]:
    """NODES.toml: ``[[nodes]]`` tables with an optional ``count`` and ``name``; every other
    key is a resource (``CPU = 16``, ``GPU = 4``, ``memory = 64e9``, custom ones). Read
    and parsed within the bounds of a spec (``toml_text``)."""
    try:
        data = parse_toml(read_capped(path, MAX_TOML_BYTES), str(path))
    except Unread as exc:
        if exc.kind == MISSING:
            raise SpecError(f"cluster description not found: {path}") from None
        if exc.what == DIRECTORY:
            raise SpecError(f"{path}: cannot read it (Is a directory)") from None
        raise SpecError(str(exc)) from None
    except TomlUnusable as exc:
        raise SpecError(str(exc)) from None
    entries = data.get("nodes")
    if not isinstance(entries, list) or not entries:
        raise SpecError(f"{path}: expected one or more [[nodes]] tables")
    nodes: list[NodeShape] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SpecError(f"{path}: [[nodes]] #{i + 1}: expected a table")
        count = entry.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise SpecError(f"{path}: [[nodes]] #{i + 1} count: expected an integer >= 1")
        if len(nodes) + count > MAX_NODES:
            raise SpecError(
                f"{path}: [[nodes]] #{i + 1} count: {len(nodes) + count:,} nodes in all, above "
                f"the limit of {MAX_NODES:,}"
            )
        resources = {"memory": PLENTY}
        for key, value in entry.items():
            if key in ("count", "name"):
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < 0:
                raise SpecError(f"{path}: [[nodes]] #{i + 1} {key}: expected a number >= 0")
            resources[resource_name(key)] = float(value)
        name = entry.get("name", f"group{i + 1}")
        if not isinstance(name, str):
            raise SpecError(f"{path}: [[nodes]] #{i + 1} name: expected a string")
        nodes += [NodeShape(f"{name}-{j}", dict(resources)) for j in range(count)]
    return nodes


def nodes_from_cluster(nodes: list[dict]) -> list[NodeShape]:
    return [NodeShape(n["node_id"][:8], dict(n["resources_total"])) for n in nodes if n["alive"]]


@dataclass(frozen=True)
class SweepPlan:
    plans: tuple[Plan, ...]  # one per end of the worker-count range
    cluster_label: str
    warnings: tuple[str, ...]
    findings: tuple[Finding, ...] = ()  # about the sweep itself (e.g. search_not_adaptive)

    @property
    def verdict_plan(self) -> Plan:
        """The plan that decides: the smallest worker group (elastic runs start there)."""
        return self.plans[0]

    @property
    def exit_code(self) -> int:
        return self.verdict_plan.exit_code


def plan_sweep(spec: RunSpec, nodes: list[NodeShape], cluster_label: str) -> SweepPlan:
    warnings = []
    if len(nodes) > 1 and not is_uri(spec.experiment.storage_path):
        warnings.append(
            f"storage_path {spec.experiment.storage_path} is a local folder on a "
            f"{len(nodes)}-node cluster: checkpoints will not be reachable by every worker "
            "nor survive the pod; use shared storage (s3://…, NFS)"
        )
    trials = trial_count(spec)
    plans = tuple(
        plan(nodes, shape, trials, spec.tune.max_concurrent_trials) for shape in trial_shapes(spec)
    )
    return SweepPlan(plans, cluster_label, tuple(warnings), sweep_findings(spec))


def sweep_intent(spec: RunSpec) -> SweepIntent:
    return SweepIntent(
        metric=spec.tune.metric,
        num_samples=spec.tune.num_samples,
        search=spec.tune.search.kind,
        scheduler=spec.tune.scheduler.kind,
        samplers={key: sampler.kind for key, sampler in spec.param_space.items()},
    )


def sweep_findings(spec: RunSpec) -> tuple[Finding, ...]:
    found = search_not_adaptive(sweep_intent(spec))
    return (found,) if found else ()


def describe(sweep: SweepPlan) -> list[str]:
    """Lines for a terminal."""
    lines = [f"plan on {sweep.cluster_label}:"]
    for p in sweep.plans:
        workers = f" with {p.num_workers} workers" if p.num_workers else ""
        lines.append(
            f"  {p.verdict.upper()}{workers}: {p.trials} trial(s), {p.concurrent} started at "
            f"once, {p.running} running; binding resource: {p.binding or '-'}"
        )
        lines += [f"    {reason}" for reason in p.reasons]
        lines += [f"    suggestion: {s}" for s in p.suggestions]
    lines += [f"  warning: {w}" for w in sweep.warnings]
    lines += [f"  {f.severity.value}: {f.kind}: {f.message}" for f in sweep.findings]
    return lines
