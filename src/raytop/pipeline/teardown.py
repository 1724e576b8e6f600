"""``check --teardown``'s read → diagnose: storage only, no cluster needed (it may
already be gone), for the faces to print."""

from __future__ import annotations

from pathlib import Path

from raytop.diagnose.teardown import teardown_findings, unlisted_findings
from raytop.model import Finding
from raytop.sources.checkpoints import teardown_facts
from raytop.sources.storage import Storages
from raytop.sources.tune_dir import ExperimentReader


def storage_findings(
    chosen: list[tuple[str, Path | None]], registry_warnings: list[str]
) -> list[Finding]:
    """The ``teardown_unsafe`` findings of the ``chosen`` experiments (path, raytop dir),
    and of the problems of the list they were chosen from (``registry_warnings``: an
    experiment left out of an unreadable list is one nobody checked)."""
    findings = unlisted_findings(registry_warnings)
    for path, raytop_dir in chosen:
        storages = Storages()  # local folders and remote (pyarrow) storage alike
        # Safe only on positive evidence: Tune's state read as valid (``state_read``),
        # every snapshot parsed; torn, wrong-shape, unreachable or unknown is unsafe.
        experiment = ExperimentReader(path, raytop_dir, storages).read(require_state=True)
        findings += teardown_findings(teardown_facts(experiment, storages))
    return findings
