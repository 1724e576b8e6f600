"""``raytop check`` exit codes: one per finding class, the most severe one wins.

Findings of other kinds are printed but leave the code at 0: ``check`` answers "is the
training healthy enough to keep running", for liveness and readiness probes.
"""

from __future__ import annotations

from raytop.model import Finding

HEALTHY = 0
BARRIER_STALL = 10
RANK_DEAD_OR_SILENT = 11
PLACEMENT_INFEASIBLE = 12
PLACEMENT_WAITING = 13
TEARDOWN_UNSAFE = 14
RETRY_LOOP = 15
CONTROLLER_STUCK = 16
CHECKPOINT_UPLOAD_STUCK = 17
COLLECTIVE_HANG = 18
DATA_LOADER_HANG = 19
CLUSTER_UNREACHABLE = 20
IO_HANG = 21
COMPUTE_HANG = 22

CODE_OF_KIND = {
    "cluster_unreachable": CLUSTER_UNREACHABLE,
    "barrier_stall": BARRIER_STALL,
    "report_mispaired": BARRIER_STALL,
    "rank_dead": RANK_DEAD_OR_SILENT,
    "rank_silent": RANK_DEAD_OR_SILENT,
    "placement_infeasible": PLACEMENT_INFEASIBLE,
    "placement_waiting": PLACEMENT_WAITING,
    "checkpoint_failed": TEARDOWN_UNSAFE,
    "checkpoint_collision": TEARDOWN_UNSAFE,
    "checkpoint_missing": TEARDOWN_UNSAFE,
    "retry_loop": RETRY_LOOP,
    "controller_stuck": CONTROLLER_STUCK,
    "report_undeliverable": CONTROLLER_STUCK,
    "checkpoint_upload_stuck": CHECKPOINT_UPLOAD_STUCK,
    "collective_hang": COLLECTIVE_HANG,
    "ray_nccl_hang": COLLECTIVE_HANG,  # Ray's own detector confirmed it (Ray 2.60)
    "data_loader_hang": DATA_LOADER_HANG,
    "io_hang": IO_HANG,
    "compute_hang": COMPUTE_HANG,
}

# Most severe first: without the cluster nothing else can be known; a hang whose place is
# known (the controller, an upload, a collective, the data loader, I/O, the loop's own
# code) and a barrier stall block every rank forever; an infeasible group waits forever;
# a dead or silent rank may still be retried by Train; a feasible group may still get its
# resources. A retry loop burns resources on a failure that keeps coming back, but its
# run is not stuck.
SEVERITY_ORDER = (
    CLUSTER_UNREACHABLE, CONTROLLER_STUCK, CHECKPOINT_UPLOAD_STUCK, COLLECTIVE_HANG,
    DATA_LOADER_HANG, IO_HANG, COMPUTE_HANG, BARRIER_STALL, PLACEMENT_INFEASIBLE, TEARDOWN_UNSAFE,
    RANK_DEAD_OR_SILENT, RETRY_LOOP, PLACEMENT_WAITING,
)  # fmt: skip


def exit_code(findings: tuple[Finding, ...] | list[Finding]) -> int:
    codes = {CODE_OF_KIND[f.kind] for f in findings if f.kind in CODE_OF_KIND}
    for code in SEVERITY_ORDER:
        if code in codes:
            return code
    return HEALTHY


EXIT_CODES_HELP = """Exit codes:
  0   healthy (other findings are printed but do not fail the check)
  10  barrier stall: a rank waits in ray.train.report for another past the stall
      threshold, or ranks made different numbers of report calls (mis-paired barriers)
  11  a rank is dead (no heartbeat) or silent (alive, not reporting for far longer
      than usual)
  12  a placement group (a trial or a Train worker group) can never be placed
  13  a placement group has waited longer than --waiting-after for resources
  14  a checkpoint upload failed, ranks wrote different contents under one file name into
      one checkpoint (identical copies are not a fault), or a committed checkpoint is
      gone; with --teardown: something a resume needs is not on
      storage yet (driver still running, experiment state missing, a checkpoint
      uncommitted or missing)
  15  a Train run failed 3 or more times in a row with the same error and Train will
      retry it again (retries left, or max_failures=-1: forever)
  16  the ranks reported and the controller does not take it: it is stuck, or a run
      failed because the controller could not load a reported metric
  17  a checkpoint upload is stuck (far past its bytes at the run's usual throughput)
  18  no report, and ranks wait in a collective that other ranks have not joined (or
      Ray 2.60's NCCL hang detector confirmed such a hang)
  19  no report, and the ranks holding the run up are in the data loader
  20  the Ray cluster is unreachable
  21  no report, and the ranks holding the run up are in I/O
  22  no report, and every rank is in the train loop's own code
  2   bad usage
The stall threshold is learned per run: max(3x its median report interval, 1.5x its
longest recent one, 8 s); 60 s before a run has reported twice; --stall-after fixes it.
A straggler (one rank working far longer per step than its peers) is printed, exit 0.
With several findings, the most severe code wins: 20, 16, 17, 18, 19, 21, 22, 10, 12,
14, 11, 15, then 13."""
