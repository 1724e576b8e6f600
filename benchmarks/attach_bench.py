"""Attach (issue 13, item 5): how long a user waits for raytop on a running cluster.

Two figures, alternated over ``--rounds`` in one run, as a user meets them:

1. ``raytop status --json`` beside ``ray status`` on the same cluster (wall time of each
   command from its process start to its exit; the ratio of the medians; goal ≤ 1.2);
2. the first full frame of ``raytop`` in a real terminal (a tmux pane of 120×36): from
   spawning the process to the first ``capture-pane`` that shows the cluster line drawn
   from a snapshot (nodes alive, the snapshot's age) and, when a run is going, every
   rank's report count in the overview's rank strip (goal ≤ 1.0 s). The pane is read
   every 20 ms.

Unless ``--address`` names a running cluster, it starts an embedded 4-CPU cluster of its own
(own raytop home and Ray temp dir) and launches the stall example with every rank reporting
(``skip_rank = -1``), so there is a Train run to show; ``--no-run`` attaches to an idle
cluster. Needs tmux.

    .venv/bin/python benchmarks/attach_bench.py [--rounds 5] [--json attach.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RANK_COUNT = re.compile(r"\br(\d+) +(\d+)\b")  # the rank strip: ``r0 3 5s``
FULL_FRAME_TIMEOUT_S = 30.0


def timed(argv: list[str]) -> float:
    """Wall seconds of one command, as a user runs it; it must succeed."""
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} exited {result.returncode}: {result.stderr[-500:]}")
    return took


def full_frame(screen: str, ranks: int) -> bool:
    """The cluster line is drawn from a snapshot (nodes alive, its age), and (with a run)
    every rank's count is on screen."""
    if " alive" not in screen or " ago" not in screen:
        return False
    return len({rank for rank, _ in RANK_COUNT.findall(screen)}) >= ranks


def first_frame(argv: list[str], ranks: int) -> float:
    """Seconds from spawning ``argv`` in a fresh tmux pane to its first full frame."""
    name = f"raytop-attach-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", name]
    env = " ".join(f"{k}={shlex.quote(os.environ[k])}"
                   for k in ("RAYTOP_HOME", "RAY_TMPDIR", "PATH") if k in os.environ)  # fmt: skip
    shell = f"env {env} TERM=xterm-256color {shlex.join(argv)}; sleep 60"
    started = time.perf_counter()
    subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", "120", "-y", "36", shell],
                   check=True)  # fmt: skip
    try:
        while time.perf_counter() - started < FULL_FRAME_TIMEOUT_S:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", name],
                                    capture_output=True, text=True).stdout  # fmt: skip
            if full_frame(screen, ranks):
                return time.perf_counter() - started
            time.sleep(0.02)
        raise SystemExit(f"no full frame in {FULL_FRAME_TIMEOUT_S:.0f} s; the screen:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def start_run(address: str, folder: Path) -> Path:
    """The stall example, every rank reporting, launched detached: its experiment folder
    once both ranks have reported twice."""
    spec = (EXAMPLES / "stall.toml").read_text()
    for old, new in {"skip_rank = 1": "skip_rank = -1", "epochs = 5": "epochs = 400"}.items():
        assert old in spec, old
        spec = spec.replace(old, new)
    (folder / "stall.toml").write_text(spec)
    shutil.copy(EXAMPLES / "stall_loop.py", folder / "stall_loop.py")
    raytop = [sys.executable, "-m", "raytop"]
    log = folder / "raytop-run.out"
    with open(log, "wb") as out:  # it follows the run; its driver is detached
        argv = [*raytop, "run", str(folder / "stall.toml"), "--no-tui", "--address", address]
        follower = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    experiment = folder / "results" / "stall"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if follower.poll() not in (None, 0):
            raise SystemExit(f"raytop run exited {follower.returncode}:\n{log.read_text()[-2000:]}")
        out = subprocess.run([*raytop, "status", "--json", "--address", address, "--experiment",
                              str(experiment)], capture_output=True, text=True)  # fmt: skip
        runs = json.loads(out.stdout)["experiments"][0]["runs"] if out.returncode == 0 else []
        workers = runs[0]["workers"] if runs else []
        if len(workers) == 2 and all(w["reports_exited"] >= 2 for w in workers):
            return experiment
        time.sleep(1.0)
    raise SystemExit("the stall example's two ranks did not report within 180 s")


def measure(address: str, experiment: Path | None, rounds: int) -> dict:
    raytop = [sys.executable, "-m", "raytop"]
    ray = [str(Path(sys.executable).with_name("ray")), "status", "--address", address]
    where = ["--experiment", str(experiment)] if experiment else []
    status = [*raytop, "status", "--json", "--address", address, *where]
    tui = [*raytop, "--address", address]  # the experiments of its raytop home
    ranks = 2 if experiment else 0
    times: dict[str, list[float]] = {"ray_status": [], "raytop_status": [], "first_frame": []}
    for _ in range(rounds):  # alternated: drift hits every command alike
        times["ray_status"].append(timed(ray))
        times["raytop_status"].append(timed(status))
        times["first_frame"].append(first_frame(tui, ranks))
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {"rounds": rounds, "run": experiment is not None, "times_s": times,
              "median_s": medians,
              "status_ratio": medians["raytop_status"] / medians["ray_status"]}  # fmt: skip
    print(f"ray status            median {medians['ray_status']:.3f} s  {times['ray_status']}")
    print(f"raytop status --json  median {medians['raytop_status']:.3f} s  "
          f"{times['raytop_status']}")  # fmt: skip
    print(f"raytop status / ray status (medians): {result['status_ratio']:.2f}  (goal <= 1.2)")
    print(f"first full frame      median {medians['first_frame']:.3f} s  "
          f"max {max(times['first_frame']):.3f} s  (goal <= 1.0)")  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--address", help="a running cluster (default: start one)")
    parser.add_argument("--no-run", action="store_true", help="attach to an idle cluster")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        raise SystemExit("attach_bench needs tmux")
    folder = Path(tempfile.mkdtemp(prefix="raytop-attach-"))
    own_cluster = args.address is None
    if own_cluster:
        os.environ["RAYTOP_HOME"] = str(folder / "home")
        os.environ["RAY_TMPDIR"] = f"/tmp/raytop-attach-{os.getpid()}"
    from raytop.launch.cluster import LOOPBACK_ENV, start_embedded, stop_embedded
    from raytop.launch.spec import ClusterSection

    os.environ.update(LOOPBACK_ENV)
    address = args.address or start_embedded(ClusterSection(num_cpus=4)).address
    experiment = None
    try:
        experiment = None if args.no_run else start_run(address, folder)
        result = measure(address, experiment, args.rounds)
    finally:
        if experiment is not None:
            subprocess.run([sys.executable, "-m", "raytop", "stop", str(experiment),
                            "--address", address, "--yes"],
                           capture_output=True, timeout=120)  # fmt: skip
        if own_cluster:
            stop_embedded()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
