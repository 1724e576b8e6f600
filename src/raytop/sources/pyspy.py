"""The stacks of a rank with no probe, read from outside its process: py-spy.

A rank with raytop's probe answers a stacks request itself. A rank without one cannot, but
its Python stack is still readable from outside, by ``py-spy dump --pid P`` (``--native``:
C/C++ frames merged in), which ``ray[default]`` installs beside Ray (Ray 2.58's metadata:
``py-spy>=0.2.0; extra == "default"``), and which Ray's own dashboard runs for its "Stack
Trace" button (``dashboard/modules/reporter/profile_manager.py``, found with
``shutil.which("py-spy")``).

- **On raytop's node** (the worker's node address is one of this host's:
  ``sources.host``), raytop runs py-spy itself (``local_dump``): the binary on ``PATH``,
  else beside raytop's Python (a venv's ``bin``, often not on ``PATH``); only on a pid this
  host shows as a Ray worker (its process title starts ``ray::``, as Ray's workers set it):
  a pid of another PID namespace (raytop in a sidecar container) is never attached to.
- **On another node**, Ray's dashboard asks that node's agent to run py-spy
  (``remote_dump``: ``GET /worker/traceback``), which it does only when the head was
  started with ``RAY_DASHBOARD_ENABLE_PROFILING=1`` (off by default, ``ray_constants``);
  otherwise it answers HTTP 403, said in one line.

py-spy attaches with ptrace and pauses the process while it reads it (a fraction of a
second; ``--nonblocking`` would not pause but may read a torn stack, and cannot take native
frames): nothing else is signalled, written or changed. Where the OS refuses the attach
(another user's process without ``CAP_SYS_PTRACE``; Yama's ``ptrace_scope`` ≥ 1 lets only
ancestors attach, and raytop is not the workers' ancestor), the answer is py-spy's reason in
one line with what would allow it. Every outcome is a ``StackAnswer``; nothing raises.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
from typing import Protocol, runtime_checkable

import psutil

from raytop.model import untrusted
from raytop.model.stacks import STACK_BY_DASHBOARD, STACK_BY_PY_SPY, StackAnswer
from raytop.wire.dashboard import DashboardUnreachable
from raytop.wire.py_spy_binary import py_spy_on, yama_scope

DUMP_TIMEOUT_S = 5.0
MAX_DUMP_CHARS = 20_000
RAY_WORKER_TITLE = "ray::"  # Ray's workers set their process title to ray::<actor>.<method>
TRAIN_THREAD = '"TrainingThread('  # Train V2 runs the train loop in this thread (thread_runner.py)
NOT_INSTALLED = (
    "py-spy is not installed where raytop runs (pip install py-spy; ray[default] has it)"
)
PROFILING_DISABLED = (
    "Ray's dashboard takes no stacks: profiling is disabled on this cluster "
    "(RAY_DASHBOARD_ENABLE_PROFILING=1 in the head's environment enables it)"
)
NOT_HERE = "not on raytop's node, and "
_THREAD_LINE = re.compile(r"^Thread \S+")
_NODE_ID = re.compile(r"[0-9a-f]{1,128}")


@runtime_checkable
class Tracebacks(Protocol):
    """Ray's dashboard, as ``wire.dashboard.DashboardClient``: ``traceback`` is the body of
    ``GET /worker/traceback``, or ``DashboardUnreachable`` with the status it answered."""

    def traceback(self, pid: int, node_id: str, native: bool, deadline_s: float) -> bytes: ...


def find_py_spy(executable: str | None = None) -> str | None:
    """The py-spy raytop can run: on ``PATH`` (as Ray finds it), else beside this Python."""
    return py_spy_on(executable=executable)


def not_a_worker(pid: int) -> str | None:
    """None when ``pid`` is a Ray worker process this host shows; else why not, in one
    line. The actor table's pid is the node's: a pid here means the same process only
    when raytop shares the node's PID namespace, which its title confirms."""
    try:
        title = psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:
        return (
            f"pid {pid} is not running on this host (the worker is gone, or raytop runs "
            "in another PID namespace than the node's)"
        )
    except (psutil.AccessDenied, psutil.Error, OSError) as exc:
        return f"pid {pid}: its process cannot be read here ({type(exc).__name__})"
    if not title or not title[0].startswith(RAY_WORKER_TITLE):
        return (
            f"pid {pid} on this host is not a Ray worker: raytop sees another PID namespace "
            "than the node's (run it in the Ray container, or share the pod's process "
            "namespace); not attached to"
        )
    return None


def local_dump(
    pid: int,
    *,
    native: bool = False,
    binary: str | None = None,
    timeout_s: float = DUMP_TIMEOUT_S,
    max_chars: int = MAX_DUMP_CHARS,
    check_worker: bool = True,
) -> StackAnswer:
    """``py-spy dump --pid pid`` (``--native``) run by raytop: the dump, its train loop's
    thread first, or one line why not. ``check_worker``: first make sure ``pid`` is a Ray
    worker this host shows (tests of py-spy itself turn it off)."""
    try:
        problem = not_a_worker(pid) if check_worker else None
        if problem is not None:
            return StackAnswer(STACK_BY_PY_SPY, problem=problem)
        binary = binary or find_py_spy()
        if binary is None:
            return StackAnswer(STACK_BY_PY_SPY, problem=NOT_INSTALLED)
        argv = [binary, "dump", "--pid", str(pid)] + (["--native"] if native else [])
        code, out, err = _run(argv, timeout_s, max_chars)
    except Exception as exc:  # never raise into a stacks request
        return StackAnswer(STACK_BY_PY_SPY, problem=f"py-spy: {type(exc).__name__}: {exc}")
    if code is None:
        return StackAnswer(
            STACK_BY_PY_SPY, problem=f"py-spy did not finish within {timeout_s:g} s (stopped)"
        )
    if code != 0 or not out.strip():
        return StackAnswer(STACK_BY_PY_SPY, problem=_failure(pid, code, err or out))
    return StackAnswer(STACK_BY_PY_SPY, text=order_threads(out, max_chars))


def _run(argv: list[str], timeout_s: float, max_chars: int) -> tuple[int | None, str, str]:
    """(exit code, or None when killed at ``timeout_s``; stdout; stderr), each read up to
    a cap from a temporary file (a pipe would need a reader thread to never block)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()  # the kernel detaches a dead tracer: the worker runs on
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
            code = None
        return code, _read(out, max_chars * 4), _read(err, 4_000)


def _read(f, cap: int) -> str:
    f.seek(0)
    return f.read(cap).decode("utf-8", errors="replace")


def error_line(text: str) -> str:
    """py-spy's error in one line: ``Error: <what>`` and its first cause
    (``Caused by: 0: <why>``), without its backtrace; else its first line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith("Error: ")), None)
    if error is None:
        return (lines[0] if lines else "no output")[:300]
    reason = error.removeprefix("Error: ")
    cause = next((line for line in lines if re.match(r"0: ", line)), None)
    if cause is not None and cause[3:] not in reason:
        reason += f" ({cause[3:]})"
    return reason[:300]


def _failure(pid: int, code: int | None, text: str, scope: int | None = None) -> str:
    """py-spy's own reason in one line; a refused attach says what would allow it."""
    reason = error_line(text)
    lowered = text.lower()
    if not any(word in lowered for word in ("permission", "not permitted", "os error 1)")):
        return f"py-spy failed on pid {pid} (exit {code}): {reason}"
    scope = yama_scope() if scope is None else scope
    allow = "run raytop as the workers' user or as root, with CAP_SYS_PTRACE"
    if scope == 1:
        allow += " (kernel.yama.ptrace_scope = 1: only a process's ancestors may attach "
        allow += "without it)"
    elif scope is not None and scope >= 2:
        allow = f"kernel.yama.ptrace_scope = {scope}: only an admin may attach"
    return f"the OS refused py-spy on pid {pid} (ptrace: {reason}); {allow}"


def remote_dump(
    dashboard: Tracebacks | None,
    pid: int,
    node_id: str,
    *,
    native: bool = False,
    deadline_s: float = DUMP_TIMEOUT_S,
    max_chars: int = MAX_DUMP_CHARS,
) -> StackAnswer:
    """``pid`` on another node, by Ray's dashboard (py-spy run by that node's agent): the
    dump, or one line why not (no dashboard, profiling disabled, py-spy failed there)."""
    where = NOT_HERE
    if dashboard is None:
        return StackAnswer(STACK_BY_DASHBOARD, problem=where + "no Ray dashboard to ask")
    if not _NODE_ID.fullmatch(node_id):
        return StackAnswer(STACK_BY_DASHBOARD, problem=f"node id {node_id!r} is not hex")
    try:
        body = dashboard.traceback(pid, node_id, native, deadline_s)
    except DashboardUnreachable as exc:
        if exc.status == 403:
            return StackAnswer(STACK_BY_DASHBOARD, problem=where + PROFILING_DISABLED)
        if exc.status == 500 and exc.detail:  # py-spy's failure, as the agent said it
            reason = error_line(exc.detail.partition("=== stderr ===")[2] or exc.detail)
            return StackAnswer(
                STACK_BY_DASHBOARD, problem=f"py-spy on the worker's node failed: {reason}"
            )
        return StackAnswer(STACK_BY_DASHBOARD, problem=f"{where}Ray's dashboard {exc}")
    except untrusted.Invalid as exc:
        return StackAnswer(STACK_BY_DASHBOARD, problem=f"Ray's dashboard's answer: {exc}")
    text = body.decode("utf-8", errors="replace")
    if not text.strip():
        return StackAnswer(STACK_BY_DASHBOARD, problem="Ray's dashboard answered no stack")
    return StackAnswer(STACK_BY_DASHBOARD, text=order_threads(text, max_chars))


def order_threads(dump: str, max_chars: int = MAX_DUMP_CHARS) -> str:
    """py-spy's dump with Train's train-loop thread first (the user's code is there), the
    other threads after it in py-spy's order, cut at ``max_chars`` on a thread boundary
    with a note."""
    header: list[str] = []
    blocks: list[list[str]] = []
    for line in dump.rstrip("\n").splitlines():
        if _THREAD_LINE.match(line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            header.append(line)
    blocks.sort(key=lambda block: TRAIN_THREAD not in block[0])  # stable
    text = "\n".join(header)
    for i, block in enumerate(blocks):
        piece = "\n".join(block)
        if len(text) + len(piece) + 1 > max_chars - 80:
            if i == 0:  # even the first thread is too long: its innermost frames
                return (text + "\n" + piece)[:max_chars]
            return (
                f"{text}\n({len(blocks) - i} more threads not shown: over {max_chars} characters)"
            )
        text = f"{text}\n{piece}" if text else piece
    return text
