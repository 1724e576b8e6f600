"""``check --teardown``'s read → diagnose: storage only, no cluster needed (it may
already be gone), for the faces to print."""

from __future__ import annotations

from pathlib import Path

from raytop.diagnose.teardown import teardown_findings, unlisted_findings
from raytop.model import Finding
from raytop.pipeline.collect import default_experiments
from raytop.sources.checkpoints import teardown_facts
from raytop.sources.storage import Storages
from raytop.sources.tune_dir import ExperimentReader


def storage_findings(named: list[tuple[str, Path | None]] | None) -> tuple[list[Finding], int]:
    """The ``teardown_unsafe`` findings of the ``named`` experiments (path, raytop dir),
    None: of what a bare ``raytop`` shows (``default_experiments``), and how many were
    read. An experiment left out of an unreadable list of launched experiments is one
    nobody checked: each problem of that list is a finding too."""
    registry: list[str] = []
    chosen = named if named is not None else default_experiments(registry)
    findings = unlisted_findings(registry)
    for path, raytop_dir in chosen:
        storages = Storages()  # local folders and remote (pyarrow) storage alike
        # Safe only on positive evidence: Tune's state read as valid (``state_read``),
        # every snapshot parsed; torn, wrong-shape, unreachable or unknown is unsafe.
        reader = ExperimentReader(path, raytop_dir, storages)
        experiment = reader.read(require_state=True)
        facts = teardown_facts(experiment, storages, raytop_dir=reader.raytop_dir,
                               record_elsewhere=reader.record_elsewhere)  # fmt: skip
        findings += teardown_findings(facts)
    return findings, len(chosen)
