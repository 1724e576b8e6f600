"""The benchmarks run, in small (no timing asserted: their figures are in
docs/PERFORMANCE.md, measured by their own command), so they never rot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_sampling_benchmark_runs_and_samples():
    result = load("sampling_bench").main(["--seconds", "0.3", "--rounds", "1"])
    assert set(result) == {"1 Hz", "100 Hz", "shares 10 Hz"}
    assert result["100 Hz"]["samples"] >= 5  # the sampler really ran against the loop
    assert result["shares 10 Hz"]["samples"] >= 2
    assert all(r["plain_steps_per_s"] > 0 and r["sampled_steps_per_s"] > 0
               for r in result.values())  # fmt: skip


def test_the_scale_benchmark_reads_its_stand_in_cluster_through_the_real_readers():
    """benchmarks/scale_bench.py, collection half, at 10 workers: every refresh kind ran,
    the snapshot holds the stand-in cluster whole, and the stand-ins counted the calls."""
    bench = load("scale_bench")
    result = bench.run_shape("wide-10", refreshes=1, applies=0, presses=0, tui=False,
                             watch_s=0.6)  # fmt: skip
    shape = bench.SHAPES["wide-10"]
    snapshot = result["snapshot"]
    assert (snapshot["trials"], snapshot["runs"], snapshot["workers"]) == (
        shape.trials, shape.runs, shape.workers,
    )  # fmt: skip
    assert (snapshot["nodes"], snapshot["placement_groups"]) == (shape.nodes, shape.groups)
    assert set(result["collect"]) == {
        "first (cold)", "nothing changed", "1% of ranks reported", "every rank's heartbeat",
        "a trial's row rewritten",
    }  # fmt: skip
    assert result["beating"]["refreshes"] >= 1 and result["beating"]["cpu_s"] > 0
    for kind in result["collect"].values():
        assert kind["calls_min"] > 0 and kind["cluster_bytes_p50"] > 0 and kind["cpu_p50_s"] > 0
        assert {"GetAllAvailableResources", "kv_get"} <= set(kind["calls"])
    # Every table read at first; then, the GCS having published no change of an actor or a
    # node, neither table is read again (wire.gcs_pubsub, through the stand-in publisher).
    assert {"GetAllNodeInfo", "GetAllActorInfo", "GetAllPlacementGroup"} <= set(
        result["collect"]["first (cold)"]["calls"]
    )
    for name in ("nothing changed", "1% of ranks reported", "every rank's heartbeat"):
        assert not {"GetAllNodeInfo", "GetAllActorInfo"} & set(result["collect"][name]["calls"])
    # A changed rank is fetched with its page; an unchanged ledger is the index alone (what
    # is fetched then is the running submitted job's record, a few hundred bytes).
    assert result["collect"]["1% of ranks reported"]["bytes_by_call"]["kv_multi_get"] > 4_000
    assert result["collect"]["nothing changed"]["bytes_by_call"].get("kv_multi_get", 0) < 1_000
    assert "get_all_job_info" in result["collect"]["nothing changed"]["calls"]
    assert result["collect"]["a trial's row rewritten"]["storage_bytes_p50"] > 0
    assert result["rss"]["peak"] > 0 and result["screen_model"]["overview_cpu_s"] >= 0
    watch = result["watch"]  # a collect every 0.25 s: up to three in 0.6 s
    assert watch["refreshes"] >= 2 and watch["core_share"] > 0 and watch["cpu_s"] > 0
    assert watch["bytes_per_refresh"] > 0  # every refresh reads the ledger's index at least
    # The Ledger actor's heap, measured on the real class: every rank held, under its bound.
    held = result["ledger_memory"]
    assert held["ranks"] == shape.workers <= held["max_ranks"] and held["bytes"] > 0


def test_the_scale_benchmarks_rank_reports_are_what_a_probe_sends(tmp_path):
    """The stand-in ledger is fed ``RankReport``s with every key a probe sends (a stack,
    a native stack and a Flight Recorder answer only once raytop asked for one)."""
    from raytop.model.records import RankReport

    bench = load("scale_bench")
    report = bench._rank_report(0, 0, bench.SHAPES["wide-10"], 0.0, tmp_path)
    assert set(report) == set(RankReport.__annotations__) - {
        "stack", "stack_request", "native_stack", "native_stack_request",
        "flight_recorder", "flight_recorder_request",
    }  # fmt: skip


async def test_the_scale_benchmark_drives_the_tui_under_load(tmp_path, monkeypatch):
    """benchmarks/scale_bench.py, TUI half, at 10 workers: snapshots applied to the
    overview, keys answered while the poller collects from the stand-ins."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user themes
    bench = load("scale_bench")
    cluster = bench.StandInCluster(bench.SHAPES["tall-10"], tmp_path)
    collector = cluster.collector()
    try:
        result = await bench.measure_tui(cluster, collector, applies=1, presses=2)
    finally:
        collector.close()
        cluster.close()
    assert result["rows"] == bench.SHAPES["tall-10"].trials
    assert result["apply"]["n"] == 1 and result["first_apply"]["to_frame_s"] > 0
    assert result["keys"]["n"] == 2 and result["keys"]["p95_s"] > 0


def test_the_history_benchmark_reads_every_trial_of_the_experiment_it_makes():
    """benchmarks/history_bench.py at 5 and 20 trials: each read found every trial's
    history and every failed trial's error, reading about one file per trial."""
    small, large = load("history_bench").main(["--sizes", "5,20"])
    assert (small["trials"], large["trials"]) == (5, 20)
    assert (large["with_history"], large["with_error"]) == (20, 2)
    assert large["opened"] < 2 * 20 and large["listed"] <= 6 and large["seconds"] > 0


def test_the_cpu_by_process_tool_counts_a_child_and_names_kinds(capsys):
    """benchmarks/cpu_by_process.py: a child that burns CPU is counted under its kind, and
    the kinds the suite's processes fall into are named as docs/PERFORMANCE.md uses them."""
    tool = load("cpu_by_process")
    burn = "import time\nend = time.process_time() + 1.5\nwhile time.process_time() < end: pass"
    assert tool.main([sys.executable, "-c", burn]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Sampled every 0.5 s: what a process burns after its last sample is not seen.
    assert float(lines[-1].split()[0]) >= 0.8 and lines[-1].endswith("in all (CPU-s)")
    assert tool.kind("ray::TrainController.run()") == "actor:TrainController"
    assert tool.kind("/v/bin/python -m raytop status --json --address x") == "raytop:status"
    assert tool.kind("/v/bin/python -m raytop --address 127.0.0.1:1") == "raytop:tui"
    assert tool.kind("/v/bin/python -m raytop.launch.driver spec.toml") == "raytop:driver"


def test_the_cpu_by_process_tool_keeps_the_kind_of_a_child_left_unreaped(capsys):
    """A child that ended and is not reaped for a few samples (a zombie: its command line
    is empty) is counted under the command it ran, not under its executable's name."""
    tool = load("cpu_by_process")
    burn = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass"
    parent = (f"import subprocess, sys, time\np = subprocess.Popen([sys.executable, '-c', "
              f"{burn!r}])\ntime.sleep(4)\np.wait()")  # fmt: skip
    assert tool.main([sys.executable, "-c", parent]) == 0
    kinds = capsys.readouterr().out
    assert "python -c import time" in kinds, kinds  # the child's own command line
    assert not [line for line in kinds.splitlines() if line.split()[1:] == ["python"]], kinds


def test_the_cpu_by_process_tool_counts_cpu_by_test_file(tmp_path, capsys):
    """``--timeline``: a process a test started counts to that test's file; one started by
    the next test to the next file; the test process's own CPU to itself; a process of
    another tree, to nothing."""
    tool = load("cpu_by_process")
    seen = {
        (10, "a"): tool.Seen(5.0, "pytest worker", 1, 100.0),
        (11, "b"): tool.Seen(2.0, "ray start", 10, 105.0),
        (12, "c"): tool.Seen(3.0, "raylet", 11, 106.0),  # a cluster the first test started
        (13, "d"): tool.Seen(4.0, "raytop run", 10, 125.0),
        (14, "e"): tool.Seen(1.0, "the driver", 13, 126.0),
        (20, "f"): tool.Seen(9.0, "elsewhere", 1, 110.0),
        (30, "g"): tool.Seen(1.0, "a reused pid", 31, 90.0),  # 30 and 31: each the other's
        (31, "h"): tool.Seen(1.0, "parent", 30, 95.0),  # parent, by reuse: counted to none
    }
    rows = [{"pid": 10, "test": "tests/a.py::t", "start": 101.0},
            {"pid": 10, "test": "tests/b.py::t", "start": 120.0}]  # fmt: skip
    assert tool.by_test(seen, rows) == {
        "(test process 10 itself)": 5.0, "tests/a.py": 5.0, "tests/b.py": 5.0,
    }  # fmt: skip
    timeline = tmp_path / "timeline"
    burn = ("import os, json, time\n"
            "end = time.process_time() + 1.0\nwhile time.process_time() < end: pass\n"
            "open(os.environ['RAYTOP_TIMELINE'], 'a').write(json.dumps({'pid': os.getpid(),"
            " 'test': 'tests/x.py::t', 'start': 0}) + '\\n')")  # fmt: skip
    assert tool.main(["--timeline", str(timeline), sys.executable, "-c", burn]) == 0
    out = capsys.readouterr().out
    assert "by test file:" in out and "(test process" in out, out


def test_the_timeline_is_recorded_by_worker_and_summed_per_file(tmp_path):
    """tests/timeline.py's lines, summed by benchmarks/timeline.py: each worker's span and
    busy time, its files by seconds, most first; a torn last line is skipped."""
    rows = [("gw0", "tests/a.py::t1", 100, 130), ("gw0", "tests/a.py::t2", 130, 140),
            ("gw0", "tests/b.py::t", 140, 200), ("gw1", "tests/c.py::t", 101, 111)]  # fmt: skip
    path = tmp_path / "timeline"
    path.write_text("".join(f'{{"worker": "{w}", "test": "{t}", "start": {s}, "end": {e}}}\n'
                            for w, t, s, e in rows) + '{"worker": "gw1", "te')  # fmt: skip
    text = load("timeline").summary(load("timeline").load(path), top=5)
    assert text.splitlines() == [
        "gw0: 3 tests, 0-100 s, busy 100 s",
        "     60.0 s  tests/b.py",
        "     40.0 s  tests/a.py",
        "gw1: 1 tests, 1-11 s, busy 10 s",
        "     10.0 s  tests/c.py",
    ]
