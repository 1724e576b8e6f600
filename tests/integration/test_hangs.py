"""Hang triage on a real cluster (gloo on CPU), on 3-rank TorchTrainer runs of
``hang_loop.py``. The faults that leave a run able to go on are the phases of one run, in
order, each released by the test once judged (a run costs ~40 CPU-s of start-ups on the 2
cores the suite shares): each is classified by ``raytop check`` (its exit code) naming the
ranks, within 3 × the run's report interval + 10 s of its start, the TUI, shown the
snapshot ``status --json`` takes at that moment, names it too, and once released the run
is healthy again; the controller's stuck load ends that run. A metric the controller
cannot load (it fails the run) and a straggler (a straggler, not a hang) are runs of their
own. A healthy run with jittered steps runs beside them all, polled by ``check`` the whole
time, and must never raise an alarm (the module's last test waits until it has run at
least ``HEALTHY_S``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from raytop.diagnose import check
from raytop.model import Snapshot
from raytop.model.hangs import HANG_LABELS
from tests.conftest import (
    check_in_process,
    kill_driver,
    launch_run,
    own_ray_tmpdir,
    run_output,
    run_raytop,
    status_json,
)

pytestmark = pytest.mark.ray

LOOP = Path(__file__).with_name("hang_loop.py")
HEALTHY_S = 300.0
STEP_S = 0.5
# Steps from one phase's start to the next: past the 32 report intervals of each rank
# that the run's stall limit is learned from (``diagnose.hang.stall_limit``), so the last
# fault's long interval no longer counts.
PHASE_GAP = 40

SPEC = """
[experiment]
name = "{name}"
storage_path = "results"

[trainable]
kind = "torch"
entrypoint = "hang_loop:train_loop"

[param_space]
phases = {phases}
bad_rank = 1
hang_step = 8
phase_gap = {phase_gap}
steps = {steps}
step_s = {step_s}
jitter = {jitter}
slow_factor = 3.0
checkpoint_every = {checkpoint_every}
checkpoint_bytes = 20000
marker_dir = "{marker_dir}"

[tune]
metric = "step"
mode = "max"

[scaling]
num_workers = 3
resources_per_worker = {{ CPU = {cpu} }}
"""


def write_spec(folder: Path, name: str, *phases: str, steps=400, step_s=STEP_S, jitter=0.2,
               checkpoint_every=0, cpu=0.5) -> tuple[Path, Path]:  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / f"{name}.toml"
    spec.write_text(SPEC.format(name=name, phases=json.dumps(list(phases)), steps=steps,
                                step_s=step_s, jitter=jitter, phase_gap=PHASE_GAP,
                                checkpoint_every=checkpoint_every, cpu=cpu,
                                marker_dir=folder))  # fmt: skip
    shutil.copy(LOOP, folder / LOOP.name)
    return spec, folder / "results" / name


def checked(address: str, experiment: Path) -> tuple[int, str]:
    result = run_raytop("check", "--address", address, "--experiment", str(experiment),
                        timeout=60)  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def stop(spec: Path, experiment: Path, driver) -> None:
    """End a run at once: its driver killed, its trials and Train workers die with it (a
    graceful stop of a hung run waits for Tune's timeouts; these runs are done with)."""
    if (experiment / ".raytop" / "driver.json").exists():
        kill_driver(experiment)
    try:
        driver.wait(timeout=60)
    except Exception:
        driver.kill()
        driver.wait(timeout=30)


def judged(address: str, experiment: Path) -> tuple[int, str]:
    """What ``raytop check --address A --experiment E`` decides, its exit code and lines,
    made in this process by the command's own ``verdict``, and from any thread
    (``raytop_in_process`` swaps this process's stdout: the test's thread only). The
    poller's ~35 checks as new processes cost ~0.75 CPU-s each (Python, Ray's client) of
    the 2 cores the suite shares; the command itself confirms the verdict at the end
    (``test_zz_…``)."""
    from raytop.faces.check import verdict
    from raytop.launch.cluster import resolve
    from raytop.model.thresholds import Thresholds

    lines, code = verdict(resolve(address), (str(experiment),), Thresholds.given(None))
    return code, "\n".join(lines)


POLL_S = 8.0  # a liveness probe's period


class Poller(threading.Thread):
    """``raytop check``'s verdict on the healthy run again and again, as a liveness probe
    would ask it (``judged``)."""

    def __init__(self, address: str, experiment: Path) -> None:
        super().__init__(daemon=True)
        self.address, self.experiment = address, experiment
        self.results: list[tuple[float, int, str]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(POLL_S):
            if self.experiment.is_dir():
                code, text = judged(self.address, self.experiment)
                self.results.append((time.time(), code, text))


@pytest.fixture(scope="module")
def hang_cluster(tmp_path_factory):
    """A 4-CPU cluster of this module's own, with its own raytop home and Ray temp dir (a
    short path: Ray's socket names must fit), so that it may run beside the shared one:
    Train's placement-group cleaner asks the Ray temp dir for "the" cluster."""
    from raytop.launch.cluster import start_embedded, stop_embedded
    from raytop.launch.spec import ClusterSection

    saved = os.environ["RAYTOP_HOME"]
    os.environ["RAYTOP_HOME"] = str(tmp_path_factory.mktemp("hang_home"))
    try:
        with own_ray_tmpdir("hangs"):
            target = start_embedded(ClusterSection(num_cpus=4))
            yield target
            stop_embedded()
    finally:
        os.environ["RAYTOP_HOME"] = saved


@pytest.fixture(scope="module")
def healthy(hang_cluster, tmp_path_factory):
    """The healthy run, started first and polled until the module's last test."""
    spec, experiment = write_spec(tmp_path_factory.mktemp("healthy"), "healthy", "healthy",
                                  steps=100_000, step_s=1.0, jitter=0.5, checkpoint_every=10,
                                  cpu=0.25)  # fmt: skip
    driver = launch_run(spec, hang_cluster.address)
    poller = Poller(hang_cluster.address, experiment)
    poller.start()
    started = time.monotonic()
    try:
        yield spec, experiment, poller, started
    finally:
        poller.halt.set()
        poller.join(timeout=90)
        stop(spec, experiment, driver)


def hang_started(folder: Path, phase: str) -> float | None:
    marker = folder / f"hang_started_{phase}"
    try:
        return float(marker.read_text())
    except (OSError, ValueError):
        return None


def classified(address, spec, experiment, phase: str, code: int, deadline_s: float = 120):
    """Poll ``check`` until it exits ``code``: (seconds from ``phase``'s start, output)."""
    folder = spec.parent
    end = time.monotonic() + deadline_s
    seen = []
    while time.monotonic() < end:
        got, text = check_in_process("--address", address, "--experiment", str(experiment))
        seen.append((got, text.splitlines()[:1]))
        if got == code:
            began = hang_started(folder, phase)
            assert began is not None, "classified before the hang started: " + text
            took = time.time() - began
            confirmed, text = checked(address, experiment)  # as a user runs it
            assert confirmed == code, (confirmed, text)
            return took, text
        time.sleep(0.5)
    raise AssertionError(f"never exit {code}: {seen[-5:]}\n{run_output(spec, experiment)}")


async def stall_line(snapshot: dict) -> str:
    """What the TUI's overview says about ``snapshot`` in its stall line (empty: nothing),
    at 100×30, the app fed the snapshot as its poller would."""
    from raytop.tui.app import RaytopApp
    from raytop.tui.widgets.stall_banner import StallLine
    from tests.tui.conftest import FakeCollector
    from tests.tui.helpers import show

    app = RaytopApp(FakeCollector(Snapshot.from_json(snapshot)), autostart=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, Snapshot.from_json(snapshot))
        line = app.screen.query_one(StallLine)
        return str(line.visual) if line.display else ""


# The bound of the issue: 3 × the run's report interval (steps of STEP_S ± 20 %, plus the
# all_reduce) + 10 s. ``check`` runs take ~1 s each here: the time it took is included.
BOUND_S = 3 * STEP_S * 1.2 + 10 + 2


# The phases of the phased run, in order: the controller's stuck load ends it, so last.
PHASES = (
    ("sleep_before_all_reduce", check.COLLECTIVE_HANG, "collective_hang", "rank 1"),
    ("data_loader", check.DATA_LOADER_HANG, "data_loader_hang", "rank 1"),
    ("io", check.IO_HANG, "io_hang", "rank 1"),
    ("slow_upload", check.CHECKPOINT_UPLOAD_STUCK, "checkpoint_upload_stuck", "on rank 0"),
    ("stuck_metric", check.CONTROLLER_STUCK, "controller_stuck", "every rank has made"),
)


@pytest.fixture(scope="module")
def phased(healthy, hang_cluster, tmp_path_factory):
    """One run whose faults come one after the other (``PHASES``), each released by its
    test."""
    names = [phase for phase, *_ in PHASES]
    spec, experiment = write_spec(tmp_path_factory.mktemp("phased"), "phased", *names,
                                  checkpoint_every=3)  # fmt: skip
    driver = launch_run(spec, hang_cluster.address)
    try:
        yield spec, experiment
    finally:
        stop(spec, experiment, driver)


def release(folder: Path, phase: str) -> None:
    (folder / f"release_{phase}").write_text("")


def healthy_again(address: str, experiment: Path, deadline_s: float = 60) -> str:
    """Poll ``check`` until the run is healthy again (its output), after a release."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        code, text = check_in_process("--address", address, "--experiment", str(experiment))
        if code == check.HEALTHY:
            return text
        time.sleep(0.5)
    raise AssertionError(f"still exit {code} {deadline_s:g}s after the release: {text}")


@pytest.mark.parametrize("phase, code, kind, ranks", PHASES, ids=[p[0] for p in PHASES])
def test_each_hang_is_classified_naming_its_ranks_in_time(
    phased, hang_cluster, phase, code, kind, ranks
):
    spec, experiment = phased
    folder = spec.parent
    for earlier, *_ in PHASES[: [p[0] for p in PHASES].index(phase)]:
        release(folder, earlier)  # already, unless its own test failed before releasing
    took, text = classified(hang_cluster.address, spec, experiment, phase, code)
    print(f"\n{phase}: classified {took:.1f}s after the hang began")
    assert took <= BOUND_S, (took, text)
    assert text.startswith(kind) and ranks in text, text
    line = asyncio.run(stall_line(status_json(hang_cluster.address, experiment)))
    assert HANG_LABELS[kind] in line and ranks in line, line
    if phase != PHASES[-1][0]:
        release(folder, phase)
        healthy_again(hang_cluster.address, experiment)


def test_a_metric_the_controller_cannot_load_is_named_when_the_run_fails(
    healthy, hang_cluster, tmp_path
):
    spec, experiment = write_spec(tmp_path, "bad-metric", "bad_metric")
    driver = launch_run(spec, hang_cluster.address)
    try:
        took, text = classified(hang_cluster.address, spec, experiment, "bad_metric",
                                check.CONTROLLER_STUCK)  # fmt: skip
        assert took <= BOUND_S, (took, text)
        assert "could not load what the ranks sent it" in text, text
    finally:
        stop(spec, experiment, driver)


def test_a_rank_three_times_slower_is_a_straggler_not_a_hang(healthy, hang_cluster, tmp_path):
    spec, experiment = write_spec(tmp_path, "straggler", "straggler", jitter=0.1)
    driver = launch_run(spec, hang_cluster.address)
    try:
        deadline = time.monotonic() + 150
        seen = []
        while time.monotonic() < deadline:
            if not experiment.is_dir():
                time.sleep(0.5)
                continue
            code, text = check_in_process("--address", hang_cluster.address,
                                          "--experiment", str(experiment))  # fmt: skip
            seen.append(code)
            assert code == check.HEALTHY, text  # slow, never hung
            if "straggler" in text:
                break
            time.sleep(1.0)
        else:
            raise AssertionError(f"no straggler named: {seen}\n{run_output(spec, experiment)}")
        assert "rank 1 is a straggler" in text and "not a hang" in text, text
    finally:
        stop(spec, experiment, driver)


def test_zz_the_healthy_run_raised_no_alarm_in_five_minutes(healthy, hang_cluster):
    spec, experiment, poller, started = healthy
    remaining = HEALTHY_S - (time.monotonic() - started)
    if remaining > 0:
        time.sleep(remaining)
    poller.halt.set()
    poller.join(timeout=90)
    results = poller.results
    assert len(results) > HEALTHY_S / (POLL_S + 2) / 2, len(results)
    alarms = [r for r in results if r[1] != check.HEALTHY or "straggler" in r[2]]
    assert not alarms, alarms[:3]
    span = results[-1][0] - results[0][0]
    print(f"\nhealthy: {len(results)} checks over {span:.0f}s, no alarm")
    assert span >= HEALTHY_S - 30
    code, text = checked(hang_cluster.address, experiment)  # the command, as a probe runs it
    assert code == check.HEALTHY and "straggler" not in text, text
