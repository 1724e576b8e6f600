"""Cost and freshness of the report ledger (issue: Report ledger; docs/PERFORMANCE.md).

1. Probe cost on the report's critical path: inside real Train workers, the time of the
   probe's ``on_report`` + ``on_checkpoint_sync`` enter+exit around an empty body (what
   it adds to every report; the sync hook's frame walk finds no report frame: its worst case).
2. Instrumented / plain ``ray.train.report`` latency on a report-heavy loop (Train's poll
   lowered to 10 ms so the barrier and queue dominate, not the poll), runs alternated
   plain, probe, plain, probe… in the same cluster: a ratio from the same run.
3. Freshness: from a rank entering report (the probe's own timestamp) to that count being
   visible through the GCS KV, as ``status --json`` reads it (poll every 20 ms), and as
   the TUI sees it (poll at its refresh period, 0.25 s), both watching the same run;
   reports 0.3 s apart.

    .venv/bin/python benchmarks/ledger_bench.py [--reports 300] [--rounds 2]

``--address`` runs it on an existing cluster instead of a local one of its own (the test
suite's smoke run, ``tests/integration/test_bench_ledger.py``), ``--fresh`` sets how many
reports the freshness runs make.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.01")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def heavy_loop(config: dict) -> None:
    import ray.train

    from raytop.probe import report_probe

    ctx = ray.train.get_context()
    hook = []
    probe = report_probe._OWNER  # the probe that counts in this worker (None: no probe)
    if probe is not None:  # time its hooks alone
        for _ in range(config["reports"] * 10):
            start = time.perf_counter_ns()
            with probe.on_report(), probe.on_checkpoint_sync():
                pass
            hook.append((time.perf_counter_ns() - start) / 1000)
    latencies = []
    for step in range(config["reports"]):
        time.sleep(config["interval_s"])
        start = time.perf_counter()
        ray.train.report({"step": step, "lat": latencies[-1] if latencies else 0.0})
        latencies.append(time.perf_counter() - start)
    if ctx.get_world_rank() == 0:
        with open(config["out"], "w") as f:
            import json

            json.dump({"report_s": latencies, "hook_us": hook}, f)


def fit(reports: int, probe: bool, storage: str, interval_s: float = 0.0) -> dict:
    import json

    import ray.train
    from ray.train.torch import TorchTrainer

    from raytop.probe.report_probe import ReportProbe

    out = os.path.join(storage, f"out-{time.time_ns()}.json")
    TorchTrainer(
        heavy_loop,
        train_loop_config={"reports": reports, "out": out, "interval_s": interval_s},
        scaling_config=ray.train.ScalingConfig(num_workers=2),
        run_config=ray.train.RunConfig(
            name=f"bench-{time.time_ns()}", storage_path=storage,
            callbacks=[ReportProbe()] if probe else [],
        ),
    ).fit()  # fmt: skip
    with open(out) as f:
        return json.load(f)


def freshness(address: str, reports: int, storage: str,
              polls: dict[str, float]) -> dict[str, list[float]]:  # fmt: skip
    """Latencies from rank 0 entering report to the count being readable via the KV, for
    each face (``polls``: its name → its poll period), all watching the same run."""
    from raytop.sources.ledger_source import LedgerReader
    from raytop.wire.gcs import GcsKv

    stop = threading.Event()
    found: dict[str, list[float]] = {label: [] for label in polls}

    def watch(label: str, poll_s: float) -> None:
        reader = LedgerReader(GcsKv(address))
        seen: set[int] = set()
        while not stop.is_set():
            now = time.time()
            runs, _ = reader.read(now)
            for run in runs:
                for w in run.workers:
                    if w.rank == 0 and w.reports_entered not in seen and w.last_enter_at:
                        seen.add(w.reports_entered)
                        found[label].append(now - w.last_enter_at)
            time.sleep(poll_s)

    threads = [threading.Thread(target=watch, args=item, daemon=True) for item in polls.items()]
    for thread in threads:
        thread.start()
    fit(reports, probe=True, storage=storage, interval_s=0.3)
    stop.set()
    for thread in threads:
        thread.join()
    return {label: lat[2:] for label, lat in found.items()}  # the first include start-up


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reports", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fresh", type=int, default=50, help="reports per freshness run")
    parser.add_argument("--address", help="an existing cluster (default: a local one)")
    args = parser.parse_args()

    import ray

    if args.address:
        ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    else:
        # Ray 2.60's local ray.init() would write ~/.ray/auth_token, and every `ray start` on
        # this machine turn token authentication on from then on (docs/RAY_FACTS.md#token-auth).
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR",
                 log_to_driver=False)  # fmt: skip
    address = ray.get_runtime_context().gcs_address
    storage = tempfile.mkdtemp(prefix="raytop-ledger-bench-")
    plain, probed, hook = [], [], []
    for _ in range(args.rounds):
        plain += fit(args.reports, False, storage)["report_s"][10:]
        result = fit(args.reports, True, storage)
        probed += result["report_s"][10:]
        hook += result["hook_us"]
    p50_ratio = statistics.median(probed) / statistics.median(plain)
    print(f"probe on_report+on_checkpoint_sync enter+exit: "
          f"median {statistics.median(hook):.2f} us, "
          f"p99 {percentile(hook, 0.99):.2f} us  (n={len(hook)})")  # fmt: skip
    print(f"report latency plain:  median {statistics.median(plain) * 1e3:.3f} ms, "
          f"p99 {percentile(plain, 0.99) * 1e3:.3f} ms")  # fmt: skip
    print(f"report latency probed: median {statistics.median(probed) * 1e3:.3f} ms, "
          f"p99 {percentile(probed, 0.99) * 1e3:.3f} ms")  # fmt: skip
    print(f"instrumented / plain (median): {p50_ratio:.4f}")
    faces = {"status --json (20 ms poll)": 0.02, "TUI (0.25 s refresh)": 0.25}
    for label, lat in freshness(address, args.fresh, storage, faces).items():
        p50, p95 = statistics.median(lat), percentile(lat, 0.95)
        print(f"freshness {label}: p50 {p50:.3f} s, p95 {p95:.3f} s, max {max(lat):.3f} s "
              f"(n={len(lat)})")  # fmt: skip
    ray.shutdown()


if __name__ == "__main__":
    main()
