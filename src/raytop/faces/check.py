"""What ``raytop check`` prints: one line per finding, or the one line that says all is
well; its exit code is ``diagnose.check``'s. Lines go to stdout (a probe's log)."""

from __future__ import annotations

import sys
from typing import NoReturn

from raytop.diagnose.check import CLUSTER_UNREACHABLE, TEARDOWN_UNSAFE, exit_code
from raytop.faces.command_line import collector_for, experiment_paths, fail
from raytop.faces.output import echo_lines
from raytop.model import Finding, Snapshot
from raytop.model.thresholds import Thresholds
from raytop.model.visible import visible_lines
from raytop.wire.gcs import ClusterUnreachable
from raytop.wire.version import RayUnsupported


def check(experiments: tuple[str, ...], waiting_after: float, teardown_only: bool,
          address: str | None, stall_after: float | None) -> NoReturn:  # fmt: skip
    """``raytop check``: print the lines and exit with the code (``teardown_only``: is
    everything a resume needs on storage, the cluster perhaps gone)."""
    if teardown_only:
        # At call time: the pipeline weighs on every command's start-up.
        from raytop.pipeline.teardown import storage_findings

        findings, checked = storage_findings(experiment_paths(experiments))
        if not findings and not checked:
            fail("no experiment to check: name one with --experiment PATH")
        lines, code = teardown(findings, checked)
        echo_lines(lines)
        sys.exit(code)
    # At call time, like every launch module in the CLI's path (and tests replace it there).
    from raytop.launch.cluster import resolve

    try:
        target = resolve(address)
    except RayUnsupported as exc:
        fail(str(exc))
    except ClusterUnreachable as exc:
        echo_lines([f"cluster_unreachable: {exc}"])
        sys.exit(CLUSTER_UNREACHABLE)
    thresholds = Thresholds.given(stall_after, waiting_after_s=waiting_after)
    lines, code = verdict(target, experiments, thresholds)
    echo_lines(lines)
    sys.exit(code)


def verdict(target, experiments: tuple[str, ...], thresholds: Thresholds) -> tuple[list[str], int]:
    """``check``'s lines and exit code for the training on ``target`` (a resolved cluster),
    printing nothing: one collection, its collector closed after (a caller that asks again
    and again, such as a liveness poller in a long-lived process, leaves no GCS client or
    storage watcher behind)."""
    collector = collector_for(target, experiment_paths(experiments), thresholds)
    try:
        return health(collector.collect())
    finally:
        collector.close()


def health(snapshot: Snapshot) -> tuple[list[str], int]:
    """``check``: the lines and the exit code for the training in ``snapshot``."""
    lines = [f"{f.kind} {f.subject}: {f.line()}" for f in snapshot.findings]
    if not snapshot.findings:
        runs = snapshot.all_runs()
        lines.append(
            f"healthy: {len(snapshot.experiments)} experiment(s), {len(runs)} Train run(s)"
        )
    return visible_lines(lines), exit_code(snapshot.findings)


def teardown(findings: list[Finding], checked: int) -> tuple[list[str], int]:
    """``check --teardown``: the lines and the exit code for the ``teardown_unsafe``
    findings of the ``checked`` experiments (none: safe)."""
    lines = [f"{f.kind} {f.message}" for f in findings]
    if not findings:
        lines.append(f"safe to tear down: {checked} experiment(s) complete on storage")
    return visible_lines(lines), TEARDOWN_UNSAFE if findings else 0
