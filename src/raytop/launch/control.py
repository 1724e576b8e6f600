"""Changing an experiment, gracefully: stop it, stop one trial, or resume it.

Experiment stop is SIGINT to the detached driver: Tune saves the experiment state, syncs it
and ``fit()`` returns normally (about 2 s later, measured on Ray 2.58, with trials still
RUNNING kept so), so the experiment stays resumable. A single trial is stopped by
the driver's ``TrialStopper`` at the trial's next result. Resume is previewed first
(``plan_resume``), then a detached driver runs ``Tuner.restore`` (``start_resume``).
What ``stop`` acts on is found here too (``stop_target``). Nothing here deletes anything.
The CLI and the TUI both act through these functions.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from raytop.diagnose.resume import preview
from raytop.home import registered_experiments
from raytop.jsonfile import MISSING, Unread, read_capped, read_json, write_json_atomic
from raytop.launch.experiment_folder import holds_tune_state, lists_tune_state
from raytop.launch.launcher import Launched
from raytop.launch.spec import RunSpec, SpecError, load_spec, with_experiment
from raytop.launch.toml_text import MAX_TOML_BYTES
from raytop.launch.workflow import SPEC, LaunchError, launch_run
from raytop.model import Experiment, ExperimentStatus, untrusted
from raytop.model.paths import is_uri, join_path, local_path, split_path
from raytop.model.resume import ResumePreview, StoredExperiment
from raytop.process_identity import (
    check_driver,
    driver_alive,
    driver_identity_problem,
    running_experiments,
)
from raytop.rundir import STOP_MARKER, STOP_REQUESTS, raytop_dir_for
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.storage import Storages
from raytop.sources.tune_dir import (
    STATE_INCOMPLETE,
    STATE_INVALID,
    STATE_MISSING,
    STATE_TORN,
    STATE_UNREACHABLE,
    ExperimentReader,
)
from raytop.wire.version import import_ray


class ControlError(RuntimeError):
    """Why the stop could not be asked for (one line)."""


def stop_trial(raytop_dir: Path, trial_id: str) -> None:
    check = check_driver(raytop_dir)
    if not check.alive:
        raise ControlError(
            check.problem or f"{raytop_dir.parent.name}: its driver is not running here"
        )
    requests = raytop_dir / STOP_REQUESTS
    asked = read_json(requests)  # bounded; one that is not a list of ids is replaced
    stopping = {t for t in asked if isinstance(t, str)} if isinstance(asked, list) else set()
    write_json_atomic(requests, sorted(stopping | {trial_id}))


def stop_experiment(
    raytop_dir: Path,
    wait_s: float = 120.0,
    progress: Callable[[str], None] = lambda _msg: None,
) -> bool:
    """Ask the driver to stop; True once it has exited (within ``wait_s``; 0: don't wait)."""
    check = check_driver(raytop_dir)
    if not check.alive or check.process is None:
        # A live pid that is not provably the driver raytop started is never signalled.
        raise ControlError(
            check.problem or f"{raytop_dir.parent.name}: its driver is not running here"
        )
    # Tune ends the trials it interrupts as if they finished; the marker tells readers to
    # trust Tune's saved (restorable) state over the driver's last live table.
    write_json_atomic(raytop_dir / STOP_MARKER, {"requested_at": time.time()})
    # psutil re-checks the pid's start time just before signalling; gone: the wait sees it.
    with contextlib.suppress(psutil.NoSuchProcess):
        check.process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + wait_s
    while driver_alive(raytop_dir)[1]:
        if time.monotonic() >= deadline:
            return False
        progress("waiting for the driver to save its state and exit…")
        time.sleep(2)
    return True


def _can_restore(path: str) -> bool:
    """Tune's own ``Tuner.can_restore`` (public; no ``ray.init`` needed)."""
    if "ray.tune" not in sys.modules:
        # Ray Tune reads ``sys.stdout.encoding`` at import; under the TUI ``sys.stdout`` is
        # Textual's print capture, which has none. Import it with a stand-in stdout.
        with contextlib.redirect_stdout(io.StringIO()):
            import_ray()  # this process must outlive its cluster (wire.version)
            # heavy: Ray Tune (~1 s), only to ask whether an experiment can be restored
            import ray.tune  # noqa: F401
    from ray.tune import Tuner  # loaded by now (above, or earlier in this process)

    try:
        return bool(Tuner.can_restore(path))
    except Exception:
        return False


def where_is(path: str) -> str:
    """A storage path as read: a URI (``s3://bucket/prefix``, read through pyarrow) as
    given, a local one absolute and symlink-free (``os.path.realpath``, not
    ``Path.resolve``: a symlink loop must not raise); ControlError for a path no system
    call can take (a NUL byte, a lone surrogate)."""
    if is_uri(path):
        return path.rstrip("/")
    try:
        return os.path.realpath(os.path.expanduser(local_path(path)))
    except ValueError as exc:  # UnicodeEncodeError too
        raise ControlError(f"{path!r}: not a usable path ({exc})") from None


def experiments_under(storage_path: str) -> list[StoredExperiment]:
    """The experiment folders in ``storage_path`` (or ``storage_path`` itself if it is
    one), local or remote (``s3://…``), newest first. Each folder is read on its own: one
    that cannot be read is listed as UNKNOWN, and the others still are."""
    storages = Storages()
    root = where_is(storage_path)
    if not is_uri(root) and not Path(root).is_dir():
        raise ControlError(f"{storage_path}: no such folder")
    top = storages.root(root)
    entries = top.listing("")
    if entries is None:
        why = getattr(top, "error", None) or "not found or not readable"
        raise ControlError(f"{storage_path}: cannot be listed ({why})")
    if lists_tune_state(entries):
        candidates = [(root, max((e.mtime or 0.0 for e in entries), default=0.0))]
    else:
        candidates = [(join_path(root, e.name), e.mtime or 0.0) for e in entries if e.is_dir]
    found = []
    for path, _mtime in sorted(candidates, key=lambda c: c[1], reverse=True):
        name = split_path(path)[1]
        try:
            if path != root and not holds_tune_state(storages.root(path)):
                continue
            raytop_dir = raytop_dir_for(path, name)
            known = raytop_dir if raytop_dir.is_dir() else None
            read = ExperimentReader(path, known, storages).read()
            stored = StoredExperiment(
                path=path,
                name=name,
                status=read.status.value,
                trials=len(read.trials),
                can_restore=_can_restore(path),
                running=bool(read.driver_alive),
                launched_by_raytop=(raytop_dir / "driver.json").exists(),
            )
        except Exception:  # whatever is in one folder, the listing of the others stands
            stored = StoredExperiment(path, name, ExperimentStatus.UNKNOWN.value, 0,
                                      can_restore=False, running=False,
                                      launched_by_raytop=False)  # fmt: skip
        found.append(stored)
    return found


def plan_resume(experiment_path: str, errored: str) -> tuple[ResumePreview, RunSpec]:
    """The preview of resuming ``experiment_path``, and the spec to resume it with.

    Reads only: the saved spec is parsed, never preflighted (its trainable module may be
    anyone's code on shared storage; ``start_resume`` imports it once the user confirms).
    Raises ControlError (one line) when it cannot be resumed by raytop at all."""
    storages = Storages()
    where = where_is(experiment_path)
    parent, name = split_path(where)
    top = storages.root(where)
    entries = top.listing("")
    if entries is None and top.error:  # a remote store that did not answer
        raise ControlError(f"{experiment_path}: storage unreachable ({top.error}); nothing read")
    if not lists_tune_state(entries or []):
        raise ControlError(
            f"{experiment_path}: no Tune experiment there (no tuner.pkl / experiment_state)"
        )
    raytop_dir = raytop_dir_for(where, name)
    pid, alive = driver_alive(raytop_dir)
    if alive:
        raise ControlError(f"{name} is still running (driver pid {pid}): nothing to resume")
    info_file = raytop_dir / "driver.json"
    spec_path = _launched_spec(info_file, where)
    # The spec as launched (its copy), resolved against the original's folder.
    launched_copy = raytop_dir / "spec.toml"
    chosen = launched_copy if launched_copy.exists() else spec_path
    try:
        spec = with_experiment(load_spec(chosen, spec_path.parent), name, parent)
    except SpecError as exc:
        raise ControlError(f"the spec this experiment was launched with: {exc}") from None
    experiment = ExperimentReader(where, raytop_dir, storages).read(require_state=True)
    if experiment.state_read in (STATE_MISSING, STATE_TORN, STATE_INVALID, STATE_UNREACHABLE):
        # Tuner.restore reads exactly this file (TuneController.resume): it would fail, or
        # restore something other than what the preview shows.
        raise ControlError(
            f"{name}: its experiment state cannot be restored by Tune "
            f"({experiment.state_read}: {experiment.state_reason}); nothing was changed"
        )
    snapshots = CheckpointSnapshots(storages)
    checkpoints = snapshots.latest(experiment)
    rows, warnings = preview(experiment, checkpoints, errored, spec.tune.max_concurrent_trials)
    if experiment.state_read == STATE_INCOMPLETE:  # Tune restores what its state lists
        warnings.append(f"{experiment.state_reason}; Tune resumes only the trials it lists")
    if chosen is launched_copy and (changed := _changed_since_launch(spec, spec_path)):
        warnings.append(f"{changed}; the resume uses the spec as launched ({launched_copy})")
    shown = ResumePreview(
        path=where,
        name=name,
        status=experiment.status.value,
        errored=errored,
        rows=tuple(rows),
        warnings=(*experiment.warnings, *snapshots.warnings, *warnings),
    )
    return shown, spec


def _launched_spec(info_file: Path, where: str) -> Path:
    """The spec file ``driver.json`` names (the user's, not the saved copy); one line
    (ControlError) when there is none, or it cannot be read or is not of that shape."""
    cap = untrusted.MAX_RECORD_BYTES
    try:
        info = untrusted.parse(read_capped(info_file, cap), cap)
    except Unread as exc:
        if exc.kind == MISSING:
            raise ControlError(f"{where}: not launched by raytop here (no {info_file})") from None
        raise ControlError(str(exc)) from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError too
        raise ControlError(f"{info_file}: unreadable ({exc})") from None
    spec = info.get("spec") if isinstance(info, dict) else None
    if not isinstance(spec, str) or not spec.strip():
        raise ControlError(f"{info_file}: expected a JSON object with a 'spec' path")
    return Path(spec)


def _changed_since_launch(launched: RunSpec, original: Path) -> str | None:
    """How the user's spec file differs from the spec as launched (``launched.source``,
    its saved copy), in a few words; None when it is the same."""
    try:
        now = read_capped(original, MAX_TOML_BYTES)
    except Unread as exc:
        return f"{original} is gone since launch" if exc.kind == MISSING else str(exc)
    return None if now == launched.source else f"{original} changed since launch"


def start_resume(
    spec: RunSpec,
    errored: str,
    address: str | None,
    progress: Callable[[str], None] = lambda _msg: None,
) -> Launched:
    """Launch the detached ``Tuner.restore`` driver on the cluster at ``address`` (resolved
    as everywhere: flag, RAY_ADDRESS, raytop's own, local); none running: start the
    embedded one. The spec's preflight (importing the entrypoint, proving the storage
    writable) runs here, before a cluster is started, and again in ``launch``: this is an
    actual resume, unlike ``plan_resume``."""
    pid, alive = driver_alive(raytop_dir_for(spec.experiment_path, spec.experiment.name))
    if alive:
        raise ControlError(f"'{spec.experiment.name}' is already running (driver pid {pid})")
    try:  # the one launch path of `raytop run`, with the errored trials' choice
        return launch_run(spec, address, errored=errored, progress=progress)[0]
    except LaunchError as exc:
        prefix = "the spec this experiment was launched with: " if exc.reason == SPEC else ""
        raise ControlError(f"{prefix}{exc}") from None


def stop_target(experiment_path: str | None, trial_id: str | None) -> tuple[Path, str]:
    """What ``stop`` acts on: the raytop dir of the named experiment (else of the one
    launched experiment whose driver runs), and how to name it to the user. Raises
    ``ControlError`` (one line) for an unknown trial or a driver not running here."""
    if experiment_path:
        # realpath, not Path.resolve: a symlink loop must not raise (RuntimeError)
        folder = Path(os.path.realpath(os.path.expanduser(experiment_path)))
        experiment_path, raytop_dir = str(folder), raytop_dir_for(str(folder), folder.name)
    else:
        running = running_experiments(registered_experiments())
        if len(running) != 1:
            raise ControlError(f"{len(running)} experiments are running: name the one to stop")
        experiment_path, raytop_dir = running[0]["path"], Path(running[0]["raytop_dir"])
    if trial_id is not None:
        _check_trial_id(experiment_path, raytop_dir, trial_id)
    if not driver_alive(raytop_dir)[1]:
        raise ControlError(
            driver_identity_problem(raytop_dir)
            or f"{raytop_dir.parent}: its driver is not running here; nothing to stop"
        )
    name = raytop_dir.parent.name
    return raytop_dir, f"trial {trial_id} of {name}" if trial_id else name


def _check_trial_id(experiment_path: str, raytop_dir: Path, trial_id: str) -> None:
    """A stop for a trial the experiment does not have would be accepted and do nothing:
    refuse it, naming a few the experiment has (a remote experiment's ``raytop_dir`` is
    under $RAYTOP_HOME, so the path is given apart)."""
    experiment = ExperimentReader(experiment_path, raytop_dir).read()
    known = [t.trial_id for t in experiment.trials]
    if trial_id in known:
        return
    if not known:
        raise ControlError(f"--trial {trial_id}: {experiment_path} has no trials recorded yet")
    shown = ", ".join(known[:5]) + (f", … ({len(known)} in all)" if len(known) > 5 else "")
    raise ControlError(
        f"--trial {trial_id}: no such trial in {experiment.name} (its trials: {shown})"
    )


class ExperimentControls:
    """What the TUI is given to act with (``raytop.tui.controls``): stops keyed by the
    experiment on screen, and the resume of any experiment under a storage path.
    Experiment stop does not wait: the TUI shows the driver go."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def stop_experiment(self, experiment: Experiment) -> None:
        stop_experiment(raytop_dir_for(experiment.path, experiment.name), wait_s=0)

    def stop_trial(self, experiment: Experiment, trial_id: str) -> None:
        stop_trial(raytop_dir_for(experiment.path, experiment.name), trial_id)

    def experiments_under(self, storage_path: str) -> list[StoredExperiment]:
        return experiments_under(storage_path)

    def resume_preview(self, experiment_path: str, errored: str) -> ResumePreview:
        return plan_resume(experiment_path, errored)[0]

    def resume(self, experiment_path: str, errored: str) -> str:
        _, spec = plan_resume(experiment_path, errored)
        launched = start_resume(spec, errored, self.address)
        return f"resumed '{spec.experiment.name}' (driver pid {launched.pid})"
