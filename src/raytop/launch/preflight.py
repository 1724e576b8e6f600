"""Preflight: what only a launch or an actual resume may do with a run spec.

Reading a spec (``load_spec``) is pure, so previews, plans and listings can read anyone's.
Before a run starts, ``preflight`` imports the entrypoint (running the user's module) and
proves the local storage writable (creating the folder and a probe file, removed again), so
that a typo fails here in one line rather than in a detached driver's log.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import secrets
import sys
from pathlib import Path

from raytop.launch.spec import RunSpec, TrainableSection
from raytop.launch.spec_values import URI, SpecFile
from raytop.wire.version import import_ray

_PROBE_NAME = ".raytop-write-probe"
_PROBE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | os.O_CLOEXEC


def preflight(spec: RunSpec) -> None:
    """Import the entrypoint and prove the local storage writable. Raises SpecError (one
    line). Safe to call twice."""
    ctx = SpecFile(str(spec.path))
    import_ray()  # before the user's module imports Ray: this process outlives its cluster
    _check_torch(ctx, spec.trainable)
    _check_entrypoint(ctx, spec.trainable, spec.spec_dir)
    _check_storage(ctx, spec.experiment.storage_path)


def _check_torch(ctx: SpecFile, trainable: TrainableSection) -> None:
    """A torch trainable needs torch where its driver runs; raytop does not bring it (the
    reading side needs none, and an image's own torch must not be replaced): one line
    saying what to install, looked up without importing it."""
    if trainable.kind == "torch" and importlib.util.find_spec("torch") is None:
        ctx.fail("[trainable] kind 'torch'", "needs PyTorch, which this Python does not have: "
                 "install the torch build for your hardware (pip install torch, or "
                 "pip install 'raytop[torch]')")  # fmt: skip


def _check_entrypoint(ctx: SpecFile, trainable: TrainableSection, spec_dir: Path) -> None:
    where = f"[trainable] entrypoint {trainable.entrypoint!r}"
    module_name, func_name = trainable.module, trainable.function
    entry = str(spec_dir)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()  # the module may have just been written
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as err:
        ctx.fail(
            where,
            f"cannot import module {module_name!r}: {type(err).__name__}: {err}",
        )
    finally:
        # Undo only our own insertion: the module may have edited sys.path on purpose.
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)
    if not hasattr(module, func_name):
        ctx.fail(where, f"{func_name!r} not found in module {module_name!r}")
    if not callable(getattr(module, func_name)):
        ctx.fail(where, f"{trainable.entrypoint!r} is not callable")


def _check_storage(ctx: SpecFile, storage_path: str) -> None:
    """Create the folder and write a probe into it. The probe's name is unpredictable and it
    is created exclusively without following a symlink, relative to the opened folder: a
    link planted in the folder can neither be guessed nor written through."""
    if storage_path.startswith("file://"):
        storage_path = storage_path[len("file://") :]
    elif URI.match(storage_path):
        return  # remote storage is Ray's business
    where = f"[experiment] storage_path {storage_path!r}"
    if os.path.lexists(storage_path) and not os.path.isdir(storage_path):
        try:
            os.stat(storage_path)
        except OSError as err:  # e.g. a symlink loop, a dangling link
            ctx.fail(where, f"not a folder ({err.strerror or err})")
        ctx.fail(where, "not a folder (a file is in the way)")
    name = f"{_PROBE_NAME}-{secrets.token_hex(16)}"
    try:
        os.makedirs(storage_path, exist_ok=True)
        folder = os.open(storage_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = os.open(name, _PROBE_FLAGS, 0o600, dir_fd=folder)
            try:
                os.write(fd, b"ok")
            finally:
                os.close(fd)
            os.unlink(name, dir_fd=folder)
        finally:
            os.close(folder)
    except OSError as err:
        ctx.fail(where, f"not writable ({err.strerror or err})")
