"""The command line's edge (``faces.output``): raytop writes to the terminal in one
module, and what it writes is checked on its bytes, with no cluster: no control
sequence from a folder reaches the terminal, no credential is printed, JSON is strict.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import raytop

SRC = Path(raytop.__file__).parent
# The writes allowed outside ``faces/output.py``, each with its reason.
ALLOWED_WRITERS = {
    # The detached driver's one summary line goes to its own log file, not a terminal,
    # and says only numbers.
    "launch/driver.py": "print(",
    # Progress draws with \r and \n of its own; every text it is given is made visible
    # where it comes in (ProgressLine.__call__, waiting, finished).
    "faces/progress.py": "self.stream.write(",
}
WRITERS = re.compile(r"\bclick\.(?:echo|secho|confirm|prompt)\(|\bprint\(|\.write\(")
STATE = "experiment_state-2026-01-01_00-00-00.json"


def test_only_the_output_module_writes_to_the_terminal():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "faces/output.py" or rel.startswith("tui/"):
            continue  # the TUI writes through Textual (tests/tui/test_hostile_text.py)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for match in WRITERS.finditer(code):
                if ALLOWED_WRITERS.get(rel, "\0") in code:
                    continue
                if match.group(0) == ".write(" and not re.search(r"stream|sys\.std", code):
                    continue  # files and pipes (f.write, proc.stdin.write) are not the terminal
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []


def raytop_cli(*args: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "RAYTOP_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "raytop", *args], capture_output=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def tune_state(folder: Path, *trials: tuple[dict, dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [[json.dumps(trial), json.dumps({"last_result": result})] for trial, result in trials]
    (folder / STATE).write_text(json.dumps({"trial_data": rows}))


def printable(raw: bytes) -> list[str]:
    """Every character of ``raw`` that is not printable (the line ends aside)."""
    text = raw.decode("utf-8")
    return sorted({repr(c) for c in text if c != "\n" and not c.isprintable()})


def test_a_hostile_trial_id_and_config_print_escaped(tmp_path):
    """The issue's reproduction: an OSC 2 and a cursor-up in a trial id, a colour in a
    config key, a bidi override, a lone surrogate: printed as escapes, never raw."""
    trial = {
        "trial_id": "aa_00000\x1b]2;PWNED\x1b\\\x1b[1A\nsafe to tear down: 1",
        "status": "TERMINATED\x9b",
        "config": {"k\x1b[31m": "v\u202e", "s": "aa_\ud800"},
    }
    tune_state(tmp_path / "store" / "exp\u200b", (trial, {"loss\x1b[2J": 1.0}))
    shown = raytop_cli("status", "--storage", str(tmp_path / "store"), "--address",
                       "127.0.0.1:1", home=tmp_path / "home")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert b"\x1b" not in shown.stdout + shown.stderr
    assert printable(shown.stdout) == [] and printable(shown.stderr) == []
    out = shown.stdout.decode()
    assert "aa_00000\\x1b]2;PWNED" in out and "\\nsafe to tear down: 1" in out
    assert not any(line.startswith("safe to tear down") for line in out.splitlines())
    assert "exp\\u200b" in out and "aa_\\ud800" in out


def test_json_is_strict_ascii_with_nan_as_null_and_deep_values_cut(tmp_path):
    deep: list = []
    inner = deep
    for _ in range(900):  # json.loads takes it; a repr or a recursive walk would not
        inner.append([])
        inner = inner[0]
    trials = [
        ({"trial_id": "t1", "status": "TERMINATED", "config": {"deep": deep}},
         {"loss": math.nan, "acc": math.inf}),
        ({"trial_id": "t2\x1b[1A", "status": "TERMINATED", "config": {}}, {"loss": 0.5}),
    ]  # fmt: skip
    tune_state(tmp_path / "store" / "exp", *trials)
    shown = raytop_cli("status", "--json", "--storage", str(tmp_path / "store"), "--address",
                       "127.0.0.1:1", home=tmp_path / "home")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.isascii() and b"\x1b" not in shown.stdout

    def bare(name: str) -> None:
        pytest.fail(f"bare {name} in the JSON")

    data = json.loads(shown.stdout, parse_constant=bare)
    (experiment,) = data["experiments"]
    t1 = next(t for t in experiment["trials"] if t["trial_id"] == "t1")
    assert t1["metrics"]["loss"] is None and t1["metrics"]["acc"] is None
    assert data["non_finite"]["count"] == 2
    at = f"/experiments/0/trials/{experiment['trials'].index(t1)}/metrics"
    assert sorted(data["non_finite"]["paths"]) == [f"{at}/acc", f"{at}/loss"]
    assert "nested deeper than" in json.dumps(t1["config"])
    text = raytop_cli("status", "--storage", str(tmp_path / "store"), "--address",
                      "127.0.0.1:1", home=tmp_path / "home")  # fmt: skip
    assert text.returncode == 0 and b"internal error" not in text.stderr


SECRET_URIS = [
    "s3://AKIAEXAMPLE:SECRETKEY@bucket/p?endpoint_override=127.0.0.1:1&scheme=http",
    "s3://bucket/p?endpoint_override=127.0.0.1:1&scheme=http&access_key=AKIAEXAMPLE"
    "&secret_key=SECRETKEY&session_token=SECRETKEY",
]


@pytest.mark.waits  # the userinfo cases wait ~6 s a read for S3 retries
@pytest.mark.parametrize("uri", SECRET_URIS, ids=["userinfo", "query"])
@pytest.mark.parametrize(
    "command",
    [
        ("status", "--address", "127.0.0.1:1", "--storage"),
        ("status", "--json", "--address", "127.0.0.1:1", "--storage"),
        ("check", "--teardown", "--experiment"),
        ("resume",),
    ],
    ids=["status", "json", "teardown", "resume"],
)
def test_no_credential_is_ever_printed(tmp_path, uri, command):
    shown = raytop_cli(*command, uri, home=tmp_path / "home")
    said = shown.stdout + shown.stderr
    assert b"SECRETKEY" not in said and b"AKIAEXAMPLE" not in said, said.decode()
    assert b"***" in said, said.decode()
    assert b"internal error" not in said and b"Traceback" not in said
