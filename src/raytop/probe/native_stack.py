"""A rank's native stack: py-spy run by the probe's thread on the probe's own process.

A rank stuck in C code (a NCCL or gloo wait, a C++ dataloader, a lock inside a library)
shows a Python stack whose innermost frame is only the call into C. ``py-spy dump
--native --pid <own pid>`` reads the process from outside (ptrace) and merges its C/C++
frames with the Python ones, so the hang's real place shows.

Run inside a Train worker, from the probe's thread, as a child process: with a timeout
(``NATIVE_TIMEOUT_S``), its output capped (``MAX_NATIVE_CHARS``, the train loop's thread
first), and never raising: every outcome is text, the stack or one line saying why there
is none (py-spy not on the image, ptrace refused, too slow). py-spy pauses the process
while it reads it (``--native`` cannot be ``--nonblocking``): a fraction of a second, once
per request that asked for it.

Under Yama (``kernel.yama.ptrace_scope`` = 1) a process may be traced only by its
ancestors, and py-spy is our child: it starts as ``sh`` waiting for one line, the probe
names that pid its tracer (``prctl(PR_SET_PTRACER)``), then ``sh`` execs py-spy under the
same pid. Without Yama, or as root with CAP_SYS_PTRACE, py-spy starts directly.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping

from raytop.wire.py_spy_binary import py_spy_on, yama_scope

NATIVE_TIMEOUT_S = 5.0
MAX_NATIVE_CHARS = 20_000
PY_SPY_ENV = "RAYTOP_PY_SPY"  # names the py-spy binary on the workers (else PATH, venv bin)
NOT_INSTALLED = "py-spy not installed on the workers (pip install py-spy on the image)"
PR_SET_PTRACER = 0x59616D61
_THREAD_LINE = re.compile(r"^Thread (\d+)\b")
_ONE_AT_A_TIME = threading.Lock()  # two py-spy runs on one process only slow both


def find_py_spy(environ: Mapping[str, str] | None = None) -> str | None:
    """The py-spy binary this worker can run: ``$RAYTOP_PY_SPY`` when set (a path that is
    not an executable file means none), else the one on ``PATH``, else the one beside
    this Python (a venv's ``bin``, often not on a Ray worker's ``PATH``)."""
    env = os.environ if environ is None else environ
    named = env.get(PY_SPY_ENV)
    if named is not None:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    return py_spy_on(env.get("PATH"))


def _libc_prctl(option: int, arg: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0))


def native_stack(
    pid: int | None = None,
    *,
    train_native_id: int | None = None,
    binary: str | None = None,
    timeout_s: float = NATIVE_TIMEOUT_S,
    max_chars: int = MAX_NATIVE_CHARS,
    scope: int | None = None,
    prctl: Callable[[int, int], int] = _libc_prctl,
) -> str:
    """The native stack of ``pid`` (this process by default), or one line saying why not.

    ``train_native_id``: the OS thread id of the train loop, whose block comes first.
    ``binary``, ``scope`` and ``prctl`` stand in for the worker's own (tests)."""
    try:
        binary = binary or find_py_spy()
        if binary is None:
            return NOT_INSTALLED
        if not _ONE_AT_A_TIME.acquire(blocking=False):
            return "another native stack capture is still running in this rank; ask again"
        try:
            scope = yama_scope() if scope is None else scope
            code, out, err = _run(binary, pid or os.getpid(), timeout_s, max_chars, scope, prctl)
        finally:
            _ONE_AT_A_TIME.release()
    except FileNotFoundError:
        return NOT_INSTALLED
    except Exception as exc:  # never raise into the probe
        return f"native stack: {type(exc).__name__}: {_first_line(str(exc))}"
    if code is None:
        return f"py-spy did not finish within {timeout_s:g} s (stopped): no native stack"
    if code != 0 or not out.strip():
        return _failure(code, err or out, scope)
    return order_threads(out, train_native_id, max_chars)


def _run(binary, pid, timeout_s, max_chars, scope, prctl) -> tuple[int | None, str, str]:
    """Run py-spy on ``pid``; (exit code or None on timeout, stdout, stderr), each read up
    to a cap from a temporary file (a pipe would need a reader thread to never block)."""
    argv = [binary, "dump", "--native", "--pid", str(pid)]
    granted = False
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if scope == 1 and shutil.which("sh"):  # Yama: only ancestors may trace; name it first
            proc = subprocess.Popen(["sh", "-c", 'read _ && exec "$@"', "sh", *argv],
                                    stdin=subprocess.PIPE, stdout=out, stderr=err)  # fmt: skip
            try:
                granted = prctl(PR_SET_PTRACER, proc.pid) == 0
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
                proc.stdin.close()
            except Exception:
                proc.kill()
                proc.wait(timeout=1.0)
                raise
        else:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
            code = None
        finally:
            if granted:
                with contextlib.suppress(Exception):
                    prctl(PR_SET_PTRACER, 0)  # no tracer named any more
        return code, _read(out, max_chars * 4), _read(err, 4_000)


def _read(f, cap: int) -> str:
    f.seek(0)
    return f.read(cap).decode("utf-8", errors="replace")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "no output")[:200]


def _failure(code: int | None, text: str, scope: int | None) -> str:
    """py-spy's own reason, in one line; a ptrace refusal says what would allow it."""
    reason = _first_line(text).removeprefix("Error: ")
    lowered = text.lower()
    if any(word in lowered for word in ("permission", "ptrace", "not permitted", "eperm")):
        hint = "the container needs CAP_SYS_PTRACE"
        if scope is not None and scope >= 2:
            hint += f" (kernel.yama.ptrace_scope = {scope}: only an admin may attach)"
        return f"py-spy may not attach to the worker (ptrace refused: {reason}); {hint}"
    return f"py-spy failed (exit {code}): {reason}"


def order_threads(dump: str, train_native_id: int | None, max_chars: int) -> str:
    """py-spy's dump with the train loop thread's block first (the one that matters), the
    other threads after it (raytop's own last), cut at ``max_chars`` on a thread boundary
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
    tid = str(train_native_id)

    def rank(block: list[str]) -> int:
        """The train loop's thread first, raytop's own threads (the probe, this capture)
        last: they are only waiting for py-spy."""
        if _THREAD_LINE.match(block[0]).group(1) == tid:
            return 0
        return 2 if '"raytop-' in block[0] else 1

    blocks.sort(key=rank)  # stable: py-spy's order otherwise
    text = "\n".join(header)
    room = max_chars - 80  # the note that says how many threads were left out
    for i, block in enumerate(blocks):
        piece = "\n".join(block)
        if len(text) + len(piece) + 1 > (room if i < len(blocks) - 1 else max_chars):
            if i == 0:  # even the first thread is too long: its innermost frames
                return (text + "\n" + piece)[:max_chars]
            note = f"({len(blocks) - i} more threads not shown: over {max_chars} characters)"
            return text + "\n" + note
        text = text + "\n" + piece if text else piece
    return text
