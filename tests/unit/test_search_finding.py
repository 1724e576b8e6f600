"""diagnose.search.search_not_adaptive: an info only when a spec ranks trials by a metric,
draws many random samples from ranges, and has neither a searcher nor a scheduler; never
for a plain grid sweep. Shown by ``raytop plan`` (launch.planning)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.diagnose.search import MANY_SAMPLES, SweepIntent, search_not_adaptive
from raytop.model import Severity

RANDOM = SweepIntent(
    metric="val_loss",
    num_samples=16,
    search="grid_random",
    scheduler="fifo",
    samplers={"lr": "loguniform", "momentum": "uniform", "batch": "grid", "epochs": "constant"},
)


def test_many_random_draws_ranked_by_a_metric_with_nothing_adaptive() -> None:
    finding = search_not_adaptive(RANDOM)
    assert finding is not None
    assert finding.kind == "search_not_adaptive" and finding.severity is Severity.INFO
    assert finding.message.startswith(
        "16 random samples of lr, momentum are drawn without looking at val_loss "
        "(grid/random search does not adapt) and each runs to the end (no scheduler)"
    )
    assert finding.evidence == {"num_samples": 16, "ranges": ["lr", "momentum"],
                                "metric": "val_loss"}  # fmt: skip


@pytest.mark.parametrize(
    "quiet",
    [
        replace(RANDOM, samplers={"batch": "grid", "opt": "choice"}),  # a plain grid/choices
        replace(RANDOM, metric=None),  # nothing to adapt to
        replace(RANDOM, num_samples=MANY_SAMPLES - 1),  # few draws
        replace(RANDOM, scheduler="asha"),  # poor trials stop early
        replace(RANDOM, search="optuna"),  # samples follow the results
    ],
)
def test_quiet_without_the_signals(quiet: SweepIntent) -> None:
    assert search_not_adaptive(quiet) is None


def test_plan_shows_it(tmp_path) -> None:
    from raytop.launch.planning import describe, nodes_from_spec, plan_sweep
    from raytop.launch.spec import load_spec

    path = tmp_path / "spec.toml"
    path.write_text(
        '[trainable]\nkind = "function"\nentrypoint = "objective:objective"\n'
        "[param_space]\nlr = { loguniform = [1e-4, 1e-1] }\n"
        '[tune]\nmetric = "loss"\nmode = "min"\nnum_samples = 8\n'
    )
    spec = load_spec(path)
    lines = describe(plan_sweep(spec, nodes_from_spec(spec), "here"))
    assert lines[-1].startswith("  info: search_not_adaptive: 8 random samples of lr ")
    path.write_text(path.read_text() + '[tune.scheduler]\nkind = "asha"\n')
    spec = load_spec(path)
    lines = describe(plan_sweep(spec, nodes_from_spec(spec), "here"))
    assert not any("search_not_adaptive" in line for line in lines)
