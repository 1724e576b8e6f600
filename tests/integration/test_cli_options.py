"""The group's options mean the same before or after the command, for every command, and
read-only refuses every CLI entry of ``cli.READ_ONLY_REFUSES`` in both positions and
under RAYTOP_READ_ONLY=1. In-process (click's CliRunner): the address goes to the real
``resolve`` (127.0.0.1:1 refuses at once); the values a command hands on are recorded
where it hands them (the collector's ``Thresholds``, the TUI, the launch), which is the
only thing that is replaced. No Ray cluster is started."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import raytop.cli as cli
import raytop.launch.cluster
import raytop.model.thresholds
from raytop.cli import GROUP_OPTIONS, READ_ONLY_REFUSES, main
from raytop.diagnose.check import CLUSTER_UNREACHABLE

COMMANDS = ("", "run", "plan", "status", "check", "resume", "stop", "down", "themes")
POSITIONS = ("before", "after")
UNREACHABLE = "127.0.0.1:1"
TRIALS = [f"a91c3_{i:05d}" for i in range(7)]


@pytest.fixture
def where(tmp_path, monkeypatch) -> dict[str, Path]:
    """A spec, an experiment folder with seven trials (the probe's table), an empty
    RAYTOP_HOME; no RAY_ADDRESS or RAYTOP_READ_ONLY from the caller's shell."""
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    for name in ("RAY_ADDRESS", "RAYTOP_READ_ONLY", "RAYTOP_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    spec = tmp_path / "opts.toml"
    spec.write_text(
        '[experiment]\nname = "opts"\nstorage_path = "results"\n'
        '[trainable]\nkind = "function"\nentrypoint = "opts_train:train"\n'
    )
    (tmp_path / "opts_train.py").write_text("def train(config):\n    pass\n")  # preflight
    experiment = tmp_path / "results" / "lr_search"
    (experiment / ".raytop").mkdir(parents=True)
    rows = [{"trial_id": t, "status": "RUNNING"} for t in TRIALS]
    (experiment / ".raytop" / "trials.json").write_text(json.dumps({"trials": rows}))
    return {"spec": spec, "experiment": experiment}


def argv_of(command: str, where: dict[str, Path]) -> list[str]:
    """The least each command needs to get as far as using the group's options."""
    return {
        "": [],
        "run": ["run", str(where["spec"])],
        "plan": ["plan", str(where["spec"])],
        "status": ["status"],
        "check": ["check"],
        "resume": ["resume", str(where["experiment"]), "--yes"],
        "stop": ["stop", str(where["experiment"]), "--yes"],
        "down": ["down"],
        "themes": ["themes"],
    }[command]


def placements(commands) -> list:
    """(command, position) for each command in both positions, but the bare command
    (``raytop`` alone) only before: it has no command for an option to follow."""
    return [
        pytest.param(command, position, id=f"{command or 'bare'}-{position}")
        for command in commands
        for position in POSITIONS
        if command or position == "before"
    ]


def placed(position: str, command: str, where, option: list[str]) -> list[str]:
    args = argv_of(command, where)
    return option + args if position == "before" else args + option


def invoke(args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("raytop: error: ")
    return lines[0]


# How each command ends when no cluster is found (``no_cluster``) and nothing raytop started
# runs here, with the exit code documented for it (README "Exit codes", docs/schema.md; stop
# and down: docs/RELIABILITY.md cases 89 and 135): (code, on stdout, the stderr line).
WITHOUT_A_CLUSTER = {
    "plan": (0, "FITS", None),  # the spec's own [cluster] fits it
    "status": (0, "cluster DISCONNECTED", None),
    "check": (CLUSTER_UNREACHABLE, "cluster_unreachable", None),
    "stop": (2, None, "its driver is not running here; nothing to stop"),
    "down": (0, None, "raytop: no cluster started by raytop is recorded; nothing to stop"),
}


def assert_ends_as_without_a_cluster(command: str, result) -> None:
    """The command ends as it does without the option it was given: code, output, line."""
    code, out, err = WITHOUT_A_CLUSTER[command]
    assert result.exit_code == code, result.output
    assert (out in result.stdout) if out else (result.stdout == ""), result.stdout
    assert (result.stderr.strip().endswith(err)) if err else (result.stderr == ""), result.stderr
    assert len(result.stderr.strip().splitlines()) == (1 if err else 0), result.stderr


class Handed:
    """Records what commands hand on: the thresholds built, what the TUI is opened with,
    and the launch and resume calls (which then do nothing)."""

    def __init__(self, monkeypatch) -> None:
        self.stall: list[float] = []
        self.tui: list[tuple[float, bool]] = []
        self.launch: list[dict] = []
        real = raytop.model.thresholds.Thresholds
        given = real.given.__func__

        def recorded(cls, stall_after_s, **others):
            made = given(cls, stall_after_s, **others)
            self.stall.append(made.stall_after_s)
            return made

        # On the class itself: every command builds its thresholds with
        # ``Thresholds.given``, whatever module imported the name.
        monkeypatch.setattr(real, "given", classmethod(recorded))
        monkeypatch.setattr(cli, "_open_tui", lambda c, refresh, ro=False: self.tui.append(
            (refresh, ro)))  # fmt: skip
        monkeypatch.setattr(cli, "_launch_and_watch", self._launch)
        monkeypatch.setattr(cli, "_resume", self._resume)

    def _launch(self, run_spec, address, no_tui, force, refresh_s, stall_after, errored=None):
        self.launch.append({"address": address, "refresh_s": refresh_s, "stall": stall_after})

    def _resume(self, path, errored, yes, address, no_tui, refresh_s, stall_after):
        self.launch.append({"address": address, "refresh_s": refresh_s, "stall": stall_after})


@pytest.fixture
def no_cluster(monkeypatch) -> list[str | None]:
    """``resolve`` finds no cluster (and records the address it was asked for)."""
    asked: list[str | None] = []

    def resolve(address):
        asked.append(address)

    monkeypatch.setattr(raytop.launch.cluster, "resolve", resolve)
    return asked


# -- --address ---------------------------------------------------------------------------

CONNECTING = ("", "run", "plan", "status", "check")  # resolve the address first


@pytest.mark.parametrize(("command", "position"), placements(CONNECTING))
def test_address_reaches_every_command_that_connects(where, command, position) -> None:
    result = invoke(placed(position, command, where, ["--address", UNREACHABLE]))
    if command == "check":  # check's own code for an unreachable cluster, on stdout
        assert result.exit_code == CLUSTER_UNREACHABLE, result.output
        assert UNREACHABLE in result.stdout
        return
    assert result.exit_code == 2, result.output
    assert UNREACHABLE in one_line_error(result)


@pytest.mark.parametrize("position", POSITIONS)
def test_address_reaches_resume(where, monkeypatch, position) -> None:
    handed = Handed(monkeypatch)
    result = invoke(placed(position, "resume", where, ["--address", UNREACHABLE]))
    assert result.exit_code == 0, result.output
    assert handed.launch == [{"address": UNREACHABLE, "refresh_s": 0.25, "stall": None}]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("command", ("stop", "down"))
def test_address_is_accepted_where_it_means_nothing(where, command, position) -> None:
    """stop and down act on what raytop started on this machine: --address is ignored,
    each ends as it does with nothing of raytop's running here."""
    result = invoke(placed(position, command, where, ["--address", UNREACHABLE]))
    assert "--address" not in result.stderr
    assert UNREACHABLE not in result.stderr
    assert_ends_as_without_a_cluster(command, result)


def test_the_value_after_the_command_wins(where, no_cluster) -> None:
    invoke(["--address", "10.0.0.1:6379", "status", "--address", UNREACHABLE])
    assert no_cluster == [UNREACHABLE]


# -- --stall-after and --refresh ---------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "position"), placements(("", "status", "check", "run", "resume"))
)
def test_stall_after_reaches_the_command(where, monkeypatch, no_cluster, command, position):
    handed = Handed(monkeypatch)
    invoke(placed(position, command, where, ["--stall-after", "7.5"]))
    if command in ("run", "resume"):
        assert [h["stall"] for h in handed.launch] == [7.5]
    else:
        assert handed.stall == [7.5]


@pytest.mark.parametrize(("command", "position"), placements(("", "run", "resume")))
def test_refresh_reaches_the_command(where, monkeypatch, no_cluster, command, position):
    handed = Handed(monkeypatch)
    invoke(placed(position, command, where, ["--refresh", "1.5"]))
    if command == "":
        assert handed.tui == [(1.5, False)]
    else:
        assert [h["refresh_s"] for h in handed.launch] == [1.5]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("command", ("plan", "stop", "down", "status", "check"))
@pytest.mark.parametrize("option", (["--refresh", "2"], ["--stall-after", "3"]))
def test_an_option_a_command_does_not_use_is_accepted(
    where, monkeypatch, no_cluster, command, position, option
) -> None:
    Handed(monkeypatch)
    result = invoke(placed(position, command, where, option))
    assert "No such option" not in result.stderr
    assert "Invalid value" not in result.stderr
    assert_ends_as_without_a_cluster(command, result)


def test_defaults_when_neither_position_sets_one(where, monkeypatch, no_cluster) -> None:
    handed = Handed(monkeypatch)
    invoke(argv_of("run", where))
    assert handed.launch == [
        {"address": None, "refresh_s": GROUP_OPTIONS["refresh_s"],
         "stall": GROUP_OPTIONS["stall_after"]}
    ]  # fmt: skip


# -- values accepted though wrong --------------------------------------------------------


@pytest.mark.parametrize(("command", "position"), placements(COMMANDS))
@pytest.mark.parametrize(
    "option",
    [["--address", ""], ["--address", "   "], ["--refresh", "nan"], ["--refresh", "inf"],
     ["--stall-after", "nan"], ["--stall-after", "inf"], ["--stall-after", "-1"]],
    ids=lambda o: " ".join(o),
)  # fmt: skip
def test_bad_values_are_one_line_exit_2(where, monkeypatch, command, position, option) -> None:
    handed = Handed(monkeypatch)
    result = invoke(placed(position, command, where, option))
    assert result.exit_code == 2, result.output
    assert option[0] in one_line_error(result)
    assert handed.launch == [] and handed.tui == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "x"])
def test_check_waiting_after_must_be_a_finite_number(where, value) -> None:
    result = invoke(["check", "--waiting-after", value])
    assert result.exit_code == 2
    assert "--waiting-after" in one_line_error(result)


def test_stop_an_empty_trial_id_is_refused(where, monkeypatch) -> None:
    stopped = []
    monkeypatch.setattr("raytop.launch.control.stop_experiment", lambda *a, **k: stopped.append(a))
    result = invoke(["stop", str(where["experiment"]), "--trial", "", "--yes"])
    assert result.exit_code == 2
    assert "--trial" in one_line_error(result)
    assert stopped == []


def test_stop_an_unknown_trial_id_names_some_known_ones(where) -> None:
    result = invoke(["stop", str(where["experiment"]), "--trial", "no-such-id", "--yes"])
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "no-such-id" in line and "a91c3_00000" in line and "(7 in all)" in line


def test_stop_a_known_trial_id_gets_past_the_check(where) -> None:
    result = invoke(["stop", str(where["experiment"]), "--trial", TRIALS[3], "--yes"])
    assert "its driver is not running here" in one_line_error(result)  # the next check


# -- read-only ---------------------------------------------------------------------------

CLI_ENTRIES = [m for m in READ_ONLY_REFUSES if m.surface == "cli"]


def argv_for(spelled: str, where) -> list[str]:
    """The command line of a READ_ONLY_REFUSES entry (a new entry without one fails)."""
    return {
        "run": ["run", str(where["spec"])],
        "run --resume": ["run", str(where["spec"]), "--resume"],
        "resume": ["resume", str(where["experiment"])],
        "resume --yes": ["resume", str(where["experiment"]), "--yes"],
        "stop": ["stop", str(where["experiment"]), "--yes"],
        "stop --trial": ["stop", str(where["experiment"]), "--trial", TRIALS[0], "--yes"],
        "down": ["down"],
        "status --stacks": ["status", "--stacks"],
    }[spelled]


@pytest.fixture
def changes(monkeypatch) -> list[str]:
    """Every way the CLI changes something, recorded instead of done."""
    done: list[str] = []
    for target in ("raytop.launch.control.stop_experiment", "raytop.launch.control.stop_trial",
                   "raytop.launch.cluster.stop_embedded", "raytop.launch.launcher.launch",
                   "raytop.launch.cluster.start_embedded",
                   "raytop.pipeline.collect.SnapshotCollector.request_stacks"):  # fmt: skip
        monkeypatch.setattr(target, lambda *a, _t=target, **k: done.append(_t))
    monkeypatch.setattr(cli, "_launch_and_watch", lambda *a, **k: done.append("launch"))
    monkeypatch.setattr(cli, "_resume", lambda *a, **k: done.append("resume"))
    return done


@pytest.mark.parametrize("how", ["before", "after", "RAYTOP_READ_ONLY=1"])
@pytest.mark.parametrize("mutation", CLI_ENTRIES, ids=lambda m: m.spelled)
def test_read_only_refuses_every_mutation(where, changes, mutation, how) -> None:
    args = argv_for(mutation.spelled, where)
    env = None
    if how == "before":
        args = ["--read-only", *args]
    elif how == "after":
        args = [*args, "--read-only"]
    else:
        env = {"RAYTOP_READ_ONLY": "1"}
    result = invoke(args, env=env)
    assert result.exit_code == 2, result.output
    assert f"read-only: `raytop {mutation.spelled}`" in one_line_error(result)
    assert result.stdout == "" and changes == []


@pytest.mark.parametrize("how", ["before", "RAYTOP_READ_ONLY=1"])
def test_read_only_reaches_the_tui(where, monkeypatch, no_cluster, how) -> None:
    handed = Handed(monkeypatch)
    if how == "before":
        invoke(["--read-only"])
    else:
        invoke([], env={"RAYTOP_READ_ONLY": "1"})
    assert handed.tui == [(GROUP_OPTIONS["refresh_s"], True)]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("command", ("plan", "status", "check"))
def test_read_only_lets_reads_through(where, no_cluster, command, position) -> None:
    result = invoke(placed(position, command, where, ["--read-only"]))
    assert "read-only" not in result.stderr
    assert_ends_as_without_a_cluster(command, result)


# -- the installed command, as a user types it -------------------------------------------


def test_the_console_command_honours_options_before_the_command(tmp_path) -> None:
    env = {"RAYTOP_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    addressed = subprocess.run(
        [sys.executable, "-m", "raytop", "--address", UNREACHABLE, "status"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert addressed.returncode == 2 and UNREACHABLE in addressed.stderr
    assert len(addressed.stderr.strip().splitlines()) == 1
    down = subprocess.run(
        [sys.executable, "-m", "raytop", "--read-only", "down"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert down.returncode == 2
    assert down.stderr.strip() == (
        "raytop: error: read-only: `raytop down` stops the embedded cluster; nothing was "
        "changed (drop --read-only / RAYTOP_READ_ONLY)"
    )


# -- the one top-level guard -------------------------------------------------------------


def _raising(exc: BaseException):
    def stop_embedded(*args, **kwargs):
        raise exc

    return stop_embedded


def test_an_os_error_is_one_line_naming_the_file(where, monkeypatch) -> None:
    target = where["experiment"].parent / "cluster.json"
    error = PermissionError(13, "Permission denied", str(target))
    monkeypatch.setattr("raytop.launch.cluster.stop_embedded", _raising(error))
    result = invoke(["down"])
    assert result.exit_code == 2
    assert one_line_error(result) == f"raytop: error: cannot write {target}: Permission denied"


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_is_one_line_exit_1(where, monkeypatch, debug) -> None:
    monkeypatch.setattr("raytop.launch.cluster.stop_embedded", _raising(KeyError("pid")))
    result = invoke(["down"], env={"RAYTOP_DEBUG": "1"} if debug else None)
    assert result.exit_code == 1
    if debug:
        assert "Traceback" in result.stderr
        assert result.stderr.strip().splitlines()[-1] == (
            "raytop: error: internal error: KeyError: 'pid'"
        )
    else:
        assert one_line_error(result) == "raytop: error: internal error: KeyError: 'pid'"


def test_an_unknown_option_is_one_line(where) -> None:
    result = invoke(["status", "--no-such-option"])
    assert result.exit_code == 2
    assert "--no-such-option" in one_line_error(result)
