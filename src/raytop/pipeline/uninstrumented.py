"""Train runs raytop did not instrument, found in the cluster's actor table.

A Ray Train V2 run is a ``TrainController`` actor that owns one ``RayTrainWorker`` actor per
rank (RAY_NOTES c, h). Without raytop's probe in its workers there are no report counts,
but the actor table still says that the run exists, how many workers it has, and where each
runs (pid, node). Such a run is shown with ``instrumented=False``, so the faces can mark
what needs the probe and say how to add it (``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe``).

A controller is left out when the ledger already has a run with any of its workers' pids
(the probe is there), or when it belongs to a Tune trial raytop launched (its probe reports
once the worker group is up).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from raytop.model import TrainRun, Worker

CONTROLLER = "TrainController"
WORKER = "RayTrainWorker"


def uninstrumented_runs(
    actors: dict[str, dict[str, Any]],
    instrumented: Iterable[TrainRun],
    launched_by_raytop: Callable[[str], bool],
) -> tuple[TrainRun, ...]:
    """``actors``: the alive actors as ``wire.gcs.GcsReader.actors`` returns them;
    ``launched_by_raytop(owner address)``: the controller was created by a raytop trial."""
    probed_pids = {w.pid for r in instrumented for w in r.workers if w.pid is not None}
    workers_of: dict[str, list[dict[str, Any]]] = {}
    for actor in actors.values():
        if actor["class_name"] == WORKER:
            workers_of.setdefault(actor["owner"], []).append(actor)
    runs = []
    for actor_id, controller in sorted(actors.items()):
        if controller["class_name"] != CONTROLLER or launched_by_raytop(controller["owner"]):
            continue
        members = sorted(workers_of.get(controller["address"], []), key=lambda a: a["pid"])
        if probed_pids & {a["pid"] for a in members}:
            continue
        runs.append(
            TrainRun(
                run_id=f"actor-{actor_id}",
                run_name=f"Train run of job {controller['job_id']} (no probe)",
                attempt_id=actor_id,
                world_size=len(members),
                workers=tuple(
                    Worker(rank=i, pid=a["pid"], node_id=a["node_id"])
                    for i, a in enumerate(members)
                ),
                instrumented=False,
            )
        )
    return tuple(runs)
