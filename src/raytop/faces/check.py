"""What ``raytop check`` prints: one line per finding, or the one line that says all is
well; its exit code is ``diagnose.check``'s. Lines go to stdout (a probe's log)."""

from __future__ import annotations

from raytop.diagnose.check import TEARDOWN_UNSAFE, exit_code
from raytop.model import Finding, Snapshot
from raytop.model.visible import visible_lines


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
