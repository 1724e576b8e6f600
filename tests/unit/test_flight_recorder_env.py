"""The Flight Recorder variables a launched torch trial gives its Train workers
(``launch.flight_recorder``): set for NCCL runs (use_gpu), not for CPU/gloo ones, never
over a value the user set, dumps on the experiment's storage, a pipe per node; and the
probe's one write to the rank's pipe (``probe.flight_recorder``) on a real FIFO."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from raytop.launch.flight_recorder import pipe_prefix, why_not, worker_env
from raytop.launch.spec import load_spec
from raytop.probe.flight_recorder import NOT_ENABLED, trigger_dump
from raytop.wire.torch_flight_recorder import RAYTOP_PIPE

SCALING = {
    "gpu": "[scaling]\nnum_workers = 2\nuse_gpu = true\n",
    "gpu-nccl": '[scaling]\nnum_workers = 2\nuse_gpu = true\nbackend = "nccl"\n',
    "gpu-gloo": '[scaling]\nnum_workers = 2\nuse_gpu = true\nbackend = "gloo"\n',
    "cpu": "[scaling]\nnum_workers = 2\n",
}


def spec(tmp_path: Path, scaling: str = "gpu", storage: str = "results", kind: str = "torch"):
    path = tmp_path / "spec.toml"
    path.write_text(
        f'[experiment]\nname = "sweep.one"\nstorage_path = "{storage}"\n\n'
        f'[trainable]\nkind = "{kind}"\nentrypoint = "loop:train_loop"\n\n' + SCALING[scaling]
    )
    return load_spec(path)


def test_a_gpu_torch_trial_gets_the_flight_recorder_with_dumps_on_its_storage(tmp_path):
    s = spec(tmp_path)
    env = worker_env(s, "a1b2_00003", user_env={}, node_env={})
    dumps = tmp_path / "results" / "sweep.one" / ".raytop" / "flight_recorder" / "a1b2_00003"
    assert env == {
        "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": f"{dumps}/rank_",
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/tmp/raytop-fr-sweep.one-a1b2_00003-rank_",
        RAYTOP_PIPE: "/tmp/raytop-fr-sweep.one-a1b2_00003-rank_",
    }
    assert worker_env(spec(tmp_path, "gpu-nccl"), "t", user_env={}, node_env={})
    assert why_not(s) is None


@pytest.mark.parametrize(
    ("scaling", "storage", "kind", "why"),
    [
        ("cpu", "results", "torch", "no GPUs ([scaling] use_gpu = false): gloo has no Flight "
                                    "Recorder dump"),
        ("gpu-gloo", "results", "torch", "backend gloo: only NCCL dumps its Flight Recorder"),
        ("gpu", "s3://bucket/p", "torch", "the experiment is on remote storage: torch writes "
                                          "its dumps to local files"),
        ("cpu", "results", "function", "not a torch trainable"),
    ],
)  # fmt: skip
def test_no_flight_recorder_without_nccl_or_local_storage(tmp_path, scaling, storage, kind, why):
    s = spec(tmp_path, scaling, storage, kind)
    assert why_not(s) == why
    assert worker_env(s, "t", user_env={"TORCH_NCCL_TRACE_BUFFER_SIZE": "9"}, node_env={}) == {}


def test_a_variable_the_user_set_is_never_overridden(tmp_path):
    s = spec(tmp_path)
    # Set where `raytop run` ran: passed on to the workers as it is (Ray would not).
    user = {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/my/pipe_"}
    env = worker_env(s, "t1", user_env=user, node_env={})
    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "0"
    assert env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] == "/my/pipe_"
    assert RAYTOP_PIPE not in env  # not raytop's pipe: the probe will not write to it
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"  # the ones left unset get raytop's
    # An alias counts as the variable: TORCH_FR_* set means raytop sets neither name.
    env = worker_env(s, "t1", user_env={"TORCH_FR_DUMP_TEMP_FILE": "/mine/fr_"}, node_env={})
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == "/mine/fr_"
    assert "TORCH_NCCL_DEBUG_INFO_TEMP_FILE" not in env
    # Already in the cluster's environment (the trial's own): left alone, not repeated.
    node = {"TORCH_NCCL_DUMP_ON_TIMEOUT": "0", "TORCH_FR_BUFFER_SIZE": "100"}
    env = worker_env(s, "t1", user_env={"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, node_env=node)
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT" not in env
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env and "TORCH_FR_BUFFER_SIZE" not in env
    assert env[RAYTOP_PIPE] == env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]


def test_the_pipe_name_is_one_path_component_in_tmp(tmp_path):
    s = spec(tmp_path)
    prefix = pipe_prefix(s, "../../etc/x" * 20)
    assert prefix.startswith("/tmp/raytop-fr-") and prefix.count("/") == 2
    assert len(os.path.basename(prefix + "12345.pipe")) < 255


def test_worker_runtime_env_is_what_ray_train_takes(tmp_path):
    import ray.train

    env = worker_env(spec(tmp_path), "t1", user_env={}, node_env={})
    config = ray.train.RunConfig(name="n", worker_runtime_env={"env_vars": env})
    assert config.worker_runtime_env["env_vars"]["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"


# -- the probe's write to the pipe, on a real FIFO ---------------------------------------


def fifo(tmp_path: Path, rank: int) -> tuple[str, int]:
    """A FIFO as torch's DumpPipe makes it (mkfifo, opened O_RDONLY | O_NONBLOCK)."""
    prefix = str(tmp_path / "fr-rank_")
    os.mkfifo(f"{prefix}{rank}.pipe", 0o666)
    return prefix, os.open(f"{prefix}{rank}.pipe", os.O_RDONLY | os.O_NONBLOCK)


def test_the_probe_writes_to_the_pipe_raytop_named_and_torch_reads_it(tmp_path):
    prefix, reader = fifo(tmp_path, 3)
    try:
        env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": prefix, RAYTOP_PIPE: prefix}
        answer = trigger_dump(3, env)
        assert answer == f"dump requested through {prefix}3.pipe"
        assert os.read(reader, 128) == b"1"  # what DumpPipe::shouldDump reads
    finally:
        os.close(reader)


def test_the_probe_writes_to_no_pipe_but_raytops(tmp_path):
    prefix, reader = fifo(tmp_path, 0)
    try:
        assert trigger_dump(0, {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": prefix}) == NOT_ENABLED
        other = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": prefix, RAYTOP_PIPE: "/tmp/x-"}
        assert "not the one raytop set" in trigger_dump(0, other)
        assert os.read(reader, 128) == b""  # nothing was written (and no writer is open)
    finally:
        os.close(reader)


def test_no_pipe_a_file_a_symlink_or_no_reader_is_one_line_and_never_blocks(tmp_path):
    prefix = str(tmp_path / "p-rank_")
    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": prefix, RAYTOP_PIPE: prefix}
    assert trigger_dump(0, env) == f"no dump pipe at {prefix}0.pipe: this rank has no NCCL " \
                                   "process group (yet)"  # fmt: skip
    Path(f"{prefix}1.pipe").write_text("")
    assert trigger_dump(1, env) == f"{prefix}1.pipe is not a pipe: not written"
    os.mkfifo(tmp_path / "elsewhere.pipe")
    os.symlink(tmp_path / "elsewhere.pipe", f"{prefix}2.pipe")
    assert trigger_dump(2, env) == f"{prefix}2.pipe is not a pipe: not written"
    os.mkfifo(f"{prefix}4.pipe")  # made, but its process group is gone: no reader
    assert trigger_dump(4, env) == (
        f"nobody reads {prefix}4.pipe: the process group that made it is gone"
    )
    assert stat.S_ISFIFO(os.lstat(f"{prefix}4.pipe").st_mode)


def test_the_probe_answers_a_flight_recorder_request_once_in_its_next_message(
    tmp_path, monkeypatch
):
    import json

    import psutil

    from raytop.probe import rank_commands
    from raytop.probe.rank_state import RankState
    from raytop.wire.kv_keys import FLIGHT_RECORDER_COMMAND_KEY
    from raytop.wire.train_hooks import WorkerIdentity

    prefix, reader = fifo(tmp_path, 1)
    monkeypatch.setenv("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", prefix)
    monkeypatch.setenv(RAYTOP_PIPE, prefix)
    command = json.dumps({"request_id": "f1", "run_id": "r", "requested_at": 1.0})
    monkeypatch.setattr(
        rank_commands,
        "kv_get_in_cluster",
        lambda key: command if key == FLIGHT_RECORDER_COMMAND_KEY else None,
    )
    identity = WorkerIdentity(
        run_id="r", run_name="exp-t1", attempt_id="a", world_rank=1, world_size=2,
        local_rank=1, node_rank=0, node_id="n1", gpu_ids=["0"], placement_group_id=None,
        run_path=None, declared={"GPU": 1.0}, restored_from=None,
    )  # fmt: skip
    try:
        rank = RankState(identity, flush_interval_s=3600.0)
        rank.commands.answer()
        rank.commands.answer()  # the same request again: answered once, written once
        message = rank._message(psutil.Process())
        assert message["flight_recorder_request"] == "f1"
        assert message["flight_recorder"] == f"dump requested through {prefix}1.pipe"
        assert os.read(reader, 128) == b"1"
    finally:
        os.close(reader)
