"""ReportProbe: counts every rank's ``ray.train.report`` calls, from inside the workers.

Train V2's worker callback hooks (a DeveloperAPI: ``wire.train_hooks``) run it in every
worker: ``on_report`` wraps each report call, entry before the barrier, exit after it;
``on_checkpoint_sync`` times the barrier; ``on_checkpoint_transfer`` records an upload and
the files in it. The state and the thread that sends it are ``probe.rank_state``'s; it
never raises into training and never blocks a report.

Launched runs get it automatically (``launch.trainable`` adds it to the RunConfig); any
other Train run opts in with ``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe`` (raytop
installed on the image). Both at once is ordinary: a cluster whose containers carry the
variable also runs raytop's own launches, and Train builds the variable's callbacks beside
the RunConfig's (``DataParallelTrainer._create_default_callbacks`` calls
``_initialize_env_callbacks``, ray/train/v2/api/data_parallel_trainer.py, Ray 2.58). So
one ReportProbe per worker process counts, whoever registered it: the first whose
``after_init_train_context`` runs owns the process's state, and any other stays inert (a
worker calls every hook on the same callback objects: ``RayTrainWorker.init_train_context``,
ray/train/v2/_internal/execution/worker_group/worker.py). Two would count every report
twice.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager, suppress

from raytop.probe.rank_state import RankState
from raytop.wire.train_hooks import (
    file_probe_problem,
    hooks_ray_lacks,
    report_call_details,
    train_worker_callback_bases,
    train_worker_identity,
)

WorkerCallback, TrainContextCallback = train_worker_callback_bases()

FLUSH_INTERVAL_S = 0.1
# The hooks the probe counts with; Ray calls each only if its callback bases declare it.
HOOKS = ("after_init_train_context", "before_worker_shutdown", "on_report",
         "on_checkpoint_sync", "on_checkpoint_transfer")  # fmt: skip

_log = logging.getLogger(__name__)
_LOCK = threading.Lock()
_STATE: RankState | None = None
_OWNER: ReportProbe | None = None  # the probe whose hooks count in this worker process


class ReportProbe(WorkerCallback, TrainContextCallback):
    """Add to ``ray.train.RunConfig(callbacks=[...])``, or set
    ``RAY_TRAIN_CALLBACKS=raytop.probe.ReportProbe``; needs no arguments."""

    def __init__(self) -> None:
        self.flush_interval_s = float(os.environ.get("RAYTOP_PROBE_FLUSH_S", FLUSH_INTERVAL_S))

    def __setstate__(self, state: dict) -> None:
        """Unpickled in Train's controller and in every worker, connected to the cluster:
        where the hooks would run, check that Ray calls them, and file why not if it
        does not (raytop then says so on the run, instead of showing no counts)."""
        self.__dict__.update(state)
        with suppress(Exception):
            lacking = hooks_ray_lacks(HOOKS)
            if lacking:
                file_probe_problem(f"Ray's Train callbacks have no {', '.join(lacking)}")

    def after_init_train_context(self) -> None:
        global _STATE, _OWNER
        with _LOCK:
            if _OWNER is not None:
                _log.info("raytop ReportProbe: another ReportProbe counts this worker's "
                          "reports already; this one stays inert")  # fmt: skip
                return
            try:
                _STATE = RankState(train_worker_identity(), self.flush_interval_s)
                _OWNER = self
            except Exception as exc:  # no probe is better than a broken worker
                _log.exception("raytop ReportProbe disabled in this worker")
                _STATE = None
                file_probe_problem(f"a worker's Train context did not read: "
                                   f"{type(exc).__name__}: {exc}")  # fmt: skip

    def _state(self) -> RankState | None:
        """This worker's probe state when this probe owns it; None for an inert one."""
        return _STATE if _OWNER is self else None

    def before_worker_shutdown(self) -> None:
        global _OWNER
        state = self._state()
        if state is not None:
            with suppress(Exception):
                state.finish()
            _OWNER = None

    @contextmanager
    def on_checkpoint_sync(self):
        state, wait, call = self._state(), None, None
        if state is not None:
            try:
                wait = state.sync_started()
                call = report_call_details()
            except Exception:
                wait = None
        try:
            yield
        finally:
            if wait is not None:
                with suppress(Exception):
                    state.sync_ended(wait)
                    if call and call.mode == "NO_UPLOAD" and call.local_path:
                        state.no_upload_checkpoint(call.local_path)

    @contextmanager
    def on_checkpoint_transfer(self):
        state, upload = self._state(), None
        if state is not None:
            try:
                upload = state.upload_started()
            except Exception:
                upload = None
        try:
            yield
        except BaseException as exc:
            if upload is not None:
                upload.failed(exc)
            raise
        finally:
            if upload is not None:
                with suppress(Exception):
                    upload.ended()

    @contextmanager
    def on_report(self):
        state = self._state()
        if state is not None:
            with suppress(Exception):
                state.enter()
        try:
            yield
        finally:
            if state is not None:
                with suppress(Exception):
                    state.exit()
