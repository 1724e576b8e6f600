"""The bad-input battery (R5): every row of the table in docs/RELIABILITY.md is one case here.

Each case writes its input into a fresh folder, runs the installed ``raytop`` in a
subprocess (private ``RAYTOP_HOME``, ``RAY_ADDRESS`` unset, ``RAY_TMPDIR`` empty so no
cluster running on this machine is found) and asserts: the exit code, no traceback, and
exactly one line that names the field, file or path: ``raytop: error: …`` on stderr for
an error, the one-line verdicts of ``check``, or the warning of ``status``. None needs a
Ray cluster (``--address 127.0.0.1:1`` fails fast on its TCP probe), so the whole battery
runs in seconds, three subprocesses at a time.

The table is generated from the results: ``RAYTOP_WRITE_RELIABILITY=1`` rewrites the block
between ``<!-- bad-input-table:start -->`` and ``<!-- bad-input-table:end -->``; without it
``test_reliability_table_is_current`` fails when the doc and the real output differ, so
the doc cannot rot. Paths, pids, hosts and times are replaced by placeholders there.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from raytop.rundir import train_run_name

REPO = Path(__file__).resolve().parents[2]
RAYTOP = Path(sys.executable).parent / "raytop"
DOC = REPO / "docs" / "RELIABILITY.md"
START, END = "<!-- bad-input-table:start -->", "<!-- bad-input-table:end -->"
PARALLEL = 3
CASE_TIMEOUT_S = 60

# One xdist group: the battery's cases all run in the module fixture ``outcomes``, once per
# test process that runs one of its tests; ungrouped, xdist handed its tests to both workers
# and each ran the whole battery (2 x ~80 s of the suite's 2 cores).
pytestmark = pytest.mark.xdist_group("bad-input")

# What a case's one line is: a usage/input error on stderr, a `check` verdict on stdout
# (one line per finding), the warning line of `status`, or the ordinary output of a command
# that must keep working (e.g. `plan` with RAYTOP_HOME a file).
ERROR, VERDICT, WARNING, OUTPUT = "error", "verdict", "warning", "output"
VERDICT_LINE = re.compile(
    r"^(safe to tear down: |teardown_unsafe |cluster_unreachable: |healthy: |"
    r"[a-z_]+ [^:]+: )"
)


@dataclass(frozen=True)
class Case:
    """``argv`` and ``env`` values may hold ``{tmp}`` (the case's folder); ``setup`` writes
    the input into it and may return processes to end afterwards."""

    id: str
    argv: tuple[str, ...]
    code: int
    line: str  # regex the one line must match (re.search)
    setup: Callable[[Path], list[subprocess.Popen] | None] | None = None
    kind: str = ERROR
    env: dict[str, str] = field(default_factory=dict)
    within_s: float | None = None  # the answer must come this fast


@dataclass
class Outcome:
    case: Case
    code: int
    stdout: str
    stderr: str
    seconds: float
    tmp: Path
    signalled: list[int] = field(default_factory=list)  # processes of the setup that ended

    def normalise(self, text: str) -> str:
        for path in sorted({str(self.tmp), os.path.realpath(self.tmp)}, key=len, reverse=True):
            text = text.replace(path, "<tmp>")
        text = text.replace(socket.gethostname(), "<host>")
        text = re.sub(r"\bpid \d+", "pid <pid>", text)
        text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", "<time>", text)
        text = re.sub(r"\b1[6-9]\d{8}\.\d+\b", "<epoch>", text)  # a Unix time, 2020-2033
        return re.sub(r"\b\d+\.\d+ s\b", "<t> s", text)

    def the_line(self) -> str | None:
        """The one line this case is about, or None when there is not exactly one."""
        err = [line for line in self.stderr.splitlines() if line.strip()]
        out = [line for line in self.stdout.splitlines() if line.strip()]
        pattern = re.compile(self.case.line)
        if self.case.kind == ERROR:
            errors = [line for line in err if line.startswith("raytop: error: ")]
            return errors[0] if len(errors) == 1 else None
        if self.case.kind == VERDICT:
            hits = [line for line in out if pattern.search(line)]
            return hits[0] if hits else None
        hits = [line for line in out + err if pattern.search(line)]
        return hits[0] if hits else None

    def problems(self) -> list[str]:
        """Why this outcome is not what the case promises (empty: it holds)."""
        case, found = self.case, []
        both = self.stdout + self.stderr
        if "Traceback" in both:
            found.append("a traceback was printed")
        if self.signalled:
            found.append(f"a process that is not raytop's was signalled: {self.signalled}")
        if self.code != case.code:
            found.append(f"exit {self.code}, expected {case.code}")
        if case.within_s is not None and self.seconds > case.within_s:
            found.append(f"took {self.seconds:.1f} s, expected under {case.within_s} s")
        err = [line for line in self.stderr.splitlines() if line.strip()]
        out = [line for line in self.stdout.splitlines() if line.strip()]
        line = self.the_line()
        if case.kind == ERROR:
            if line is None:
                found.append("not exactly one `raytop: error:` line on stderr")
            # Anything else on stderr is raytop's own one-line notices, never a library's.
            stray = [x for x in err if not x.startswith("raytop: ")]
            if stray:
                found.append(f"stray stderr: {stray[0][:120]!r}")
            if out and case.argv[0] != "plan":
                found.append(f"stdout not empty: {out[0][:120]!r}")
        elif case.kind == VERDICT:
            bad = [x for x in out if not VERDICT_LINE.match(x)]
            if bad:
                found.append(f"not a verdict line: {bad[0][:120]!r}")
            if any(x.startswith("raytop: error:") for x in err):
                found.append("a verdict, not an error, was expected")
        else:
            if any(x.startswith("raytop: error:") for x in err):
                found.append(f"an error where none was expected: {err[0][:160]!r}")
        if line is None or not re.search(case.line, line):
            found.append(f"no line matches {case.line!r}")
        return found

    def row(self, number: int) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.case.env.items())
        argv = " ".join(shlex.quote(a) for a in self.case.argv)
        command = " ".join(x for x in (env, "raytop", argv) if x)
        command = self.normalise(command.format(tmp=self.tmp))
        line = self.normalise(self.the_line() or "(none)")
        return f"| {number} | {self.case.id} | {_code(command)} | {self.code} | {_code(line)} |"


def _code(text: str) -> str:
    """``text`` as one markdown code span inside a table cell."""
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# ----------------------------------------------------------------------------- inputs

SPEC = """\
[experiment]
name = "exp"
storage_path = "store"

[trainable]
kind = "function"
entrypoint = "objective:objective"

[param_space]
x = { grid = [1, 2] }

[tune]
metric = "score"
mode = "max"
max_concurrent_trials = 2
trial_resources = { CPU = 1 }

[cluster]
num_cpus = 2
"""
TORCH = """\
[trainable]
kind = "torch"
entrypoint = "train:train_func"

[scaling]
num_workers = 2
"""
NODES = "[[nodes]]\nCPU = 4\n"
PLAN = ("plan", "{tmp}/spec.toml", "--cluster", "{tmp}/nodes.toml")
BINARY = b"\xff\xfe\x00\x01\x80\x81 [[nodes]] \x00\xc3\x28 count = \xf0\x28\x8c\x28"
TRIAL_ID = "a_00000"
DEAD_PID = 2**22 + 1  # above the default pid_max: never a live process


OBJECTIVE = "def objective(config):\n    return {'score': config['x']}\n"


# The spec's last [tune] line, and it again followed by a sub-table of [tune].
TUNE_LAST = "trial_resources = { CPU = 1 }"
TUNE_TABLE = TUNE_LAST + "\n"


def spec(
    edit: dict[str, str] | None = None, text: str = SPEC, nodes: str = NODES,
    module: str = OBJECTIVE,
):  # fmt: skip
    """A setup writing ``text`` (each ``old -> new`` of ``edit`` applied) as spec.toml, a
    valid nodes.toml and the trainable's module (``module``) beside it: preflight, on the
    way to a launch, imports it."""

    def setup(tmp: Path) -> None:
        body = text
        for old, new in (edit or {}).items():
            assert old in body, old
            body = body.replace(old, new)
        (tmp / "spec.toml").write_text(body)
        (tmp / "nodes.toml").write_text(nodes)
        (tmp / "objective.py").write_text(module)

    return setup


def storage_as(kind: str):
    """A setup: a valid spec whose storage folder is a file or a symlink to itself."""

    def setup(tmp: Path) -> None:
        spec()(tmp)
        if kind == "file":
            (tmp / "store").write_text("x\n")
        else:
            (tmp / "store").symlink_to("store")

    return setup


def nodes(content: str | bytes):
    """A setup writing a valid spec and ``content`` as nodes.toml."""

    def setup(tmp: Path) -> None:
        spec()(tmp)
        path = tmp / "nodes.toml"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)

    return setup


def experiment(tmp: Path, name: str = "exp", **files: str | bytes | None) -> Path:
    """A finished experiment as a launched run leaves it under ``tmp/store/name``: Tune's
    state, the raytop dir (driver.json of a gone driver, exit.json, trials.json) and one
    Train run with a committed checkpoint. ``files`` replaces a file's content by relative
    path (``None`` removes it)."""
    path = tmp / "store" / name
    trial = {"trial_id": TRIAL_ID, "status": "TERMINATED", "config": {"x": 1}}
    last = {"score": 1.0, "training_iteration": 3, "time_total_s": 2.0}
    run = f"train_runs/{train_run_name(name, TRIAL_ID)}"
    checkpoint = {"checkpoint_dir_name": "checkpoint_000002", "metrics": {"epoch": 2}}
    content: dict[str, str | bytes | None] = {
        "experiment_state-2026-12-02_00-00-00.json": json.dumps(
            {"trial_data": [[json.dumps(trial), json.dumps({"last_result": last})]]}
        ),
        ".raytop/driver.json": json.dumps(
            {
                "pid": DEAD_PID,
                "pid_create_time": 1.0,
                "host": socket.gethostname(),
                "experiment_name": name,
                "experiment_path": str(path),
                "metric": "score",
                "mode": "max",
                "spec": str(tmp / "spec.toml"),
            }
        ),  # fmt: skip
        ".raytop/exit.json": json.dumps({"code": 0}),
        ".raytop/trials.json": json.dumps(
            {
                "trials": [
                    {
                        "trial_id": TRIAL_ID,
                        "status": "TERMINATED",
                        "config": {"x": 1},
                        "metrics": {"score": 1.0},
                        "num_failures": 0,
                        "iterations": 3,
                        "elapsed_s": 2.0,
                        "error": None,
                    }
                ]
            }
        ),  # fmt: skip
        f"{run}/checkpoint_manager_snapshot.json": json.dumps(
            {"checkpoint_results": [checkpoint], "latest_checkpoint_result": checkpoint}
        ),
        f"{run}/checkpoint_000002/.keep": "",
    }
    content.update({k.replace("RUN", run): v for k, v in files.items()})
    for rel, data in content.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            target.unlink(missing_ok=True)
        elif isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data)
    return path


STATE = "experiment_state-2026-12-02_00-00-00.json"
SNAPSHOT = "RUN/checkpoint_manager_snapshot.json"


def exp_with(**files: str | bytes | None):
    """A setup: the finished experiment with some files replaced (keyword = path with
    ``/`` written ``__`` and ``.`` written ``_``; see ``FILES``)."""

    def setup(tmp: Path) -> None:
        spec()(tmp)
        experiment(tmp, **{FILES[k]: v for k, v in files.items()})

    return setup


def trials_named(*trial_ids: str, config: object = 1, score: object = 1.0):
    """A setup: the finished experiment whose Tune state lists trials with these ids (as
    an adversary may write them) and no probe table, so status reads Tune's state."""

    def setup(tmp: Path) -> None:
        rows = [
            [json.dumps({"trial_id": t, "status": "TERMINATED", "config": {"x": config}}),
             json.dumps({"last_result": {"score": score, "training_iteration": 3}})]
            for t in trial_ids
        ]  # fmt: skip
        spec()(tmp)
        experiment(tmp, **{STATE: json.dumps({"trial_data": rows}), ".raytop/trials.json": None})

    return setup


def nested(levels: int) -> object:
    value: list = []
    inner = value
    for _ in range(levels - 1):
        inner.append([])
        inner = inner[0]
    return value


SECRET_S3 = "s3://AKIAEXAMPLE:SECRETKEY@bucket/p?endpoint_override=127.0.0.1:1&scheme=http"
SECRET_QUERY = (
    "s3://bucket/p?endpoint_override=127.0.0.1:1&scheme=http&access_key=AKIAEXAMPLE"
    "&secret_key=SECRETKEY"
)
NO_CLUSTER = ("--address", "127.0.0.1:1")


FILES = {
    "state": STATE,
    "snapshot": SNAPSHOT,
    "driver": ".raytop/driver.json",
    "trials": ".raytop/trials.json",
    "index": ".raytop/trials/index.json",
    "segment": ".raytop/trials/0.json",
    "exit": ".raytop/exit.json",
}


def symlink_loop(rel: str, *removed: str):
    """A setup: the finished experiment where ``rel`` is a symlink to itself (and the files
    ``removed`` are gone, so that the reader has to go through it)."""

    def setup(tmp: Path) -> None:
        path = experiment(tmp, **dict.fromkeys(removed))
        target = path / rel.replace("RUN", f"train_runs/{train_run_name('exp', TRIAL_ID)}")
        if target.is_dir():
            import shutil

            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        target.symlink_to(target.name)

    return setup


def user_theme(tmp: Path, content: str | bytes) -> None:
    folder = tmp / "config" / "raytop" / "themes"
    folder.mkdir(parents=True)
    path = folder / "bad.toml"
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)


def binary_spec(tmp: Path) -> None:
    spec()(tmp)
    (tmp / "spec.toml").write_bytes(BINARY)


def good_and_bad(tmp: Path) -> None:
    experiment(tmp, "good")
    experiment(tmp, "bad", **{STATE: "[]", ".raytop/trials.json": None})


def home_file_only(tmp: Path) -> None:
    spec()(tmp)
    (tmp / "home-file").write_text("not a folder\n")


def home_file(tmp: Path) -> None:
    home_file_only(tmp)
    experiment(tmp)


def home_json(name: str, content: str):
    """A setup: ``$RAYTOP_HOME/name`` holds ``content`` (and a finished experiment)."""

    def setup(tmp: Path) -> None:
        spec()(tmp)
        experiment(tmp)
        (tmp / "home").mkdir(exist_ok=True)
        (tmp / "home" / name).write_text(content.format(tmp=tmp, pid=os.getpid()))

    return setup


def _sleeper(*argv: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", *argv],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # right after fork it still shows our command line
        try:
            if all(a in psutil.Process(proc.pid).cmdline() for a in argv):
                break
        except psutil.Error:
            pass
        time.sleep(0.05)
    return proc


def running_driver(start_time_off_by: float = 0.0):
    """A setup: the experiment's driver.json names a live process whose command line is
    that of raytop's driver for this raytop dir and whose start time is recorded (off by
    ``start_time_off_by`` seconds: a reused pid)."""

    def setup(tmp: Path) -> list[subprocess.Popen]:
        path = experiment(tmp, **{".raytop/exit.json": None})
        raytop_dir = path / ".raytop"
        proc = _sleeper("raytop.launch.driver", "--raytop-dir", str(raytop_dir))
        info = json.loads((raytop_dir / "driver.json").read_text())
        info.update(
            pid=proc.pid, pid_create_time=psutil.Process(proc.pid).create_time() + start_time_off_by
        )
        (raytop_dir / "driver.json").write_text(json.dumps(info))
        rows = json.loads((raytop_dir / "trials.json").read_text())
        rows["trials"][0]["status"] = "RUNNING"
        (raytop_dir / "trials.json").write_text(json.dumps(rows))
        return [proc]

    return setup


def not_a_driver(tmp: Path) -> list[subprocess.Popen]:
    """driver.json names a live process long past its spawn (this test process, its start
    time recorded) that is not raytop's driver: a process seconds old whose command line
    is not the driver's yet is a driver starting (``process_identity.SPAWNING_S``)."""
    path = experiment(tmp, **{".raytop/exit.json": None})
    info = json.loads((path / ".raytop" / "driver.json").read_text())
    info.update(pid=os.getpid(), pid_create_time=psutil.Process().create_time())
    (path / ".raytop" / "driver.json").write_text(json.dumps(info))
    rows = json.loads((path / ".raytop" / "trials.json").read_text())
    rows["trials"][0]["status"] = "RUNNING"
    (path / ".raytop" / "trials.json").write_text(json.dumps(rows))
    return []


def foreign_cluster_record(tmp: Path) -> list[subprocess.Popen]:
    """cluster.json names a live process that is not the embedded cluster raytop started."""
    proc = _sleeper()
    (tmp / "home").mkdir(exist_ok=True)
    record = {"pid": proc.pid, "pid_create_time": psutil.Process(proc.pid).create_time() - 500,
              "address": "127.0.0.1:1", "session_dir": str(tmp / "nowhere")}  # fmt: skip
    (tmp / "home" / "cluster.json").write_text(json.dumps(record))
    return [proc]


def plain_folder(tmp: Path) -> None:
    (tmp / "store" / "empty").mkdir(parents=True)


def a_file(tmp: Path) -> None:
    (tmp / "file").write_text("x\n")


def loop_folder(tmp: Path) -> None:
    (tmp / "loop").symlink_to("loop")


def fifo_at(rel: str, setup: Callable[[Path], object] | None = None):
    """A setup: ``setup`` (default: the valid spec and nodes), then a FIFO at ``rel``."""

    def make(tmp: Path) -> None:
        (setup or spec())(tmp)
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        os.mkfifo(target)

    return make


def linked_to(rel: str, to: str):
    """A setup: the finished experiment with ``rel`` a symlink to ``to`` (e.g. /dev/zero)."""

    def make(tmp: Path) -> None:
        spec()(tmp)
        target = experiment(tmp) / rel
        target.unlink(missing_ok=True)
        target.symlink_to(to)

    return make


def spec_bytes(content: bytes):
    def make(tmp: Path) -> None:
        spec()(tmp)
        (tmp / "spec.toml").write_bytes(content)

    return make


def deep_spec(tmp: Path) -> None:
    spec()(tmp)
    (tmp / "spec.toml").write_text(SPEC + "deep = " + "[" * 20_000 + "]" * 20_000 + "\n")


def unfinished_torch_trial(spec_copy: bool):
    """A setup: trial a_00000 RUNNING, its Train run folder (and train_runs/) gone; the
    launched spec's copy says torch, or there is none."""

    def make(tmp: Path) -> None:
        trial = {"trial_id": TRIAL_ID, "status": "RUNNING", "config": {"x": 1}}
        last = {"score": 1.0, "training_iteration": 3}
        state = json.dumps({"trial_data": [[json.dumps(trial), json.dumps({"last_result": last})]]})
        spec()(tmp)
        path = experiment(tmp, **{STATE: state, ".raytop/trials.json": None})
        shutil.rmtree(path / "train_runs")
        if spec_copy:
            (path / ".raytop" / "spec.toml").write_text(SPEC.replace('"function"', '"torch"'))

    return make


def driver_names_another_folder(tmp: Path) -> None:
    """driver.json of exp names the complete folder ``other`` as its experiment."""
    spec()(tmp)
    other = experiment(tmp, "other")
    path = experiment(tmp)
    record = json.loads((path / ".raytop" / "driver.json").read_text())
    record.update(experiment_path=str(other), experiment_name="other")
    (path / ".raytop" / "driver.json").write_text(json.dumps(record))


def live_driver_and_exit_json(tmp: Path) -> list[subprocess.Popen]:
    """The proven live driver, and beside it an empty exit.json."""
    procs = running_driver()(tmp)
    (tmp / "store" / "exp" / ".raytop" / "exit.json").write_text("")
    return procs


UNREACHABLE_S3 = "s3://bucket/exp?endpoint_override=127.0.0.1:1&scheme=http"


E = "{tmp}/store/exp"
TEARDOWN = ("check", "--teardown", "--experiment", E)
STATUS = ("status", "--experiment", E)
LONG = "x" * 300

CASES: list[Case] = [
    # --- the spec: reading it (plan, run) -----------------------------------------------
    Case("spec missing", ("run", "{tmp}/nope.toml"), 2, r"spec not found: .*nope\.toml"),
    Case("spec missing (plan)", ("plan", "{tmp}/nope.toml"), 2, r"spec not found: .*nope\.toml"),
    Case("spec is a folder", ("plan", "{tmp}", "--cluster", "{tmp}/nodes.toml"), 2, r"<tmp>|/"),
    Case(
        "spec TOML syntax error",
        ("run", "{tmp}/spec.toml"),
        2,
        r"spec\.toml: TOML syntax error",
        spec({'kind = "function"': 'kind = "function'}),
    ),
    Case(
        "spec of binary bytes",
        PLAN,
        2,
        r"spec\.toml: .*(UTF-8|TOML)",
        binary_spec,
    ),
    Case(
        "spec unknown key",
        ("run", "{tmp}/spec.toml"),
        2,
        r"\[tune\] metirc: unknown key \(did you mean 'metric'\?\)",
        spec({'metric = "score"': 'metirc = "score"'}),
    ),
    Case(
        "spec unknown section", PLAN, 2, r"\[tunes\]: unknown section", spec({"[tune]": "[tunes]"})
    ),
    Case(
        "spec no [trainable]",
        PLAN,
        2,
        r"\[trainable\]",
        spec({'[trainable]\nkind = "function"\nentrypoint = "objective:objective"\n': ""}),
    ),
    Case(
        "spec wrong type",
        PLAN,
        2,
        r"\[tune\] max_concurrent_trials: expected an integer",
        spec({"max_concurrent_trials = 2": 'max_concurrent_trials = "2"'}),
    ),
    Case(
        "spec boolean for integer",
        PLAN,
        2,
        r"max_concurrent_trials: .*boolean",
        spec({"max_concurrent_trials = 2": "max_concurrent_trials = true"}),
    ),
    Case(
        "spec negative count",
        PLAN,
        2,
        r"max_concurrent_trials: expected an integer >= 1",
        spec({"max_concurrent_trials = 2": "max_concurrent_trials = -1"}),
    ),
    Case(
        "spec trial resource nan",
        PLAN,
        2,
        r"trial_resources\.CPU",
        spec({"trial_resources = { CPU = 1 }": "trial_resources = { CPU = nan }"}),
    ),
    Case(
        "spec trial resource < 0",
        PLAN,
        2,
        r"trial_resources\.CPU",
        spec({"trial_resources = { CPU = 1 }": "trial_resources = { CPU = -1 }"}),
    ),
    Case(
        "spec unknown kind",
        PLAN,
        2,
        r"\[trainable\] kind",
        spec({'kind = "function"': 'kind = "jax"'}),
    ),
    Case("spec unknown mode", PLAN, 2, r"\[tune\] mode", spec({'mode = "max"': 'mode = "median"'})),
    Case("spec metric without mode", PLAN, 2, r"\[tune\].*mode", spec({'mode = "max"\n': ""})),
    Case(
        "spec unknown sampler",
        PLAN,
        2,
        r"\[param_space\] x: unknown sampler 'unifrom'",
        spec({"x = { grid = [1, 2] }": "x = { unifrom = [0, 1] }"}),
    ),
    Case(
        "spec empty grid",
        PLAN,
        2,
        r"\[param_space\] x",
        spec({"x = { grid = [1, 2] }": "x = { grid = [] }"}),
    ),
    Case(
        "spec uniform low >= high",
        PLAN,
        2,
        r"\[param_space\] x",
        spec({"x = { grid = [1, 2] }": "x = { uniform = [1, 0] }"}),
    ),
    Case(
        "spec loguniform from 0",
        PLAN,
        2,
        r"\[param_space\] x",
        spec({"x = { grid = [1, 2] }": "x = { loguniform = [0, 1] }"}),
    ),
    Case(
        "spec unknown scheduler kind",
        PLAN,
        2,
        r"\[tune\.scheduler\] kind: .*got 'hasha' \(did you mean 'asha'\?\)",
        spec({TUNE_LAST: TUNE_TABLE + '[tune.scheduler]\nkind = "hasha"'}),
    ),
    Case(
        "spec scheduler unknown key",
        PLAN,
        2,
        r"\[tune\.scheduler\] grace_peroid: unknown key \(did you mean 'grace_period'\?\)",
        spec({TUNE_LAST: TUNE_TABLE + '[tune.scheduler]\nkind = "asha"\ngrace_peroid = 2'}),
    ),
    Case(
        "spec scheduler without metric",
        PLAN,
        2,
        r"\[tune\] metric: missing; \[tune\.scheduler\] kind = 'asha'",
        spec(
            {
                'metric = "score"\nmode = "max"\n': "",
                TUNE_LAST: TUNE_TABLE + '[tune.scheduler]\nkind = "asha"',
            }
        ),
    ),
    Case(
        "spec asha grace above max_t",
        PLAN,
        2,
        r"\[tune\.scheduler\] grace_period: 9 is above max_t \(8\)",
        spec(
            {TUNE_LAST: TUNE_TABLE + '[tune.scheduler]\nkind = "asha"\nmax_t = 8\ngrace_period = 9'}
        ),
    ),
    Case(
        "spec pbt mutation of no param",
        PLAN,
        2,
        r"hyperparam_mutations\.lr: not a \[param_space\] key",
        spec(
            {
                TUNE_LAST: TUNE_TABLE + '[tune.scheduler]\nkind = "pbt"\n'
                "perturbation_interval = 2\n"
                "hyperparam_mutations = { lr = [1, 2] }"
            }
        ),
    ),
    Case(
        "spec searcher not installed",
        PLAN,
        2,
        r"\[tune\.search\] kind: 'optuna' needs the package 'optuna', which is not installed",
        spec({TUNE_LAST: TUNE_TABLE + '[tune.search]\nkind = "optuna"'}),
    ),
    Case(
        "spec two samplers in one",
        PLAN,
        2,
        r"\[param_space\] x",
        spec({"x = { grid = [1, 2] }": "x = { grid = [1], choice = [2] }"}),
    ),
    Case(
        "num_samples = 1e9",
        PLAN,
        2,
        r"\[tune\] num_samples",
        spec({"max_concurrent_trials = 2": "num_samples = 1e9"}),
        within_s=10,
    ),
    Case(
        "num_samples = 1000000000",
        PLAN,
        2,
        r"\[tune\] num_samples: .*limit",
        spec({"max_concurrent_trials = 2": "num_samples = 1000000000"}),
        within_s=10,
    ),
    Case(
        "grid product over the limit",
        PLAN,
        2,
        r"num_samples|grid",
        spec(
            {
                "x = { grid = [1, 2] }": "\n".join(
                    f"{k} = {{ grid = {list(range(100))} }}" for k in "abc"
                )
            }
        ),
        within_s=10,
    ),
    Case(
        "num_workers = 0",
        PLAN,
        2,
        r"\[scaling\] num_workers",
        spec(text=TORCH.replace("num_workers = 2", "num_workers = 0")),
    ),
    Case(
        "num_workers [4, 2]",
        PLAN,
        2,
        r"\[scaling\] num_workers",
        spec(text=TORCH.replace("num_workers = 2", "num_workers = [4, 2]")),
    ),
    Case(
        "num_workers = 1e12",
        PLAN,
        2,
        r"\[scaling\] num_workers",
        spec(text=TORCH.replace("num_workers = 2", "num_workers = 1000000000000")),
        within_s=10,
    ),
    Case(
        "use_gpu not a boolean",
        PLAN,
        2,
        r"\[scaling\] use_gpu",
        spec(text=TORCH + ('use_gpu = "yes"\n')),
    ),
    Case(
        "unknown placement strategy",
        PLAN,
        2,
        r"\[scaling\] placement_strategy",
        spec(text=TORCH + 'placement_strategy = "BOGUS"\n'),
    ),
    Case(
        "[cluster] resources CPU",
        PLAN,
        2,
        r"\[cluster\] resources",
        spec({"num_cpus = 2": "resources = { CPU = 4 }"}),
    ),
    Case(
        "experiment name of 300 chars",
        PLAN,
        2,
        r"\[experiment\] name",
        spec({'name = "exp"': f'name = "{LONG}"'}),
    ),
    Case(
        "experiment name ..", PLAN, 2, r"\[experiment\] name", spec({'name = "exp"': 'name = ".."'})
    ),
    Case(
        "experiment name with a slash",
        PLAN,
        2,
        r"\[experiment\] name",
        spec({'name = "exp"': 'name = "a/b"'}),
    ),
    Case(
        "storage s3:// (no bucket)",
        PLAN,
        2,
        r"\[experiment\] storage_path.*s3://",
        spec({'storage_path = "store"': 'storage_path = "s3://"'}),
    ),
    Case(
        "storage s3:/bucket",
        PLAN,
        2,
        r"storage_path: 's3:/bucket' .*mistyped",
        spec({'storage_path = "store"': 'storage_path = "s3:/bucket"'}),
    ),
    Case(
        "storage s3:bucket",
        PLAN,
        2,
        r"storage_path: 's3:bucket'",
        spec({'storage_path = "store"': 'storage_path = "s3:bucket"'}),
    ),
    Case(
        "storage file://relative",
        PLAN,
        2,
        r"storage_path.*file://",
        spec({'storage_path = "store"': 'storage_path = "file://store"'}),
    ),
    Case(
        "entrypoint os:system",
        PLAN,
        2,
        r"\[trainable\] entrypoint: 'os:system'.*'os'",
        spec({"objective:objective": "os:system"}),
    ),
    Case(
        "entrypoint builtins:exec",
        PLAN,
        2,
        r"\[trainable\] entrypoint: 'builtins:exec'",
        spec({"objective:objective": "builtins:exec"}),
    ),
    Case(
        "entrypoint without a colon",
        PLAN,
        2,
        r"\[trainable\] entrypoint",
        spec({"objective:objective": "objective"}),
    ),
    Case("valid spec plans (control)", PLAN, 0, r"trial", spec(), kind=OUTPUT),
    # --- NODES.toml (plan --cluster) -----------------------------------------------------
    Case("NODES.toml of binary bytes", PLAN, 2, r"nodes\.toml: .*(UTF-8|TOML)", nodes(BINARY)),
    Case(
        "NODES count = 1e8",
        PLAN,
        2,
        r"nodes\.toml: .*count",
        nodes("[[nodes]]\nCPU = 4\ncount = 1e8\n"),
        within_s=10,
    ),
    Case(
        "NODES count = 100000000",
        PLAN,
        2,
        r"nodes\.toml: .*(count|10,000)",
        nodes("[[nodes]]\nCPU = 4\ncount = 100000000\n"),
        within_s=10,
    ),
    Case(
        "NODES count = 0",
        PLAN,
        2,
        r"nodes\.toml: .*count",
        nodes("[[nodes]]\nCPU = 4\ncount = 0\n"),
    ),
    Case(
        "NODES count = true",
        PLAN,
        2,
        r"nodes\.toml: .*count",
        nodes("[[nodes]]\nCPU = 4\ncount = true\n"),
    ),
    Case("NODES resource < 0", PLAN, 2, r"nodes\.toml: .*CPU", nodes("[[nodes]]\nCPU = -4\n")),
    Case(
        "NODES resource a string",
        PLAN,
        2,
        r"nodes\.toml: .*CPU",
        nodes('[[nodes]]\nCPU = "sixteen"\n'),
    ),
    Case("NODES resource inf", PLAN, 2, r"nodes\.toml: .*CPU", nodes("[[nodes]]\nCPU = inf\n")),
    Case("NODES TOML syntax error", PLAN, 2, r"nodes\.toml: .*TOML", nodes("[[nodes]\nCPU=4\n")),
    Case("NODES no [[nodes]]", PLAN, 2, r"nodes\.toml", nodes("")),
    Case("NODES nodes not a list", PLAN, 2, r"nodes\.toml", nodes("nodes = 3\n")),
    Case(
        "NODES.toml missing",
        ("plan", "{tmp}/spec.toml", "--cluster", "{tmp}/none.toml"),
        2,
        r"none\.toml",
        spec(),
    ),
    Case(
        "NODES.toml is a folder",
        ("plan", "{tmp}/spec.toml", "--cluster", "{tmp}"),
        2,
        r"<tmp>|/",
        spec(),
    ),
    # --- options -------------------------------------------------------------------------
    Case("check --waiting-after nan", ("check", "--waiting-after", "nan"), 2, r"--waiting-after"),
    Case("check --waiting-after -1", ("check", "--waiting-after", "-1"), 2, r"--waiting-after"),
    Case("--stall-after inf", ("status", "--stall-after", "inf"), 2, r"--stall-after"),
    Case("--refresh 0", ("--refresh", "0", "status"), 2, r"--refresh"),
    Case("--address empty", ("status", "--address", ""), 2, r"--address"),
    Case("--address empty before the command", ("--address", "", "status"), 2, r"--address"),
    Case(
        "--address unreachable",
        ("status", "--address", "127.0.0.1:1"),
        2,
        r"127\.0\.0\.1:1",
        within_s=10,
    ),
    Case(
        "--address unreachable before the command",
        ("--address", "127.0.0.1:1", "status"),
        2,
        r"127\.0\.0\.1:1",
        within_s=10,
    ),
    Case(
        "--address not host:port", ("status", "--address", "nonsense"), 2, r"nonsense", within_s=10
    ),
    Case("--address ray:// client", ("status", "--address", "ray://head:10001"), 2, r"ray://"),
    Case(
        "check --address unreachable",
        ("check", "--address", "127.0.0.1:1"),
        20,
        r"^cluster_unreachable: .*127\.0\.0\.1:1",
        kind=VERDICT,
        within_s=10,
    ),
    Case(
        "run --address unreachable",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"127\.0\.0\.1:1",
        spec(),
        within_s=10,
    ),
    # --- preflight: only on the way to a launch (before any cluster is looked for) --------
    Case(
        "entrypoint not importable",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[trainable\] entrypoint 'no_such_module_x:f': cannot import module",
        spec({"objective:objective": "no_such_module_x:f"}),
    ),
    Case(
        "entrypoint module raises on import",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[trainable\] entrypoint 'objective:objective'.*ZeroDivisionError",
        spec(module="1 / 0\n"),
    ),
    Case(
        "entrypoint module exits on import",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[trainable\] entrypoint 'objective:objective'.*SystemExit",
        spec(module="raise SystemExit(3)\n"),
    ),
    Case(
        "entrypoint function missing",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[trainable\] entrypoint 'objective:objective'",
        spec(module="def other(config):\n    pass\n"),
    ),
    Case(
        "entrypoint not callable",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[trainable\] entrypoint 'objective:objective'",
        spec(module="objective = 5\n"),
    ),
    Case(
        "storage_path is a file",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[experiment\] storage_path .*not a folder",
        storage_as("file"),
    ),
    Case(
        "storage_path a symlink loop",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"\[experiment\] storage_path .*not a folder",
        storage_as("loop"),
    ),
    Case("unknown option", ("status", "--bogus"), 2, r"--bogus"),
    Case("unknown command", ("sttaus",), 2, r"sttaus"),
    Case("--experiment missing folder", ("status", "--experiment", "{tmp}/absent"), 2, r"absent"),
    Case("--experiment is a file", ("status", "--experiment", "{tmp}/file"), 2, r"file", a_file),
    Case(
        "--experiment is a symlink loop",
        ("status", "--experiment", "{tmp}/loop"),
        2,
        r"loop",
        loop_folder,
    ),
    # --- stop / resume / down ----------------------------------------------------------------
    Case('stop --trial ""', ("stop", E, "--trial", "", "--yes"), 2, r"--trial", running_driver()),
    Case(
        "stop --trial no-such-id",
        ("stop", E, "--trial", "no-such-id", "--yes"),
        2,
        r"no-such-id",
        running_driver(),
    ),
    Case(
        "stop a reused pid",
        ("stop", E, "--yes"),
        2,
        r"exp: its driver is not running here|not the driver raytop started .*not signalled",
        running_driver(start_time_off_by=-500),
    ),
    Case(
        "stop a pid that is not a driver",
        ("stop", E, "--yes"),
        2,
        r"exp: its driver is not running here|not the driver raytop started .*not signalled",
        not_a_driver,
    ),
    Case("stop a finished experiment", ("stop", E, "--yes"), 2, r"exp.*not running", exp_with()),
    Case(
        "stop with driver.json pid abc",
        ("stop", E, "--yes"),
        2,
        r"exp: its driver is not running here|driver\.json",
        exp_with(driver='{"pid": "abc", "host": "h"}', exit=None),
    ),
    Case("stop nothing running", ("stop", "--yes"), 2, r"0 experiments are running"),
    Case("stop missing folder", ("stop", "{tmp}/absent", "--yes"), 2, r"absent"),
    Case("resume missing folder", ("resume", "{tmp}/absent"), 2, r"absent"),
    Case(
        "resume a folder with no experiment",
        ("resume", "{tmp}/store/empty"),
        2,
        r"empty",
        plain_folder,
    ),
    Case(
        "resume an interrupted run, state []",
        ("resume", E),
        2,
        r"experiment_state",
        exp_with(
            state="[]",
            exit=None,
            trials=json.dumps(
                {
                    "trials": [
                        {
                            "trial_id": TRIAL_ID,
                            "status": "RUNNING",
                            "config": {"x": 1},
                            "metrics": {},
                            "num_failures": 0,
                            "iterations": 1,
                            "elapsed_s": 1.0,
                            "error": None,
                        }
                    ]
                }
            ),
        ),
    ),  # fmt: skip
    Case(
        "resume with driver.json a list", ("resume", E), 2, r"driver\.json", exp_with(driver="[]")
    ),
    Case(
        "down: cluster.json names another process",
        ("down",),
        2,
        r"cluster\.json|not signalled|not the",
        foreign_cluster_record,
    ),
    Case(
        "down: cluster.json pid abc",
        ("down",),
        2,
        r"cluster\.json",
        home_json("cluster.json", '{{"pid": "abc", "address": "127.0.0.1:1"}}'),
    ),
    # --- check --teardown: never "safe" on what it could not read ----------------------
    Case(
        "teardown of a complete experiment (control)",
        TEARDOWN,
        0,
        r"^safe to tear down: 1 experiment",
        exp_with(),
        kind=VERDICT,
    ),
    Case(
        "teardown: state truncated",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state='{"trial_data": [["{\\"trial_id'),
        kind=VERDICT,
    ),
    Case(
        "teardown: state []",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state="[]"),
        kind=VERDICT,
    ),
    Case(
        "teardown: state a string",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state='"abc"'),
        kind=VERDICT,
    ),
    Case(
        "teardown: state {}",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state="{}"),
        kind=VERDICT,
    ),
    Case(
        "teardown: state empty file",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state=""),
        kind=VERDICT,
    ),
    Case(
        "teardown: state binary bytes",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state=BINARY),
        kind=VERDICT,
    ),
    Case(
        "teardown: trial_data not a list",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state='{"trial_data": 5}'),
        kind=VERDICT,
    ),
    Case(
        "teardown: a trial without trial_id",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state=json.dumps({"trial_data": [[json.dumps({"status": "TERMINATED"}), "{}"]]})),
        kind=VERDICT,
    ),  # fmt: skip
    Case(
        "teardown: state a symlink loop",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        symlink_loop(STATE),
        kind=VERDICT,
    ),
    Case(
        "teardown: state missing",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*experiment_state",
        exp_with(state=None),
        kind=VERDICT,
    ),
    Case(
        "teardown: snapshot []",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*checkpoint_manager_snapshot\.json",
        exp_with(snapshot="[]"),
        kind=VERDICT,
    ),
    Case(
        "teardown: snapshot truncated",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*checkpoint_manager_snapshot\.json",
        exp_with(snapshot='{"checkpoint_results": [{"checkpoint_dir'),
        kind=VERDICT,
    ),
    Case(
        "teardown: snapshot results a string",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*checkpoint_manager_snapshot\.json",
        exp_with(snapshot='{"checkpoint_results": "x", "latest_checkpoint_result": 5}'),
        kind=VERDICT,
    ),
    Case(
        "teardown: run folder a symlink loop",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*exp",
        symlink_loop("RUN"),
        kind=VERDICT,
    ),
    Case(
        "teardown: driver.json pid abc",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*driver\.json",
        exp_with(driver='{"pid": "abc"}', exit=None),
        kind=VERDICT,
    ),
    Case(
        "teardown: driver.json []",
        TEARDOWN,
        14,
        r"^teardown_unsafe .*driver\.json",
        exp_with(driver="[]", exit=None),
        kind=VERDICT,
    ),
    Case(
        "teardown: one bad among good",
        (
            "check",
            "--teardown",
            "--experiment",
            "{tmp}/store/good",
            "--experiment",
            "{tmp}/store/bad",
        ),
        14,
        r"^teardown_unsafe .*bad.*experiment_state",
        good_and_bad,
        kind=VERDICT,
    ),
    Case(
        "teardown: missing folder",
        ("check", "--teardown", "--experiment", "{tmp}/absent"),
        2,
        r"--experiment .*absent",
    ),
    Case("teardown: nothing to check", ("check", "--teardown"), 2, r"--experiment"),
    # --- status: a bad file is a warning naming it; the rest is still shown -------------
    Case(
        "status: state truncated",
        STATUS,
        0,
        r"warning: .*experiment_state",
        exp_with(state='{"trial_data": [["{\\"trial_id', trials=None),
        kind=WARNING,
    ),
    Case(
        "status: state []",
        STATUS,
        0,
        r"warning: .*experiment_state",
        exp_with(state="[]", trials=None),
        kind=WARNING,
    ),
    Case(
        "status: state a string",
        STATUS,
        0,
        r"warning: .*experiment_state",
        exp_with(state='"abc"', trials=None),
        kind=WARNING,
    ),
    Case(
        "status: trial meta not JSON",
        STATUS,
        0,
        r"warning: .*experiment_state",
        exp_with(state=json.dumps({"trial_data": [["{", "{"]]}), trials=None),
        kind=WARNING,
    ),
    Case(
        "status: trials.json []",
        STATUS,
        0,
        r"warning: .*trials\.json",
        exp_with(trials="[]"),
        kind=WARNING,
    ),
    Case(
        "status: trials.json rows a string",
        STATUS,
        0,
        r"warning: .*trials\.json",
        exp_with(trials='{"trials": "x"}'),
        kind=WARNING,
    ),
    Case(
        "status: trials.json row missing keys",
        STATUS,
        0,
        r"warning: .*trials\.json",
        exp_with(trials='{"trials": [{"foo": 1}]}'),
        kind=WARNING,
    ),
    Case(
        "status: trials/index.json a string",
        STATUS,
        0,
        r"warning: .*trials/index\.json",
        exp_with(trials=None, index='"abc"'),
        kind=WARNING,
    ),
    Case(
        "status: trials/0.json row missing keys",
        STATUS,
        0,
        r"warning: .*trials/0\.json",
        exp_with(
            trials=None,
            index='{"generation": "ab", "segments": [1]}',
            segment='{"generation": "ab", "version": 1, "trials": [{"foo": 1}]}',
        ),
        kind=WARNING,
    ),
    Case(
        "status: trials/0.json missing",
        STATUS,
        0,
        r"warning: .*trials/0\.json: missing",
        exp_with(trials=None, index='{"generation": "ab", "segments": [1]}'),
        kind=WARNING,
    ),
    Case(
        "status: driver.json pid abc",
        STATUS,
        0,
        r"warning: .*driver\.json",
        exp_with(driver='{"pid": "abc"}', exit=None),
        kind=WARNING,
    ),
    Case(
        "status: driver.json a string",
        STATUS,
        0,
        r"warning: .*driver\.json",
        exp_with(driver='"abc"', exit=None),
        kind=WARNING,
    ),
    Case(
        "status: driver.json without pid",
        STATUS,
        0,
        r"warning: .*driver\.json",
        exp_with(driver='{"host": "h"}', exit=None),
        kind=WARNING,
    ),
    Case(
        "status: state a symlink loop",
        STATUS,
        0,
        r"warning: .*experiment_state",
        symlink_loop(STATE, ".raytop/trials.json"),
        kind=WARNING,
    ),
    Case(
        "status: one bad among good",
        ("status", "--experiment", "{tmp}/store/good", "--experiment", "{tmp}/store/bad"),
        0,
        r"warning: .*experiment_state",
        good_and_bad,
        kind=WARNING,
    ),
    # --- RAYTOP_HOME a file, unwritable, or holding malformed records -------------------
    Case(
        "RAYTOP_HOME a file: plan",
        PLAN,
        0,
        r"trial",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: status",
        STATUS,
        0,
        r"experiment exp",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: check --teardown",
        TEARDOWN,
        0,
        r"^safe to tear down",
        home_file,
        kind=VERDICT,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: stop",
        ("stop", "--yes"),
        2,
        r"0 experiments are running",
        home_file,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: down",
        ("down",),
        0,
        r"nothing to stop",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: attach the TUI",
        (),
        0,  # no terminal here: the status once, and how to get the TUI
        r"not a terminal",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME a file: run",
        ("run", "{tmp}/spec.toml", "--address", "127.0.0.1:1"),
        2,
        r"127\.0\.0\.1:1|home-file",
        home_file_only,
        env={"RAYTOP_HOME": "{tmp}/home-file"},
    ),
    Case(
        "RAYTOP_HOME unwritable: plan",
        PLAN,
        0,
        r"trial",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "/sys/raytop-home"},
    ),
    Case(
        "RAYTOP_HOME unwritable: status",
        STATUS,
        0,
        r"experiment exp",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "/sys/raytop-home"},
    ),
    Case(
        "RAYTOP_HOME unwritable: check --teardown",
        TEARDOWN,
        0,
        r"^safe to tear down",
        home_file,
        kind=VERDICT,
        env={"RAYTOP_HOME": "/sys/raytop-home"},
    ),
    Case(
        "RAYTOP_HOME unwritable: down",
        ("down",),
        0,
        r"nothing to stop",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "/sys/raytop-home"},
    ),
    Case(
        "RAYTOP_HOME under a file: status",
        STATUS,
        0,
        r"experiment exp",
        home_file,
        kind=OUTPUT,
        env={"RAYTOP_HOME": "{tmp}/home-file/sub"},
    ),
    Case(
        "experiments.json a dict",
        ("stop", "--yes"),
        2,
        r"0 experiments are running",
        home_json("experiments.json", '{{"a": 1}}'),
    ),
    Case(
        "experiments.json entries of the wrong shape",
        ("status",),
        0,
        r"experiments\.json",
        home_json("experiments.json", '["x", {{"name": 5}}]'),
        kind=WARNING,
    ),
    Case(
        "experiments.json truncated",
        ("status",),
        0,
        r"experiments\.json",
        home_json("experiments.json", '[{{"name": "exp", "pa'),
        kind=WARNING,
    ),
    Case(
        "themes: a user theme file of a wrong type",
        ("themes",),
        0,
        r"bad\.toml: dark: 'yes' is not a boolean",
        lambda tmp: user_theme(tmp, 'name = "bad"\nprimary = "#123456"\ndark = "yes"\n'),
        kind=WARNING,
        env={"XDG_CONFIG_HOME": "{tmp}/config"},
    ),
    Case(
        "themes: a user theme file of binary bytes",
        ("themes",),
        0,
        r"bad\.toml: unreadable",
        lambda tmp: user_theme(tmp, BINARY),
        kind=WARNING,
        env={"XDG_CONFIG_HOME": "{tmp}/config"},
    ),
    Case(
        "teardown: experiments.json truncated",
        ("check", "--teardown"),
        14,
        r"^teardown_unsafe .*experiments\.json",
        home_json("experiments.json", '[{{"name": "exp", "pa'),
        kind=VERDICT,
    ),
    Case(
        "teardown: one entry of experiments.json bad",
        ("check", "--teardown"),
        14,
        r"^teardown_unsafe .*experiments\.json",
        home_json("experiments.json", '[{{"name": 5}}]'),
        kind=VERDICT,
    ),
    # --- every read bounded: regular files only, capped, depth-limited -------------------
    Case(
        "spec a FIFO",
        ("plan", "{tmp}/fifo.toml", "--cluster", "{tmp}/nodes.toml"),
        2,
        r"fifo\.toml: not a regular file \(a FIFO\)",
        fifo_at("fifo.toml"),
        within_s=10,
    ),
    Case(
        "spec a FIFO (run)",
        ("run", "{tmp}/fifo.toml"),
        2,
        r"fifo\.toml: not a regular file \(a FIFO\)",
        fifo_at("fifo.toml"),
        within_s=10,
    ),
    Case(
        "NODES.toml a FIFO",
        ("plan", "{tmp}/spec.toml", "--cluster", "{tmp}/fifo.toml"),
        2,
        r"fifo\.toml: not a regular file \(a FIFO\)",
        fifo_at("fifo.toml"),
        within_s=10,
    ),
    Case(
        "spec /dev/zero",
        ("plan", "/dev/zero", "--cluster", "{tmp}/nodes.toml"),
        2,
        r"/dev/zero: not a regular file \(a character device\)",
        spec(),
        within_s=10,
    ),
    Case(
        "spec over 1 MiB",
        PLAN,
        2,
        r"spec\.toml: .* cap: not read",
        spec_bytes(b"# " + b"x" * 2**20 + b"\n" + SPEC.encode()),
    ),
    Case(
        "spec nested 20,000 deep", PLAN, 2, r"spec\.toml: nested too deep", deep_spec, within_s=10
    ),
    Case(
        "spec starting with a BOM (control)",
        PLAN,
        0,
        r"FITS",
        spec_bytes(b"\xef\xbb\xbf" + SPEC.encode()),
        kind=OUTPUT,
    ),
    Case(
        "resume: driver.json a FIFO",
        ("resume", E),
        2,
        r"driver\.json: not a regular file \(a FIFO\)",
        fifo_at("store/exp/.raytop/driver.json", exp_with()),
        within_s=10,
    ),
    Case(
        "resume: spec.toml linked to /dev/zero",
        ("resume", E),
        2,
        r"spec\.toml: not a regular file \(a character device\)",
        linked_to(".raytop/spec.toml", "/dev/zero"),
        within_s=10,
    ),
    Case(
        "resume: storage unreachable",
        ("resume", UNREACHABLE_S3),
        2,
        r"storage unreachable",
        within_s=30,
    ),
    Case("resume: a symlink loop", ("resume", "{tmp}/loop"), 2, r"loop", loop_folder),
    Case("stop: a symlink loop", ("stop", "{tmp}/loop", "--yes"), 2, r"loop", loop_folder),
    # --- teardown judges the folder it was given, on evidence found there ------------------
    Case(
        "teardown: an unfinished torch trial's run folder gone",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp trial a_00000: RUNNING, but its Train run folder is not on",
        unfinished_torch_trial(spec_copy=True),
        kind=VERDICT,
    ),
    Case(
        "teardown: an unfinished trial, nothing says torch or function",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp trial a_00000: RUNNING with no Train run folder",
        unfinished_torch_trial(spec_copy=False),
        kind=VERDICT,
    ),
    Case(
        "teardown: a trial id ../../etc",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp: trial id '\.\./\.\./etc' is not a plain name",
        trials_named("../../etc"),
        kind=VERDICT,
    ),
    Case(
        "teardown: driver.json names another folder",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp: .*driver\.json names another experiment folder",
        driver_names_another_folder,
        kind=VERDICT,
    ),
    Case(
        "teardown: an empty exit.json beside a live driver",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp: the Tune driver is running",
        live_driver_and_exit_json,
        kind=VERDICT,
    ),
    Case(
        "status: driver.json names another folder",
        STATUS,
        0,
        r"driver\.json names another experiment folder",
        driver_names_another_folder,
        kind=WARNING,
    ),
    # --- text from outside raytop: shown escaped, never interpreted (model.visible) ------
    Case(
        "status: an OSC 2 title and a cursor-up in a trial id",
        STATUS,
        0,
        r"a_00000\\x1b\]2;PWNED\\x07\\x1b\[1A",
        trials_named("a_00000\x1b]2;PWNED\x07\x1b[1A"),
        kind=OUTPUT,
    ),
    Case(
        "status: a newline in a trial id starts no line",
        STATUS,
        0,
        r"a_00000\\nsafe to tear down",
        trials_named("a_00000\nsafe to tear down: 1 experiment(s) complete on storage"),
        kind=OUTPUT,
    ),
    Case(
        "teardown: a newline in a trial id starts no line",
        TEARDOWN,
        14,
        r"^teardown_unsafe exp: trial id 'a_00000\\nsafe",
        trials_named("a_00000\nsafe to tear down: 1 experiment(s) complete on storage"),
        kind=VERDICT,
    ),
    Case(
        "status: a bidi override and a zero-width space in a trial id",
        STATUS,
        0,
        r"a_\\u202e00000\\u200b",
        trials_named("a_\u202e00000\u200b"),
        kind=OUTPUT,
    ),
    Case(
        "status: a lone surrogate in a trial id",
        STATUS,
        0,
        r"a_00000\\ud800",
        trials_named("a_00000\ud800"),
        kind=OUTPUT,
    ),
    Case(
        "status: a C1 CSI in a config value",
        STATUS,
        0,
        r"x=1\\x9b31m",
        trials_named(TRIAL_ID, config="1\x9b31m"),
        kind=OUTPUT,
    ),
    Case(
        "status --json: a metric of NaN",
        ("status", "--json", "--experiment", E),
        0,
        r'"score": null',
        trials_named(TRIAL_ID, score=float("nan")),
        kind=OUTPUT,
    ),
    Case(
        "status --json: a config value nested 900 deep",
        ("status", "--json", "--experiment", E),
        0,
        r"nested deeper than 32 levels",
        trials_named(TRIAL_ID, config=nested(900)),
        kind=OUTPUT,
    ),
    Case(
        "status: credentials in a --storage URI",
        ("status", *NO_CLUSTER, "--storage", SECRET_S3),
        0,
        r"--storage s3://\*\*\*@bucket",
        kind=WARNING,
    ),
    Case(
        "status: a secret_key in a --storage URI",
        ("status", *NO_CLUSTER, "--storage", SECRET_QUERY),
        0,
        r"secret_key=\*\*\*",
        kind=WARNING,
    ),
    Case(
        "teardown: credentials in an --experiment URI",
        ("check", "--teardown", "--experiment", SECRET_S3),
        14,
        r"s3://\*\*\*@bucket|\*\*\*@bucket",
        kind=VERDICT,
    ),
    Case(
        "resume: credentials in the URI",
        ("resume", SECRET_S3),
        2,
        r"\*\*\*@bucket",
    ),
]


# ----------------------------------------------------------------------------- running


def run_case(case: Case, base: Path) -> Outcome:
    number = [c.id for c in CASES].index(case.id)
    tmp = base / f"{number:03d}-{re.sub(r'[^A-Za-z0-9]+', '-', case.id).strip('-')}"
    tmp.mkdir(parents=True)
    (tmp / "raytmp").mkdir()
    procs = (case.setup(tmp) if case.setup else None) or []
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAYTOP_READ_ONLY",
                                                             "RAYTOP_DEBUG")}  # fmt: skip
    env.update(RAYTOP_HOME=str(tmp / "home"), RAY_TMPDIR=str(tmp / "raytmp"))
    env.update({k: v.format(tmp=tmp) for k, v in case.env.items()})
    argv = [str(RAYTOP), *(a.format(tmp=tmp) for a in case.argv)]
    started = time.monotonic()
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=CASE_TIMEOUT_S,
                                env=env, cwd=tmp, stdin=subprocess.DEVNULL)  # fmt: skip
        code, out, err = result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = -1, str(exc.stdout or ""), f"timed out after {CASE_TIMEOUT_S} s"
    finally:
        signalled = [proc.pid for proc in procs if proc.poll() is not None]
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
    return Outcome(case, code, out, err, time.monotonic() - started, tmp, signalled)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    base = tmp_path_factory.mktemp("bad_input")
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = pool.map(lambda case: run_case(case, base), CASES)
        return {o.case.id: o for o in done}


def test_the_battery_is_big_enough():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_bad_input(outcomes, case_id):
    outcome = outcomes[case_id]
    problems = outcome.problems()
    assert not problems, (
        f"{case_id}: {'; '.join(problems)}\n"
        f"exit {outcome.code}\nstdout: {outcome.stdout[-1500:]}\nstderr: {outcome.stderr[-1500:]}"
    )


def table(outcomes: dict[str, Outcome]) -> str:
    rows = ["| # | case | command | exit | the line printed |", "|---|---|---|---|---|"]
    chosen = [outcomes[c.id] for c in CASES]
    rows += [o.row(i) for i, o in enumerate(chosen, 1)]
    return "\n".join(rows)


def test_reliability_table_is_current(outcomes):
    doc = DOC.read_text()
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    if os.environ.get("RAYTOP_WRITE_RELIABILITY") == "1":
        DOC.write_text(f"{head}{START}\n{table(outcomes)}\n{END}{tail}")
        return
    current, produced = rest.split(END, 1)[0].strip(), table(outcomes)
    diff = difflib.unified_diff(current.splitlines(), produced.splitlines(), lineterm="", n=0)
    assert current == produced, (
        "docs/RELIABILITY.md's bad-input table differs from what the cases print "
        "(RAYTOP_WRITE_RELIABILITY=1 .venv/bin/pytest tests/integration/test_bad_input_table.py "
        "rewrites it):\n" + "\n".join(list(diff)[2:40])
    )
