"""The lines at the top of the Rank screen: where the rank runs, its health, its report
counts, and the finding that names it.

Everything here is the probe's figures and the pipeline's words (``Worker.state``,
``Worker.behind``, the ``diagnose`` findings): a rank is flagged because the pipeline
says so (a ``dead`` rank's old heartbeat), never by a threshold of the TUI's own.
Ages count from the app's clock, so they tick between snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from raytop.model import Finding, TrainRun, Worker
from raytop.model.format import fmt_duration
from raytop.model.hangs import HANG_KINDS
from raytop.tui.format import fmt_bytes, fmt_declared, fmt_rate, fmt_seconds, shown_lines

SEP = " · "


def _since(now: float, at: float | None) -> float | None:
    return now - at if at is not None else None


def state_words(worker: Worker) -> str:
    """``behind · 1 behind``: the pipeline's word for the rank, and how far behind."""
    words = worker.state or "unknown"
    return f"{words}{SEP}{worker.behind} behind" if worker.behind else words


def describe_where(run: TrainRun, worker: Worker) -> str:
    """``attempt 1 · node a3f9c2d1 · pid 51235 · local rank 1 · node rank 0 · GPU 0,1``."""
    local = "?" if worker.local_rank is None else worker.local_rank
    node_rank = "?" if worker.node_rank is None else worker.node_rank
    parts = [
        f"attempt {run.attempt_index}",
        f"node {(worker.node_id or '?')[:8]}",
        f"pid {'?' if worker.pid is None else worker.pid}",
        f"local rank {local} · node rank {node_rank}",
        f"GPU {','.join(worker.gpu_ids)}" if worker.gpu_ids else "no GPU",
    ]
    return SEP.join(parts)


def describe_health(worker: Worker, now: float) -> Content:
    """Heartbeat age (flagged when the pipeline calls the rank dead), CPU, memory, GPU
    memory, and the probe's dropped events if any."""
    beat = fmt_duration(_since(now, worker.heartbeat_at))
    heartbeat = Content(f"heartbeat {beat} ago")
    if worker.heartbeat_at is None:
        heartbeat = Content.styled("no heartbeat yet", "$text-warning")
    if worker.state == "dead":
        heartbeat = Content.styled(f"heartbeat {beat} ago: DEAD", "bold $text-error")
    cpu = "-" if worker.cpu_percent is None else f"{worker.cpu_percent:.0f}%"
    declared = fmt_declared(worker.declared_resources)
    if declared:
        cpu = f"{cpu} (declared {declared})"
    gpu = f"GPU memory {fmt_bytes(worker.gpu_memory_bytes)}" if worker.gpu_ids else "no GPU"
    if worker.gpu_util_percent is not None:  # NVML's view (GPU only)
        gpu += f", busy {worker.gpu_util_percent:.0f}%"
    if worker.gpu_memory_used_bytes is not None:
        gpu += f", {fmt_bytes(worker.gpu_memory_used_bytes)} in use on the device"
    cpu_style = "bold $text-warning" if worker.cpu_over_declared else ""
    parts: list[Content | str] = [heartbeat, SEP, Content.styled(f"cpu {cpu}", cpu_style)]
    parts.append(f"{SEP}rss {fmt_bytes(worker.rss_bytes)}{SEP}{gpu}")
    if worker.dropped_events:
        parts.append(SEP)
        parts.append(
            Content.styled(f"{worker.dropped_events} probe events dropped", "$text-warning")
        )
    return Content.assemble(*parts)


def describe_reports(worker: Worker, now: float) -> Content:
    """Two lines: the counts and where the rank is now (inside report, or out of it for
    how long); then its last entry, usual interval and rate; and a third once its probe
    sampled where its train loop is (``Worker.activity``)."""
    counts = f"reports entered {worker.reports_entered}{SEP}exited {worker.reports_exited}"
    if worker.done:
        where = Content.styled("done: its train loop returned", "$text-muted")
    elif worker.in_report:
        inside = fmt_duration(_since(now, worker.last_enter_at))
        where = Content.styled(
            f"inside report {worker.reports_entered} for {inside}", "bold $text-warning"
        )
    else:
        out = _since(now, worker.last_exit_at)
        where = Content("not in report" + (f" (out {fmt_duration(out)})" if out else ""))
    last = fmt_duration(_since(now, worker.last_enter_at))
    usual = fmt_seconds(worker.usual_interval_s)
    second = (
        f"last entered {last} ago{SEP}usual interval {usual}{SEP}"
        f"rate {fmt_rate(worker.rate_per_min)}"
    )
    lines: list[Content | str] = [Content.assemble(counts, SEP, where), second]
    if worker.activity is not None and not worker.done:
        activity = worker.activity
        style = "bold $text-warning" if activity.kind in ("collective", "backward") else ""
        lines.append(Content.styled(
            f"now in {activity.where} for {fmt_duration(now - activity.since)}"
            f"{SEP}waiting {activity.waiting:.0%} of the last {activity.samples}s", style,
        ))  # fmt: skip
    return shown_lines(lines)


def rank_finding(findings: Sequence[Finding], rank: int) -> tuple[Content, str] | None:
    """The first of the run's ``findings`` that names this rank, as one line, and its
    severity (for the line's colour): a barrier stall says whether this rank is the one
    the others wait for (missing) or one of those waiting."""
    for f in findings:
        if f.kind in HANG_KINDS:
            if rank in f.ranks:
                label = "MISSING RANK: " if f.kind == "barrier_stall" else "HOLDING IT UP: "
            elif rank in f.waiting_ranks:
                label = "WAITING: "
            else:
                continue
        elif rank in f.ranks or rank in f.waiting_ranks:
            label = f"{f.severity.value.upper()}: "
        else:
            continue
        return Content.assemble(Content.styled(label, "bold"), f.message), f.severity.value
    return None
