"""``check --teardown`` judges the folder it was given, on evidence found there: a
driver.json naming another folder, an unfinished torch trial whose run folder is gone and a
trial id that is not a plain name are never "safe". Each reproduction runs the command as a
user does (no cluster), and ``status`` on the same folder shows that folder, without
crashing. (An exit.json beside a driver proven live: ``test_exit_record.py``.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from raytop.diagnose import teardown
from raytop.pipeline.teardown import storage_findings
from raytop.sources.tune_dir import launched_kind
from tests.unit.teardown_folders import (
    STATE,
    committed_run,
    dead_pid,
    driver_record,
    folder,
    no_cluster_cli,
    shown,
    spec_copy,
    teardown_lines,
)


@pytest.fixture
def cli(tmp_path, monkeypatch):
    return no_cluster_cli(tmp_path, monkeypatch)


def reasons(path: Path) -> list[str]:
    findings, _ = storage_findings([(str(path), None)])
    return [f.evidence["reason"] for f in findings]


# -- the reproductions -----------------------------------------------------------------


def test_a_running_torch_trial_without_its_run_folder_is_unsafe(tmp_path, cli):
    """Folder A: t1 RUNNING, no train_runs/, the spec copy says torch (was: safe)."""
    a = folder(tmp_path, "A", ("t1", "RUNNING"))
    spec_copy(a)
    code, lines = teardown_lines(cli, a)
    assert code == 14
    assert lines == [
        f"teardown_unsafe A trial t1: RUNNING, but its Train run folder is not on storage "
        f'({a}/.raytop/spec.toml says [trainable] kind = "torch"): its checkpoints are not there'
    ]
    shown(cli, a)


def test_trial_ids_that_are_not_plain_names_are_unsafe_and_never_read(tmp_path, cli):
    """Folder B: ``../../etc`` and ``aa_\\ud800`` (was: "safe", and an internal error)."""
    b = folder(tmp_path, "B", ("../../etc", "TERMINATED"), ("aa_\ud800", "TERMINATED"))
    assert "\\ud800" in (b / STATE).read_text()
    code, lines = teardown_lines(cli, b)
    assert code == 14
    assert lines == [
        f"teardown_unsafe B: trial id {shown_id} is not a plain name (letters, digits, '_', "
        "'-', '.'): its checkpoints are not looked for, so cannot tell whether they are on "
        "storage"
        for shown_id in ("'../../etc'", "'aa_\\ud800'")
    ]
    (warning,) = shown(cli, b)["warnings"]
    assert warning == (
        f"{STATE}: trial id '../../etc' (and 1 more) is not a plain name (letters, digits, "
        "'_', '-', '.'): its Train run's checkpoints are not looked for"
    )


def test_a_driver_record_naming_another_folder_is_no_evidence(tmp_path, cli):
    """Folder C: driver.json (a dead pid) names another, complete folder (was: that folder
    was judged, and shown, in C's place)."""
    other = folder(tmp_path, "other", ("t1", "TERMINATED"))
    committed_run(other, "t1")
    c = folder(tmp_path, "C", ("t1", "RUNNING"))
    driver_record(spec_copy(c), dead_pid(), 1.0, experiment_path=str(other),
                  experiment_name="other")  # fmt: skip
    code, lines = teardown_lines(cli, c)
    record = f"{c}/.raytop/driver.json names another experiment folder, '{other}', not this " \
             f"folder ({c}): no record of its driver"  # fmt: skip
    assert code == 14
    assert lines == [
        f"teardown_unsafe C: {record}: cannot tell whether that driver has stopped; make "
        "sure it has, then fix or remove that record",
        "teardown_unsafe C trial t1: RUNNING, but its Train run folder is not on storage "
        f'({c}/.raytop/spec.toml says [trainable] kind = "torch"): its checkpoints are not there',
    ]
    experiment = shown(cli, c)
    assert experiment["warnings"] == [record]
    assert experiment["driver_alive"] is None  # its pid being gone says nothing about C


# -- what the trials are -----------------------------------------------------------------


def test_an_unfinished_trial_needs_its_run_folder_unless_it_is_known_not_to_have_one(tmp_path):
    """Positive evidence of torch (the spec copy, a train_runs/ folder) makes a missing run
    folder unsafe; none at all is "cannot tell"; a function spec, a finished trial, one
    that errored before its first result and one never started are "safe"."""
    cases = {
        "no evidence": (None, False, "RUNNING", 1, [teardown.TRAINABLE_UNKNOWN]),
        "spec torch": ("torch", False, "PAUSED", 1, [teardown.RUN_MISSING]),
        "train_runs of another trial": (None, True, "RUNNING", 1, [teardown.RUN_MISSING]),
        "spec function, train_runs": ("function", True, "RUNNING", 1, [teardown.RUN_MISSING]),
        "retried, pending again": ("torch", False, "PENDING", 3, [teardown.RUN_MISSING]),
        "spec function": ("function", False, "RUNNING", 1, []),
        "finished, no evidence": (None, False, "TERMINATED", 1, []),
        "errored after a result, spec torch": ("torch", False, "ERROR", 1, [teardown.RUN_MISSING]),
        "errored before any result": ("torch", False, "ERROR", 0, []),
        "never started": ("torch", False, "PENDING", 0, []),
    }
    for i, (case, (kind, runs, status, iterations, expected)) in enumerate(cases.items()):
        trials = [("t1", status)] + ([("t0", "TERMINATED")] if runs else [])
        path = folder(tmp_path, f"exp{i}", *trials, iterations=iterations)
        if kind:
            spec_copy(path, kind)
        if runs:
            committed_run(path, "t0")
        assert reasons(path) == expected, case


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe", b"[trainable\nkind = ", b"x = " + b"[" * 5000, b"[trainable]\nkind = 3",
     b'[trainable]\nkind = "jax"', b"a = 1\n" * 200_000],
    ids=["binary", "torn", "nested", "kind a number", "kind unknown", "over the cap"],
)  # fmt: skip
def test_a_spec_copy_that_cannot_be_used_is_no_evidence(tmp_path, content):
    path = folder(tmp_path, "exp", ("t1", "RUNNING"))
    raytop_dir = spec_copy(path)
    (raytop_dir / "spec.toml").write_bytes(content)
    kind, problem = launched_kind(raytop_dir)
    assert kind is None and problem and problem.startswith(f"{raytop_dir}/spec.toml")
    findings, _ = storage_findings([(str(path), None)])
    (finding,) = findings
    assert finding.evidence["reason"] == teardown.TRAINABLE_UNKNOWN
    assert problem in finding.message


def test_a_spec_copy_that_is_a_fifo_is_refused_unread(tmp_path):
    path = folder(tmp_path, "exp", ("t1", "RUNNING"))
    raytop_dir = spec_copy(path)
    (raytop_dir / "spec.toml").unlink()
    os.mkfifo(raytop_dir / "spec.toml")
    assert launched_kind(raytop_dir) == (
        None, f"{raytop_dir}/spec.toml: not a regular file: not read"
    )  # fmt: skip
    findings, _ = storage_findings([(str(path), None)])
    assert [f.message for f in findings] == [
        "exp trial t1: RUNNING with no Train run folder, and nothing says whether it is a "
        f"Train trial ({raytop_dir}/spec.toml: not a regular file: not read; no train_runs/ "
        "folder): cannot tell whether its checkpoints are on storage"
    ]
