"""The way to a running driver: the capacity plan, the cluster (named, found, or
started), then the detached driver.

``run`` and ``resume`` both go through ``launch_run``; it raises ``LaunchError`` (one line
for the user, and a ``reason`` a caller can act on without reading the line) and reports
progress through ``progress``. The cluster and the launcher are called through their
modules (``cluster.resolve``, ``launcher.launch``): tests replace them where they are
defined. What an existing experiment folder allows is ``experiment_folder``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from raytop.diagnose.plan import DEADLOCK, NEVER_PLACEABLE
from raytop.launch import cluster, launcher
from raytop.launch.cluster import Target
from raytop.launch.launcher import Launched
from raytop.launch.planning import (
    SweepPlan,
    describe,
    nodes_from_cluster,
    nodes_from_file,
    nodes_from_spec,
    plan_sweep,
)
from raytop.launch.preflight import preflight
from raytop.launch.spec import RunSpec, SpecError, with_experiment
from raytop.launch.start_progress import finished_of, waiting_of
from raytop.model import Cluster
from raytop.process_identity import driver_alive
from raytop.rundir import TRIALS_INDEX, TRIALS_WHOLE, raytop_dir_for
from raytop.wire.gcs import ClusterUnreachable, GcsReader, nodes_from_gcs
from raytop.wire.version import RayUnsupported

# LaunchError.reason: what stopped the launch.
ALREADY_RUNNING = "already_running"  # the experiment's driver still runs
SPEC = "spec"  # the spec does not preflight (entrypoint import, storage) or a nodes file
UNREACHABLE = "unreachable"  # the named cluster cannot be reached (or its Ray is unsupported)
CLUSTER_NOT_STARTED = "cluster_not_started"  # the embedded cluster did not come up
PLAN_REFUSED = "plan_refused"  # never placeable or deadlock, and not --force


class LaunchError(Exception):
    """Nothing was launched: ``str`` is the one line for the user; ``exit_code`` is the
    plan's code when the plan refused (else None: the caller's code for ``reason``)."""

    def __init__(self, reason: str, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.exit_code = exit_code


def renamed(run_spec: RunSpec) -> RunSpec:
    """``run --new-name``: the same sweep as a fresh experiment beside it, name + time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{run_spec.experiment.name}-{stamp}"
    return with_experiment(run_spec, name, run_spec.experiment.storage_path)


def resolve_target(address: str | None) -> Target | None:
    """The cluster to use (``launch.cluster.resolve``), unreachable as a ``LaunchError``."""
    try:
        return cluster.resolve(address)
    except (ClusterUnreachable, RayUnsupported) as exc:
        raise LaunchError(UNREACHABLE, str(exc)) from None


def plan_for(
    run_spec: RunSpec, target: Target | None, cluster_file: str | None = None
) -> SweepPlan:
    """The capacity plan on the named cluster file, the live cluster, or the embedded one
    ``run`` would start."""
    if cluster_file:
        try:
            return plan_sweep(run_spec, nodes_from_file(Path(cluster_file)), cluster_file)
        except SpecError as exc:
            raise LaunchError(SPEC, str(exc)) from None
    if target is not None:
        try:
            nodes = nodes_from_cluster(GcsReader(target.address).nodes())
            return plan_sweep(run_spec, nodes, f"the cluster at {target.address}")
        except ClusterUnreachable as exc:
            raise LaunchError(UNREACHABLE, str(exc)) from None
    return plan_sweep(run_spec, nodes_from_spec(run_spec), "the embedded cluster of [cluster]")


def check_plan(run_spec: RunSpec, target: Target | None, force: bool,
               progress: Callable[[str], None]) -> None:  # fmt: skip
    """Show the plan; refuse what can never run (exit 12) or would deadlock (13)."""
    sweep = plan_for(run_spec, target)
    for line in describe(sweep):
        progress(line)
    verdict = sweep.verdict_plan
    if verdict.verdict in (NEVER_PLACEABLE, DEADLOCK) and not force:
        fix = f"; {verdict.suggestions[0]}" if verdict.suggestions else ""
        raise LaunchError(PLAN_REFUSED, (
            f"refusing to launch: {verdict.verdict.replace('_', ' ')}: {verdict.reasons[0]}{fix} "
            "(or --force)"
        ), verdict.exit_code)  # fmt: skip


def cluster_differs(target: Target, run_spec: RunSpec) -> str | None:
    """A reused embedded cluster keeps the resources it was started with: the line that
    says how it differs from the spec's ``[cluster]``, if it does (and can be read)."""
    wanted = {"CPU": run_spec.cluster.num_cpus, "GPU": run_spec.cluster.num_gpus}
    try:
        nodes = nodes_from_gcs(GcsReader(target.address).nodes())
    except ClusterUnreachable:
        return None
    seen = Cluster(target.address, connected=True, embedded=True, nodes=nodes)
    differ = [f"{r} {seen.total(r):g} (spec: {n})" for r, n in wanted.items()
              if n is not None and seen.total(r) != n]  # fmt: skip
    if not differ:
        return None
    return (
        f"reusing the embedded cluster at {target.address} with {', '.join(differ)}; "
        "`raytop down` first to start one with the spec's [cluster]"
    )


def launch_run(
    run_spec: RunSpec,
    address: str | None,
    *,
    force: bool = False,
    errored: str | None = None,
    progress: Callable[[str], None] = lambda _msg: None,
) -> tuple[Launched, Target]:
    """Launch the detached driver of a new sweep, or (``errored`` set) of its resume.

    In order: its driver must not run already; the spec preflights before any plan or
    cluster (an entrypoint that cannot import is one line, and nothing was started for
    it); a new sweep's plan is shown and may refuse; the named or found cluster is used,
    else the embedded one started; ``launch`` preflights again (it is idempotent)."""
    raytop_dir = raytop_dir_for(run_spec.experiment_path, run_spec.experiment.name)
    pid, alive = driver_alive(raytop_dir)
    if alive:
        raise LaunchError(ALREADY_RUNNING, (
            f"experiment '{run_spec.experiment.name}' is already running (driver pid {pid}); "
            "attach with `raytop`"
        ))  # fmt: skip
    try:
        preflight(run_spec)
    except SpecError as exc:
        raise LaunchError(SPEC, str(exc)) from None
    target = resolve_target(address)
    if errored is None:
        check_plan(run_spec, target, force, progress)
    if target is None:
        try:
            target = cluster.start_embedded(run_spec.cluster, progress=progress)
        except ClusterUnreachable as exc:
            raise LaunchError(CLUSTER_NOT_STARTED, str(exc)) from None
    elif target.embedded and (differs := cluster_differs(target, run_spec)) is not None:
        progress(differs)
    try:
        return launcher.launch(run_spec, target, errored=errored), target
    except SpecError as exc:
        raise LaunchError(SPEC, str(exc)) from None


DRIVER_TASK = "starting the driver"
DRIVER_UP_TIMEOUT_S = 120.0


def wait_for_driver(
    raytop_dir: Path, progress: Callable[[str], None], *,
    timeout_s: float = DRIVER_UP_TIMEOUT_S, poll_s: float = 0.25,
) -> bool:  # fmt: skip
    """Wait while a launched driver comes up: it connects to Ray (``job.json``), then its
    first trial is in its table (``trials/index.json``; an older raytop's driver wrote
    ``trials.json``). Each phase goes to ``progress`` (a ``launch.start_progress.Progress`` shows
    the wait in place); the end is one line. True once
    a trial is there; False when the driver ended first (``exit.json``, or its process
    gone) or ``timeout_s`` passed: the caller follows the run either way."""
    waiting, started = waiting_of(progress), time.monotonic()
    while True:
        took = f"{time.monotonic() - started:.0f} s"
        if any((raytop_dir / table).exists() for table in (TRIALS_INDEX, TRIALS_WHOLE)):
            finished_of(progress)(f"driver up in {took}: its first trial is in")
            return True
        if (raytop_dir / "exit.json").exists() or driver_alive(raytop_dir)[1] is False:
            finished_of(progress)(f"the driver ended after {took}, before any trial")
            return False
        if time.monotonic() - started > timeout_s:
            finished_of(progress)(f"no trial yet after {took}; following the run anyway")
            return False
        connected = (raytop_dir / "job.json").exists()
        waiting(DRIVER_TASK, "waiting for the first trial" if connected
                else "waiting for the driver to connect to Ray")  # fmt: skip
        time.sleep(poll_s)
