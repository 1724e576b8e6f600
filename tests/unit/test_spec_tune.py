"""[tune.scheduler] and [tune.search]: parsed purely, each bad input one line naming the
field; a searcher whose package is missing names the package; the driver's builders make
Ray's objects from what was parsed."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from raytop.launch.spec import SpecError, load_spec

HEAD = """
[trainable]
kind = "function"
entrypoint = "objective:objective"

[param_space]
x = { uniform = [0, 10] }
lr = { loguniform = [1e-4, 1e-1] }
steps = 8

[tune]
metric = "score"
mode = "max"
"""


def spec(tmp_path: Path, tail: str, head: str = HEAD) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(textwrap.dedent(head) + textwrap.dedent(tail))
    return path


def error(tmp_path: Path, tail: str, head: str = HEAD) -> str:
    with pytest.raises(SpecError) as err:
        load_spec(spec(tmp_path, tail, head))
    message = str(err.value)
    assert "\n" not in message
    return message.split(": ", 1)[1]


def test_defaults_are_fifo_and_grid_random(tmp_path) -> None:
    tune = load_spec(spec(tmp_path, "")).tune
    assert tune.scheduler.kind == "fifo" and not tune.scheduler.adaptive
    assert tune.search.kind == "grid_random" and tune.search.max_concurrent is None


def test_asha_options_pass_through(tmp_path) -> None:
    tune = load_spec(spec(tmp_path, """
        [tune.scheduler]
        kind = "asha"
        max_t = 8
        grace_period = 2
        reduction_factor = 2
        brackets = 1
    """)).tune  # fmt: skip
    assert tune.scheduler.kind == "asha"
    assert tune.scheduler.time_attr == "training_iteration"
    assert tune.scheduler.options == {
        "max_t": 8, "grace_period": 2, "reduction_factor": 2, "brackets": 1
    }  # fmt: skip


def test_pbt_mutations_as_values_or_a_range(tmp_path) -> None:
    scheduler = load_spec(spec(tmp_path, """
        [tune.scheduler]
        kind = "pbt"
        perturbation_interval = 2
        hyperparam_mutations = { x = [1, 2, 3], lr = { loguniform = [1e-4, 1e-2] } }
    """)).tune.scheduler  # fmt: skip
    assert scheduler.options["hyperparam_mutations"] == {
        "x": ("choice", (1, 2, 3)),
        "lr": ("loguniform", (1e-4, 1e-2)),
    }


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ('[tune.scheduler]\nkind = "hasha"',
         "[tune.scheduler] kind: expected one of 'fifo', 'asha', 'median_stopping', 'pbt', "
         "got 'hasha' (did you mean 'asha'?)"),
        ('[tune.scheduler]\nkind = "asha"\nmax_tt = 4',
         "[tune.scheduler] max_tt: unknown key (did you mean 'max_t'?)"),
        ('[tune.scheduler]\nkind = "asha"\nmin_samples_required = 4',
         "[tune.scheduler] min_samples_required: not a key of kind = 'asha' "
         "(it is 'median_stopping''s)"),
        ('[tune.scheduler]\nkind = "asha"\nmax_t = 0',
         "[tune.scheduler] max_t: expected an integer >= 1, got 0"),
        ('[tune.scheduler]\nkind = "asha"\nmax_t = 2.5',
         "[tune.scheduler] max_t: expected an integer >= 1, got 2.5 (a float)"),
        ('[tune.scheduler]\nkind = "asha"\nreduction_factor = 1',
         "[tune.scheduler] reduction_factor: expected a number > 1, got 1 (an integer)"),
        ('[tune.scheduler]\nkind = "asha"\nmax_t = 4\ngrace_period = 5',
         "[tune.scheduler] grace_period: 5 is above max_t (4): no trial could be stopped early"),
        ('[tune.scheduler]\nkind = "median_stopping"\nmin_samples_required = 0',
         "[tune.scheduler] min_samples_required: expected an integer >= 1, got 0"),
        ('[tune.scheduler]\nkind = "pbt"\nhyperparam_mutations = { x = [1] }',
         "[tune.scheduler] perturbation_interval: missing (required for kind = 'pbt')"),
        ('[tune.scheduler]\nkind = "pbt"\nperturbation_interval = 2\n'
         "hyperparam_mutations = { xx = [1] }",
         "[tune.scheduler] hyperparam_mutations.xx: not a [param_space] key; PBT mutates the "
         "trial's config (did you mean 'x'?)"),
        ('[tune.scheduler]\nkind = "pbt"\nperturbation_interval = 2\n'
         "hyperparam_mutations = { x = { uniform = [2, 1] } }",
         "[tune.scheduler] hyperparam_mutations.x.uniform: expected low < high, got [2, 1]"),
        ('[tune.scheduler]\nkind = "pbt"\nperturbation_interval = 2\n'
         "hyperparam_mutations = { x = { unifrom = [1, 2] } }",
         "[tune.scheduler] hyperparam_mutations.x: unknown mutation 'unifrom' "
         "(did you mean 'uniform'?)"),
        ('[tune.search]\nkind = "random"',
         "[tune.search] kind: expected one of 'grid_random', 'optuna', 'hyperopt', 'bayesopt', "
         "got 'random' (did you mean 'grid_random'?)"),
        ('[tune.search]\nmax_concurent = 2',
         "[tune.search] max_concurent: unknown key (did you mean 'max_concurrent'?)"),
        ('[tune.search]\nmax_concurrent = 0',
         "[tune.search] max_concurrent: expected an integer >= 1, got 0"),
        ("[tune]\nschedular = 1",
         "[tune] schedular: unknown key (did you mean 'scheduler'?)"),
    ],
)  # fmt: skip
def test_bad_values_are_one_line_naming_the_field(tmp_path, tail, expected) -> None:
    if tail.startswith("[tune]\n"):  # a key of [tune] itself
        head = HEAD.rstrip() + "\n" + tail.split("\n", 1)[1] + "\n"
        assert error(tmp_path, "", head) == expected
    else:
        assert error(tmp_path, tail) == expected


def test_a_scheduler_needs_the_metric(tmp_path) -> None:
    head = HEAD.replace('metric = "score"\nmode = "max"\n', "")
    message = error(tmp_path, '[tune.scheduler]\nkind = "median_stopping"', head)
    assert message == (
        "[tune] metric: missing; [tune.scheduler] kind = 'median_stopping' ranks trials by it "
        "(set metric and mode)"
    )


@pytest.mark.parametrize(
    ("kind", "package"),
    [("optuna", "optuna"), ("hyperopt", "hyperopt"), ("bayesopt", "bayesian-optimization")],
)
def test_a_searcher_whose_package_is_missing_names_it(tmp_path, monkeypatch, kind, package):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert error(tmp_path, f'[tune.search]\nkind = "{kind}"') == (
        f"[tune.search] kind: {kind!r} needs the package {package!r}, which is not installed "
        f"(pip install {package})"
    )


def test_an_installed_searcher_checks_the_samplers_it_can_take(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    ok = load_spec(spec(tmp_path, '[tune.search]\nkind = "optuna"\nmax_concurrent = 2')).tune
    assert (ok.search.kind, ok.search.max_concurrent) == ("optuna", 2)
    grid = HEAD.replace("steps = 8", "steps = { grid = [4, 8] }")
    assert error(tmp_path, '[tune.search]\nkind = "hyperopt"', grid) == (
        "[param_space] steps.grid: the hyperopt searcher cannot take 'grid' values (it takes "
        "choice, uniform, loguniform, randint and constants)"
    )
    assert error(tmp_path, '[tune.search]\nkind = "bayesopt"').startswith(
        "[param_space] lr.loguniform: the bayesopt searcher cannot take 'loguniform' values"
    )
    no_metric = HEAD.replace('metric = "score"\nmode = "max"\n', "")
    assert error(tmp_path, '[tune.search]\nkind = "optuna"', no_metric) == (
        "[tune] metric: missing; [tune.search] kind = 'optuna' optimises it"
    )


def test_the_driver_builds_rays_objects(tmp_path) -> None:
    from ray.tune.schedulers import AsyncHyperBandScheduler, PopulationBasedTraining
    from ray.tune.search import BasicVariantGenerator

    from raytop.launch.tune_algorithms import build_scheduler, build_search, iteration_budget

    asha = load_spec(spec(tmp_path, """
        [tune.scheduler]
        kind = "asha"
        max_t = 8
        [tune.search]
        max_concurrent = 2
    """))  # fmt: skip
    scheduler = build_scheduler(asha)
    assert isinstance(scheduler, AsyncHyperBandScheduler)
    assert scheduler._max_t == 8
    assert isinstance(build_search(asha), BasicVariantGenerator)
    assert iteration_budget(asha) == 8
    pbt = load_spec(spec(tmp_path, """
        [tune.scheduler]
        kind = "pbt"
        perturbation_interval = 2
        hyperparam_mutations = { x = [1, 2], lr = { uniform = [0.1, 0.2] } }
    """))  # fmt: skip
    assert isinstance(build_scheduler(pbt), PopulationBasedTraining)
    plain = load_spec(spec(tmp_path, ""))
    assert build_scheduler(plain) is None and build_search(plain) is None
    assert iteration_budget(plain) is None
