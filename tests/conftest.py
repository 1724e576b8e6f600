"""Shared fixtures. Tests that claim Ray behaviour use ``ray_cluster``: one real local
cluster for the whole session (logical CPUs, loopback), started by raytop's own embedded
cluster code and stopped at the end."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest_plugins = ["tests.timeline"]

# The test processes collect garbage less often (a young generation of 100,000 objects, not
# 700): the Textual tests allocate widgets, styles and segments by the hundred thousand,
# and the default thresholds spent ~8 % of their CPU in collections (tests/tui/
# test_keys.py: 28.0 CPU-s with the defaults, 25.6 with these). Nothing tested depends on
# when a collection runs.
gc.set_threshold(100_000, 50, 100)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker says it is finished
def pytest_sessionfinish() -> None:
    """Collect the session's garbage once, then set what is left aside (``gc.freeze``): a
    worker ends holding ~1.5 M objects, most of them cyclic garbage of the Textual tests
    (with the thresholds above), and pytest's five full collections at unconfigure then
    took over 5 s: xdist interrupts a worker still busy 5 s after it asked it to end (a
    ``KeyboardInterrupt`` warning at the suite's end). Frozen, the objects left are not
    walked again by those collections."""
    gc.collect()
    gc.freeze()


REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
CLUSTER_FIXTURES = frozenset({"ray_cluster", "two_cpu_cluster"})
# Tests on a cluster of their own, with its own raytop home and Ray temp dir
# (``own_ray_tmpdir``): a group of their own, which xdist runs beside the shared cluster's
# while that one's serial tests are the suite's critical path (the hang tests mostly
# sleep: a 5-minute healthy run beside the hung ones, timed against the wall clock, not
# the CPU; the three-node cluster and the history sweep start and stop clusters of theirs).
OWN_CLUSTER_GROUPS = {
    "hang_cluster": "ray-hangs",
    "three_node_cluster": "ray-multinode",
    "finished_sweep": "ray-history",
    "probed_cluster": "ray-probed",
}
# fixtures that are a cluster shared by tests
LEAK_GUARDED = ("ray_cluster", "hang_cluster", "probed_cluster", "two_cpu_cluster")


def own_tmpdir(name: str) -> str:
    """Ray's temp dir for a cluster of a test's own (a short path: Ray's socket names must
    fit): Train's placement-group cleaner asks the temp dir for "the" cluster, so two
    clusters that may run at once (one per xdist worker) must never share one."""
    return f"/tmp/raytop-{name}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


@contextlib.contextmanager
def own_ray_tmpdir(name: str) -> Iterator[None]:
    """``RAY_TMPDIR`` set to ``own_tmpdir(name)`` inside the block."""
    with environ(RAY_TMPDIR=own_tmpdir(name)):
        yield


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) every test that
    starts or uses the shared Ray cluster runs on one worker, one after the other as
    without xdist: one shared cluster. The pure tests (unit, Textual, the bad-input
    battery) and the tests on a cluster of their own (``OWN_CLUSTER_GROUPS``) fill the
    other worker meanwhile, as do the tests marked ``own_cluster`` (each starts and stops
    a cluster of its own in its own ``RAY_TMPDIR``; they mostly wait on a cluster's
    outage, so off the shared cluster's serial path they cost the suite little). Measured,
    a third worker, or the shared cluster's tests split over two clusters at once, made
    it slower (docs/PERFORMANCE.md).

    The tests marked ``waits`` (they mostly wait on a timeout) are a group of their own:
    ungrouped, xdist's scheduler (largest group first) ran them with the other pure tests
    at the suite's end, where both workers run those and a waiting one leaves its core
    idle; as a group of about ten they run mid-suite, beside a Ray test that takes both
    cores."""
    for item in items:
        own = [group for name, group in OWN_CLUSTER_GROUPS.items() if name in item.fixturenames]
        if item.get_closest_marker("own_cluster"):
            own = ["ray-own"]
        elif item.get_closest_marker("waits"):
            own = ["waits"]
        if own:
            item.add_marker(pytest.mark.xdist_group(own[0]))
        elif item.get_closest_marker("ray") or CLUSTER_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture(scope="session", autouse=True)
def raytop_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One raytop home per test process (each xdist worker has its own), never the
    developer's: set before any test, Ray or not, runs raytop."""
    home = tmp_path_factory.mktemp("raytop_home")
    os.environ["RAYTOP_HOME"] = str(home)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Ray's own "latest cluster on this host" (ray_current_cluster, e.g. what Train's
        # PlacementGroupCleaner asks) lives in its temp dir: one per test process, so a
        # cluster started by one never stands in for another's.
        os.environ["RAY_TMPDIR"] = f"/tmp/raytop-test-{worker}"
    os.environ.pop("RAY_ADDRESS", None)
    # The embedded clusters bind loopback only; every driver a test starts (raytop's own, and
    # the scripts that call ray.init) joins them only with this (docs/RELIABILITY.md, R6).
    from raytop.launch.cluster import LOOPBACK_ENV

    os.environ.update(LOOPBACK_ENV)
    return home


@pytest.fixture(scope="session")
def ray_cluster(raytop_home: Path):
    """A real 4-CPU, 2-logical-GPU local Ray cluster, shared by every Ray test."""
    from raytop.launch.cluster import start_embedded, stop_embedded
    from raytop.launch.spec import ClusterSection

    target = start_embedded(ClusterSection(num_cpus=4, num_gpus=2))
    yield target
    # By the home it was recorded in, whatever a test left in the environment; a record
    # gone from it is an error here, not a cluster left running after the suite.
    with environ(RAYTOP_HOME=str(raytop_home)):
        assert stop_embedded(), f"no record of the shared cluster in {raytop_home}: left running"


RAY_CLI = str(Path(sys.executable).parent / "ray")  # the venv's, whatever PATH says


@contextlib.contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """``os.environ`` with ``values`` set (None: unset) inside the block, as it was after."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def probed_cluster(tmp_path_factory):
    """A 4-CPU cluster whose processes carry raytop's probe in their environment, as a
    KubeRay RayCluster's containers would (``RAY_TRAIN_CALLBACKS`` set for ``ray start``):
    a job submitted with ``ray job submit`` runs its owner's script unchanged, and its
    driver (and a Tune trial actor that builds a trainer) registers the probe.

    It runs beside the shared cluster (``OWN_CLUSTER_GROUPS``), so it has its own raytop
    home and Ray temp dir; both are set only while it starts and stops (this process's
    other tests keep theirs): talk to it by ``.address``. ``.dashboard`` is the URL that
    ``ray job submit --address`` takes; ``.home`` the HOME its processes (and so its jobs'
    drivers) have: run raytop with ``HOME=.home`` to look where they write."""
    from raytop.launch.cluster import start_embedded, stop_embedded
    from raytop.launch.spec import ClusterSection
    from raytop.wire.gcs import GcsKv

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    own = {"RAYTOP_HOME": str(tmp_path_factory.mktemp("probed_home")),
           "RAY_TMPDIR": f"/tmp/raytop-probed-{worker}"}  # fmt: skip
    # The cluster's user's home: where a job's Tune script writes when it names no
    # storage_path (~/ray_results), and where raytop looks by default (``.home``).
    home = tmp_path_factory.mktemp("probed_user")
    with environ(**own, HOME=str(home), RAY_TRAIN_CALLBACKS="raytop.probe.ReportProbe"):
        target = start_embedded(ClusterSection(num_cpus=4))
    raw = GcsKv(target.address).get_from("dashboard", "dashboard")

    def stop() -> None:
        with environ(**own):
            stop_embedded()

    _EARLY_STOPS["probed_cluster"] = stop
    yield SimpleNamespace(address=target.address, dashboard=f"http://{raw.decode()}",
                          home=home, target=target)  # fmt: skip
    if _EARLY_STOPS.pop("probed_cluster", None) is not None:
        stop()


# Session clusters stopped as soon as the last test that uses them is done: an idle
# cluster costs ~3 CPU-s a minute of the 2 cores the suite shares. Fixture name -> its stop.
_EARLY_STOPS: dict[str, Callable[[], None]] = {}


def last_users(items: list[pytest.Item], names: Iterable[str]) -> dict[str, pytest.Item]:
    """Fixture name -> the last of ``items`` (the run order) that uses it. Under xdist a
    cluster fixture's tests are one group (``pytest_collection_modifyitems``), run whole by
    one worker in this order, so its last user is that worker's last."""
    last: dict[str, pytest.Item] = {}
    for item in items:
        for name in names:
            if name in item.fixturenames:
                last[name] = item
    return last


@pytest.hookimpl(trylast=True)  # after the test's own fixtures (the leak guard) are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a session cluster of ``_EARLY_STOPS`` after the last test that uses it. Not
    after the last of a run of them: one selection may put another file between two that
    use it (the 2-CPU cluster's), and the second would meet a stopped cluster."""
    early = [name for name in _EARLY_STOPS if name in item.fixturenames]
    if not early:
        return
    last = last_users(item.session.items, early)
    for name in early:
        if nextitem is None or last.get(name) is item:
            _EARLY_STOPS.pop(name)()


def submit_job(cluster, entrypoint: str, *, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> str:  # fmt: skip
    """``ray job submit --no-wait`` of ``entrypoint`` (a shell command, as its owner would
    type it) to ``cluster``'s dashboard, from ``cwd`` as the working dir uploaded with it;
    ``env``: the job's runtime_env env_vars. Returns the submission id."""
    argv = [RAY_CLI, "job", "submit", "--address", cluster.dashboard, "--no-wait"]
    if cwd is not None:
        argv += ["--working-dir", str(cwd)]
    if env:
        argv += ["--runtime-env-json", json.dumps({"env_vars": env})]
    result = subprocess.run([*argv, "--", *shlex.split(entrypoint)], capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"raysubmit_\w+", result.stdout + result.stderr)
    assert found, result.stdout + result.stderr
    return found.group(0)


def job_status(cluster, submission_id: str) -> str:
    """The job's status as Ray's job manager says it (``RUNNING``, ``SUCCEEDED`` …)."""
    from ray.job_submission import JobSubmissionClient

    return str(JobSubmissionClient(cluster.dashboard).get_job_status(submission_id).value)


def job_log_tail(cluster, submission_id: str, chars: int = 3000) -> str:
    """The end of the job's log, for a failure's message."""
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(cluster.dashboard).get_job_logs(submission_id)[-chars:]


LEAK_GRACE_S = 30.0  # Ray removes a dead creator's groups within seconds; a leak stays


@pytest.fixture(autouse=True)
def no_leaked_placement_groups(request: pytest.FixtureRequest):
    """After every test on the shared cluster: no placement group whose creator is gone
    may still hold bundles. One that does takes CPUs from every later test and shows as a
    ``placement_leaked`` finding in their snapshots (CI saw innocent tests fail for it):
    the test that left it fails here instead, by name."""
    yield
    names = [n for n in LEAK_GUARDED if n in request.fixturenames]
    for name in names:
        _no_leak_on(request.getfixturevalue(name).address)


def _no_leak_on(address: str) -> None:
    """No test stops a shared cluster: one that does not answer within the grace (a loaded
    GCS may be slow once) fails the test here, saying so."""
    from raytop.wire.gcs import ClusterUnreachable, GcsReader

    reader = GcsReader(address)
    deadline = time.monotonic() + LEAK_GRACE_S
    while True:
        try:
            leaked = [g for g in reader.placement_groups()
                      if g["creator_dead"] and g["state"] != "REMOVED"]  # fmt: skip
        except ClusterUnreachable as exc:
            if time.monotonic() > deadline:
                pytest.fail(f"the shared cluster at {address} no longer answers: {exc}")
            time.sleep(1.0)
            continue
        if not leaked:
            return
        if time.monotonic() > deadline:
            names = ", ".join(f"{g['pg_id'][:8]} of job {g['creator_job_id']}" for g in leaked)
            pytest.fail(f"left placement group(s) of a dead creator holding bundles: {names}")
        time.sleep(1.0)


def remove_groups_ray_left(address: str, experiment: Path, grace_s: float = 15.0) -> list[str]:
    """Remove the placement groups of ``experiment``'s driver job that Ray left holding
    bundles after every creator of them died, and say which (printed, for the log).

    Stopping a driver while Train is starting a new attempt's worker group (a run in a
    retry loop) can leave that attempt's group behind: its creator, Train's controller,
    dies before the group is placed, and Ray never removes it (seen in CI: still there
    five minutes later, taking 2 CPUs from every later test). raytop shows it
    (``placement_leaked``); a test that provokes it on purpose clears it here, so that
    the leak guard keeps meaning "a test left something"."""
    from raytop.wire.gcs import GcsReader

    job = json.loads((experiment / ".raytop" / "job.json").read_text())["job_id"]
    reader = GcsReader(address)
    deadline = time.monotonic() + grace_s
    while True:
        left = [g["pg_id"] for g in reader.placement_groups()
                if g["creator_dead"] and g["state"] != "REMOVED"
                and g["creator_job_id"] == job]  # fmt: skip
        if not left or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    if left:
        code = (
            "import sys, ray\n"
            "from ray.util.placement_group import PlacementGroup, remove_placement_group\n"
            "ray.init(address=sys.argv[1], log_to_driver=False)\n"
            "for h in sys.argv[2:]:\n"
            "    remove_placement_group(PlacementGroup(ray.PlacementGroupID.from_hex(h)))\n"
        )
        subprocess.run([sys.executable, "-c", code, address, *left], check=True, timeout=120,
                       capture_output=True)  # fmt: skip
        print(f"Ray left placement group(s) {', '.join(h[:8] for h in left)} of job {job}")
    return left


@pytest.fixture(scope="session")
def two_cpu_cluster(raytop_home, tmp_path_factory):
    """A second, CPU-only 2-CPU cluster with its own raytop home (the shared one has 4 CPUs
    and 2 logical GPUs)."""
    from raytop.launch.cluster import start_embedded, stop_embedded
    from raytop.launch.spec import ClusterSection

    # Its own raytop home (its cluster.json must not replace the shared one) and Ray temp
    # dir (its processes, Train's placement-group cleaner among them, must never take the
    # shared cluster for theirs), set only while it starts and stops.
    own_home = str(tmp_path_factory.mktemp("home_2cpu"))
    with environ(RAYTOP_HOME=own_home), own_ray_tmpdir("2cpu"):
        target = start_embedded(ClusterSection(num_cpus=2))
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            with environ(RAYTOP_HOME=own_home), own_ray_tmpdir("2cpu"):
                stop_embedded()

    # Its tests (test_placement, test_plan_refusal) run one after the other; idle for
    # the rest of the session it would cost ~3 CPU-s a minute.
    _EARLY_STOPS["two_cpu_cluster"] = stop
    yield target
    _EARLY_STOPS.pop("two_cpu_cluster", None)
    stop()


def run_raytop(*args: str, timeout: float = 300, env: dict | None = None):
    """The installed CLI as a user runs it, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "raytop", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def example_copy(tmp_path: Path):
    """Copy an example spec and its module into tmp_path, so results land there."""

    def copy(spec_name: str, module_name: str, edit: dict[str, str] | None = None,
             module_edit: dict[str, str] | None = None) -> Path:  # fmt: skip
        """``edit``/``module_edit``: text replaced in the spec / the module (each must occur)."""
        for name, edits in ((spec_name, edit), (module_name, module_edit)):
            text = (EXAMPLES / name).read_text()
            for old, new in (edits or {}).items():
                assert old in text, old
                text = text.replace(old, new)
            (tmp_path / name).write_text(text)
        return tmp_path / spec_name

    return copy


def launch_run(spec: Path, address: str, *extra: str, **popen) -> subprocess.Popen:
    """``raytop run SPEC --no-tui`` in the background (its driver is detached); unless the
    caller takes its output, what it prints goes to ``run_output(spec)`` for a failing test
    to show. It follows the run every second (``--refresh 1``; the tests read the run
    themselves): at the default 0.25 s the followers of the suite's ~35 launches spent
    ~2.5 CPU-s each (measured: 10.3 CPU-s over test_report_ledger's four), on the 2 cores
    the clusters under test share; the default stays covered by the runs that
    ``run_raytop("run", ...)`` waits for."""
    argv = [sys.executable, "-m", "raytop", "run", str(spec), "--no-tui", "--address", address,
            "--refresh", "1", *extra]  # fmt: skip
    if "stdout" in popen or "stderr" in popen:
        popen.setdefault("stdout", subprocess.DEVNULL)
        popen.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.Popen(argv, **popen)
    with open(spec.parent / "raytop-run.out", "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, **popen)


def run_output(spec: Path, experiment: Path | None = None) -> str:
    """What ``launch_run(spec)`` printed, and the tail of its driver's log."""
    out = spec.parent / "raytop-run.out"
    text = out.read_text(errors="replace")[-3000:] if out.exists() else "(no output file)"
    log = experiment / ".raytop" / "driver.log" if experiment else None
    if log is not None and log.exists():
        text += "\n--- driver.log ---\n" + log.read_text(errors="replace")[-4000:]
    return text


def raytop_in_process(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``raytop ARGS`` run in this process (click's runner): its exit code, stdout and
    stderr; an exception that escapes the CLI is raised here (a user would have seen a
    traceback). For wait loops that poll: a new ``raytop`` process a poll costs ~0.8 s of
    CPU (Python, Ray's client) on the 2 cores the clusters under test share, and the suite
    is CPU-bound. Call it from the test's own thread only (the runner swaps this process's
    stdout while it runs); a test confirms what it waited for once with ``run_raytop``,
    as a user runs it."""
    from click.testing import CliRunner

    from raytop.cli import main

    result = CliRunner().invoke(main, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def status_json(address: str, experiment: Path | None = None, *extra: str) -> dict:
    """``raytop status --json`` (of ``experiment`` only, when given), parsed, run in this
    process (``raytop_in_process``)."""
    chosen = ("--experiment", str(experiment)) if experiment is not None else ()
    code, out, err = raytop_in_process("status", "--json", "--address", address, *chosen, *extra)
    assert code == 0, err[-2000:]
    return json.loads(out)


def check_in_process(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``raytop check ARGS`` in this process: its exit code and output."""
    code, out, err = raytop_in_process("check", *args, env=env)
    return code, out + err


def experiment_status(address: str, experiment: Path) -> dict:
    """The one experiment of ``raytop status --json --experiment``."""
    return status_json(address, experiment)["experiments"][0]


def kill_driver(experiment: Path) -> None:
    """SIGKILL a launched run's detached driver (its trials and Train workers die with it);
    one that already ended is left be, so that a test's own failure is the one shown."""
    info = json.loads((experiment / ".raytop" / "driver.json").read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(info["pid"], signal.SIGKILL)


def largest_share(shares: dict[str, float]) -> str:
    """Of ``status --json``'s ``time_shares``, the kind of work with the largest share,
    train.report's parts (``report_*``) counted together as "report"."""
    grouped = {"report": sum(v for k, v in shares.items() if k.startswith("report_"))}
    grouped |= {k: v for k, v in shares.items() if not k.startswith("report_")}
    return max(grouped, key=grouped.__getitem__)


def wait_for(predicate, timeout: float, what: str | Callable[[], str]):
    """Poll ``predicate`` every 0.5 s until it returns something truthy; fail after
    ``timeout`` seconds naming ``what`` (a callable: asked then, to say what was seen)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
