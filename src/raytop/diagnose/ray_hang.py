"""Ray's own NCCL hang verdict (Ray 2.60's detector, ``model.nccl_ras``) beside raytop's.

Ray confirms a hang from NCCL's op counts after its confirmation time (10 min by default);
raytop classifies one from the ranks' reports and where each rank is, after the run's own
stall threshold. Both are shown, and which came first: raytop's moment is when the run's
last progress crossed its threshold, Ray's the time of the files it uploaded.

- ``ray_nccl_hang`` (an error; ``check`` exits 18 as for a collective hang): Ray confirmed
  a hang and no rank has reported since.
- ``ray_nccl_hang_past`` (info): Ray confirmed one, and the run has reported since (an
  earlier attempt's, or ``observe`` mode and the run moved on), or the attempt is over
  (action ``fail`` ends it).

Before a verdict, ``detector_line`` says whether the detector watches the run at all, and
how (``model.nccl_ras.RayHangDetector``): a user who turned it on sees it on from the first
worker group, not ten minutes into a hang.

Pure (``diagnose`` floor).
"""

from __future__ import annotations

from raytop.diagnose.hang import StallLimit, last_progress, stall_limit
from raytop.diagnose.refs import of_attempt
from raytop.model import Finding, Severity, TrainRun
from raytop.model.format import fmt_duration
from raytop.model.nccl_ras import RayHangDetector, RayHangVerdict
from raytop.model.records import DETECTOR_OFF
from raytop.model.thresholds import Thresholds

OWN_HANG_KINDS = frozenset({
    "collective_hang", "data_loader_hang", "io_hang", "compute_hang", "controller_stuck",
    "checkpoint_upload_stuck", "barrier_stall",
})  # fmt: skip


def ray_hang_findings(run: TrainRun, own: list[Finding], t: Thresholds, over: bool,
                      limit: StallLimit | None = None) -> list[Finding]:  # fmt: skip
    """The finding for Ray's verdict on ``run``, if any; ``own``: raytop's findings on it;
    ``over``: the attempt has ended; ``limit``: its stall limit (by default
    ``hang.stall_limit``'s).
    Its ``ranks`` stay empty: NCCL numbers the ranks of each communicator, which are
    Train's world ranks only in the default group."""
    verdict = run.ray_hang
    if verdict is None:
        return []
    subject = f"run {run.run_name} attempt {run.attempt_index}"
    progress = last_progress(run)
    at = verdict.confirmed_at
    evidence = {"run_id": run.run_id, "folder": verdict.folder, "confirmed_at": at,
                "stack_ranks": list(verdict.stack_ranks)}  # fmt: skip
    head = f"Ray's NCCL hang detector confirmed a hang: {verdict.where()}"
    files = f"its evidence in {verdict.folder}"
    if over or (at is not None and progress is not None and progress > at):
        since = "the attempt is over" if over else "the run has reported since"
        line = f"{head}; {since} ({files})"
        return [Finding("ray_nccl_hang_past", Severity.INFO, subject, line, evidence,
                        **of_attempt(run))]  # fmt: skip
    mine = [f for f in own if f.kind in OWN_HANG_KINDS]
    if not mine:
        order = "raytop has not named a hang on this run"
    elif at is None or progress is None:
        order = f"raytop names it {mine[0].kind}"
    else:
        named_at = progress + (limit or stall_limit(run, t)).seconds
        gap = fmt_duration(abs(at - named_at))
        first = "raytop first" if named_at <= at else "Ray first"
        order = f"raytop names it {mine[0].kind}; {first}, by {gap}"
    line = f"{head}; {order} ({files})"
    return [Finding("ray_nccl_hang", Severity.ERROR, subject, line, evidence, **of_attempt(run))]


DETECTOR_ENV = "RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR"


def detector_line(detector: RayHangDetector, verdict: RayHangVerdict | None) -> str:
    """One line on Ray's detector on a run, with its verdict so far: ``Ray's NCCL hang
    detector: on (observe, polls every 15s, confirms after 10m00s), no verdict yet``."""
    head = "Ray's NCCL hang detector"
    if not detector.on:
        if detector.state == DETECTOR_OFF:
            return f"{head}: off ({DETECTOR_ENV} was not 1 or true where the trainer was built)"
        return f"{head}: not available on this Ray ({detector.ray or '?'}; it came in 2.60)"
    how = (f"{detector.action}, polls every {fmt_duration(detector.poll_s)}, "
           f"confirms after {fmt_duration(detector.confirm_s)}")  # fmt: skip
    if verdict is not None:
        return f"{head}: on ({how}), confirmed a hang: its evidence in {verdict.folder}"
    if detector.disabled:
        return (f"{head}: on ({how}), but Ray stopped it for the rest of this run (ncclras "
                "missing, older than NCCL 2.28, or failing: see the controller's log)")  # fmt: skip
    return f"{head}: on ({how}), no verdict yet"
