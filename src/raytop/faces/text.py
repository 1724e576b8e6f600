"""The plain-text face: the snapshot for a human without a TUI (``status``), one line per
change while a run is followed (``run --no-tui``), and the resume preview.

Results go to stdout; what raytop says about itself (``say``) goes to stderr as
``raytop: …``, so a pipe of stdout gets only the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from raytop.faces.output import echo_text, say
from raytop.faces.terminal import NO_TUI_HINT
from raytop.model import ExperimentStatus, Severity, Snapshot
from raytop.model.collectives import FlightRecorderReport
from raytop.model.format import (
    fmt_constants,
    fmt_duration,
    fmt_params,
    fmt_trials,
    fmt_value,
    varying_keys,
)
from raytop.model.ports import Collector
from raytop.model.refresh import paced_delay
from raytop.model.resume import ResumePreview
from raytop.model.stacks import STACK_BY_PROBE
from raytop.model.time_shares import SHARE_LABELS
from raytop.model.visible import visible, visible_lines
from raytop.model.workloads import KIND_TRAIN_RUN


def status_text(snapshot: Snapshot) -> str:
    """The snapshot for a human without a TUI: cluster, trials, findings."""
    c = snapshot.cluster
    if c.connected:
        usage = ", ".join(
            f"{r} {fmt_value(c.used(r))}/{fmt_value(c.total(r))}" for r in ("CPU", "GPU")
        )
        where = f"{c.address}{' (embedded)' if c.embedded else ''}"
        lines = [f"cluster {where}: {c.alive_nodes} node(s), {usage}, Ray {c.ray_version}"]
        if c.host_note:
            lines.append(f"  note: {c.host_note}")
    elif c.history_only:
        lines = [c.error or "no cluster"]
    else:
        lines = [f"cluster DISCONNECTED: {c.error}"]
    for exp in snapshot.experiments:
        lines.append(f"experiment {exp.name} {exp.status} ({exp.path})")
        lines += [f"  warning: {w}" for w in exp.warnings]
        configs = [t.config for t in exp.trials]
        swept = varying_keys(configs)
        lines.append(f"  {fmt_trials(len(exp.trials), exp.trials_total)}")
        if constants := fmt_constants(configs, swept):
            lines.append(f"  constants: {constants}")
        if exp.best_trial is not None:
            best = exp.best_trial
            lines.append(f"  best: {best.trial_id} {best.metric}={fmt_value(best.value)}")
        for t in exp.trials:
            metric = fmt_value(t.metrics.get(exp.metric)) if exp.metric else ""
            elapsed, params = fmt_duration(t.elapsed_s), fmt_params(t.config, swept)
            lines.append(f"  {t.trial_id:<14} {t.status:<10} {metric:>10} iter {t.iterations:<4} "
                         f"{elapsed:>6}  {params}")  # fmt: skip
    lines += workload_lines(snapshot)
    lines += detector_lines(snapshot)
    lines += time_lines(snapshot)
    if not snapshot.experiments and snapshot.warnings:  # e.g. a --storage not reached
        lines.append("no experiments found (see the warnings below)")
    elif not snapshot.experiments:
        lines.append("no experiments (launch one with `raytop run SPEC`)")
    lines += [f"warning: {w}" for w in snapshot.warnings]
    lines += [f"{f.severity.upper()} {f.kind} {f.subject}: {f.line()}" for f in snapshot.findings]
    return "\n".join(visible_lines(lines))


def workload_lines(snapshot: Snapshot) -> list[str]:
    """The one list of everything that runs (``Snapshot.workloads``), live first: one
    line each, then the folders of Tune's default storage left unread."""
    if not snapshot.workloads and not snapshot.older_experiments:
        return []
    lines = [f"runs on the cluster ({len(snapshot.workloads)}):"]
    no_probe_runs = {r.run_id: r for r in snapshot.runs if not r.instrumented}
    for w in snapshot.workloads:
        status = f"{w.status} ({w.how_ended})" if w.how_ended else w.status
        kind = w.kind.replace("_", " ")
        parts = [f"{kind} {w.name}", w.origin_label, w.summary]
        if w.cpu or w.gpu:
            parts.append("holds " + ", ".join(
                f"{fmt_value(n)} {r}" for r, n in (("CPU", w.cpu), ("GPU", w.gpu)) if n
            ))  # fmt: skip
        if w.waiting:
            parts.append(f"{w.waiting} group(s) waiting")
        lines.append(f"  {status:<12} " + " · ".join(p for p in parts if p))
        run = no_probe_runs.get(w.key) if w.kind == KIND_TRAIN_RUN and w.live else None
        if run is not None and run.no_probe is not None:
            lines.append(f"  {'':<12} why no counts: {run.no_probe.line}")
    lines += [f"  {o.count} older experiment folder(s) under {o.root} not read "
              f"(older than a day and than every live job; --storage {o.root} or h in "
              "the TUI reads them)"
              for o in snapshot.older_experiments]  # fmt: skip
    return lines


def detector_lines(snapshot: Snapshot) -> list[str]:
    """Each live run Ray's NCCL hang detector watches: the pipeline's line on it (its
    settings, and its verdict so far). Runs it does not watch say nothing here
    (``status --json`` and the Run screen say off, or not on this Ray)."""
    return [f"run {run.run_name} attempt {run.attempt_index}: {run.ray_detector.line}"
            for run in snapshot.all_runs()
            if run.ray_detector is not None and run.ray_detector.on and not run.over]  # fmt: skip


def time_lines(snapshot: Snapshot) -> list[str]:
    """Each live run's goodput and where the rest of its ranks' time goes (the pipeline's
    shares over the attempt), the largest first: ``run r attempt 1: goodput 34% ·
    controller wait 55% · report barrier 6% · checkpoint upload 5%``."""
    lines = []
    for run in snapshot.all_runs():
        if run.time_shares is None or run.goodput is None or run.over:
            continue
        ranked = sorted(((k, v) for k, v in run.time_shares.items() if k != "compute"
                         and v >= 0.005), key=lambda kv: -kv[1])  # fmt: skip
        rest = "".join(f" · {SHARE_LABELS[k]} {v:.0%}" for k, v in ranked)
        lines.append(f"run {run.run_name} attempt {run.attempt_index}: "
                     f"goodput {run.goodput:.0%}{rest}")  # fmt: skip
    return lines


def stacks_text(snapshot: Snapshot) -> str:
    """The stacks a stacks request brought (``status --stacks``): per run, each rank's
    Python stack, then its native one when asked (``--native``), and who took it when
    not the rank's probe (py-spy, for a run with no probe); ranks that did not answer
    say so, or why not. Then where the capture was saved."""
    lines: list[str] = []
    for run in snapshot.all_runs():
        asked = [w for w in run.workers if not w.done or w.stack or w.native_stack]
        if not asked:
            continue
        lines.append(f"stacks of run {run.run_name} (attempt {run.attempt_index}):")
        for w in sorted(asked, key=lambda w: w.rank):
            pid = "?" if w.pid is None else w.pid
            state = w.state or ("?" if run.instrumented else "no probe")
            by = f" · by {w.stack_by}" if w.stack_by not in (None, STACK_BY_PROBE) else ""
            lines.append(f"  rank {w.rank} · pid {pid} · {state}{by}")
            stack = w.stack or w.stack_problem or "(no answer: process gone or busy in C code)"
            lines += ["    " + line for line in stack.rstrip("\n").splitlines()]
            if w.native_stack is not None:
                lines.append("    -- native stack (py-spy) --")
                lines += ["    " + line for line in w.native_stack.rstrip("\n").splitlines()]
    if not lines:
        lines.append("no rank to ask: no live Train run")
    if snapshot.stacks_capture is not None:
        lines.append(snapshot.stacks_capture.note)
    return "\n".join(visible_lines(lines))


def flight_recorder_text(report: FlightRecorderReport) -> str:
    """``status --flight-recorder``: what was done, then per run its ranks' answers, the
    dumps found and, per process group, who is missing from which collective."""
    lines = [report.note]
    for run in report.runs:
        name = run.run_name or f"trial {run.trial_id}"
        lines.append(f"run {name}" + (f" (dumps in {run.folder})" if run.folder else ""))
        lines += [f"  rank {a.rank}: {a.answer}" for a in run.answers]
        if run.folder is not None and not run.dumped_ranks and not run.warnings:
            lines.append("  no dump there yet")
        elif run.dumped_ranks:
            fresh = ""
            if report.requested_at is not None:
                fresh = f"; new since the request: {len(run.fresh_ranks)}"
            lines.append(f"  dumps from ranks {', '.join(map(str, run.dumped_ranks))}{fresh}")
        lines += [f"  {group.message}" for group in run.groups]
        lines += [f"  warning: {w}" for w in run.warnings]
    if not report.runs:
        lines.append("no run answered and no dump found (raytop enables the Flight Recorder "
                     "for the torch runs on GPUs it launches)")  # fmt: skip
    return "\n".join(visible_lines(lines))


def status_once(collector: Collector, why: str) -> None:
    """A bare ``raytop`` with no terminal for the TUI (``why``): the status on stdout, as
    ``raytop status`` prints it, then how to get the TUI on stderr."""
    try:
        echo_text(status_text(collector.collect()))
    finally:
        close = getattr(collector, "close", None)
        if close is not None:
            close()
    say(f"{why}: the status, once; {NO_TUI_HINT}")


def progress_line(snapshot: Snapshot) -> str:
    """One line that changes exactly when something a user cares about changes."""
    parts = []
    for exp in snapshot.experiments:
        counts = " ".join(f"{n} {s}" for s, n in sorted(exp.status_counts().items()))
        best = ""
        if (top := exp.best_trial) is not None:  # the pipeline's, once
            best = f" | best {top.metric}={fmt_value(top.value)} ({top.trial_id})"
        iters = sum(t.iterations for t in exp.trials)
        parts.append(f"{exp.name} {exp.status} | trials: {counts or 'none yet'} | "
                     f"results {iters}{best}")  # fmt: skip
    if not snapshot.cluster.connected:
        parts.append(f"cluster DISCONNECTED ({snapshot.cluster.error})")
    for finding in snapshot.findings:
        if finding.severity == Severity.ERROR:
            parts.append(f"{finding.kind}: {finding.line()}")
    return visible(" | ".join(parts))


def follow(
    collector: Collector, refresh_s: float, log_path: Path,
    progress: Callable[[str], None] | None = None,
) -> bool:  # fmt: skip
    """``run --no-tui``: print on change until the driver has ended, paced like the TUI
    (every ``refresh_s``, never sooner than the last collect took). True when the run
    ended well (every trial TERMINATED, no error finding) or the user stopped watching
    (the run keeps going); False, with why, when it did not. ``progress``: first show the
    driver coming up (its raytop dir holds ``log_path``) there, in place on a terminal."""
    # at call time: launch.workflow (psutil, subprocess, ~40 ms) stays out of `raytop --help`
    from raytop.launch.workflow import wait_for_driver

    last = None
    try:
        if progress is not None:
            wait_for_driver(log_path.parent, progress)
        while True:
            started = time.monotonic()
            snapshot = collector.collect()
            delay, _slow = paced_delay(refresh_s, time.monotonic() - started)
            line = progress_line(snapshot)
            if line != last:
                echo_text(f"{time.strftime('%H:%M:%S')} {line}")
                last = line
            exp = snapshot.experiments[0]
            if exp.status not in (ExperimentStatus.RUNNING, ExperimentStatus.STARTING):
                break
            time.sleep(delay)
    except KeyboardInterrupt:
        say("stopped watching; the run keeps going; `raytop` re-attaches")
        return True
    errors = [f for f in snapshot.findings if f.severity == Severity.ERROR]
    if exp.all_terminated and not errors:
        return True
    for finding in errors:  # what made an all-TERMINATED run end badly
        say(f"{finding.kind}: {finding.subject}: {finding.line()}")
    if not exp.trials:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(empty)"]
        say(f"the driver ended before any trial started; last log line: {tail[0]}")
    say(f"experiment ended {exp.status}; driver log: {log_path}")
    return False


def resume_preview_lines(shown: ResumePreview) -> list[str]:
    """What resuming would do to each trial, before the user confirms."""
    lines = [
        f"resume {shown.path} (was {shown.status}); errored trials: {shown.errored}",
        f"  {'trial':<14} {'status':<11} {'latest checkpoint':<44} action",
    ]
    lines += [f"  {row.trial_id:<14} {row.status:<11} {row.checkpoint:<44} {row.action}"
              for row in shown.rows]  # fmt: skip
    lines += [f"  warning: {warning}" for warning in shown.warnings]
    return visible_lines(lines)
