"""load_spec: a valid spec round-trips into the dataclasses; each bad input is one clear line;
reading a spec imports nothing and writes nothing (importing the entrypoint and probing the
storage are ``preflight``'s, tests/unit/test_preflight.py)."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from raytop.launch.spec import (
    DEFAULT_FUNCTION_TRIAL_RESOURCES,
    DEFAULT_TORCH_TRIAL_RESOURCES,
    MAX_NAME_BYTES,
    MAX_TRIALS,
    MAX_WORKERS,
    CheckpointSection,
    ClusterSection,
    FailureSection,
    Sampler,
    ScalingSection,
    SpecError,
    load_spec,
)
from raytop.launch.toml_text import MAX_TOML_BYTES
from tests.unit.bounded import raised_within

GOOD_MODULE = """
def train_func(config):
    return None

NOT_CALLABLE = 42
"""


@pytest.fixture
def make_spec(tmp_path: Path):
    """Write ``<tmp>/spec.toml`` plus a uniquely named entrypoint module next to it.

    ``{mod}`` in the spec text is replaced by the module's name; returns the spec path.
    """
    created: list[str] = []

    def _make(
        body: str,
        *,
        module_source: str = GOOD_MODULE,
        name: str = "spec.toml",
        trainable: bool = True,
        kind: str = "torch",
    ) -> Path:
        mod = f"raytop_spec_ep_{uuid.uuid4().hex[:12]}"
        created.append(mod)
        (tmp_path / f"{mod}.py").write_text(textwrap.dedent(module_source))
        text = textwrap.dedent(body)
        if trainable:
            text = f'[trainable]\nkind = "{kind}"\nentrypoint = "{{mod}}:train_func"\n\n' + text
        spec = tmp_path / name
        spec.write_text(text.replace("{mod}", mod))
        return spec

    path_before = list(sys.path)
    yield _make
    assert sys.path == path_before, "load_spec must restore sys.path"
    for mod in created:
        sys.modules.pop(mod, None)


def spec_error(spec: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message, message
    return message


# ----------------------------------------------------------------------------- valid


FULL_SPEC = """
[experiment]
name = "torch_sweep-1.b"
storage_path = "out/results"

[param_space]
lr = { loguniform = [1e-4, 1e-1] }
momentum = { uniform = [0, 1] }
layers = { grid = [1, 2, 3] }
optimizer = { choice = ["adam", "sgd"] }
seed = { randint = [0, 100] }
model = { constant = { width = 64, depth = 2 } }
epochs = 5
hidden = [64, 32]

[tune]
metric = "loss"
mode = "min"
num_samples = 4
max_concurrent_trials = 2
trial_resources = { cpu = 0.5, gpu = 0, memory = 1, accel = 2 }

[scaling]
num_workers = [1, 4]
use_gpu = true
resources_per_worker = { CPU = 2, GPU = 1 }
placement_strategy = "SPREAD"

[failure]
max_failures = 3
controller_failure_limit = -1
max_preemption_failures = 5
trial_max_failures = 1

[checkpoint]
num_to_keep = 2

[cluster]
num_cpus = 8
num_gpus = 0
resources = { accel = 4 }
"""


def test_full_spec_round_trips(make_spec, tmp_path: Path) -> None:
    spec = load_spec(make_spec(FULL_SPEC))

    assert spec.path == tmp_path / "spec.toml"
    assert spec.path.is_absolute()
    assert spec.spec_dir == tmp_path
    assert spec.experiment.name == "torch_sweep-1.b"
    storage = tmp_path / "out" / "results"
    assert spec.experiment.storage_path == str(storage)
    assert not (tmp_path / "out").exists()  # reading creates no folder
    assert spec.trainable.module not in sys.modules  # and imports nothing
    assert spec.experiment_path == f"{storage}/torch_sweep-1.b"

    assert spec.trainable.kind == "torch"
    assert spec.trainable.module.startswith("raytop_spec_ep_")
    assert spec.trainable.function == "train_func"

    assert spec.param_space == {
        "lr": Sampler("loguniform", (1e-4, 1e-1)),
        "momentum": Sampler("uniform", (0.0, 1.0)),
        "layers": Sampler("grid", (1, 2, 3)),
        "optimizer": Sampler("choice", ("adam", "sgd")),
        "seed": Sampler("randint", (0, 100)),
        "model": Sampler("constant", {"width": 64, "depth": 2}),
        "epochs": Sampler("constant", 5),
        "hidden": Sampler("constant", [64, 32]),
    }
    assert isinstance(spec.param_space["momentum"].values[0], float)

    assert spec.tune.metric == "loss"
    assert spec.tune.mode == "min"
    assert spec.tune.num_samples == 4
    assert spec.tune.max_concurrent_trials == 2
    assert spec.tune.trial_resources == {"CPU": 0.5, "GPU": 0, "memory": 1, "accel": 2}
    assert spec.trial_resources == spec.tune.trial_resources

    assert spec.scaling == ScalingSection(
        num_workers=(1, 4),
        use_gpu=True,
        resources_per_worker={"CPU": 2, "GPU": 1},
        placement_strategy="SPREAD",
    )
    assert spec.failure == FailureSection(
        max_failures=3,
        controller_failure_limit=-1,
        max_preemption_failures=5,
        trial_max_failures=1,
    )
    assert spec.checkpoint == CheckpointSection(num_to_keep=2)
    assert spec.cluster == ClusterSection(num_cpus=8, num_gpus=0, resources={"accel": 4})


def test_minimal_torch_spec_defaults(make_spec, tmp_path: Path) -> None:
    spec = load_spec(make_spec("", name="my_sweep.toml"))

    assert spec.experiment.name == "my_sweep"
    assert spec.experiment.storage_path == str(tmp_path / "results")
    assert spec.param_space == {}
    assert spec.tune.metric is None and spec.tune.mode is None
    assert spec.tune.num_samples == 1
    assert spec.tune.trial_resources is None
    assert spec.trial_resources == DEFAULT_TORCH_TRIAL_RESOURCES == {"CPU": 0, "memory": 1}
    assert spec.scaling == ScalingSection()
    assert spec.failure == FailureSection()
    assert spec.checkpoint == CheckpointSection()
    assert spec.cluster == ClusterSection()


def test_function_kind_default_trial_resources(make_spec) -> None:
    spec = load_spec(make_spec("", kind="function"))
    assert spec.trainable.kind == "function"
    assert spec.trial_resources == DEFAULT_FUNCTION_TRIAL_RESOURCES == {"CPU": 1}


def test_storage_uri_kept_as_is_and_absolute_path_kept(make_spec, tmp_path: Path) -> None:
    spec = load_spec(make_spec('[experiment]\nstorage_path = "s3://bucket/prefix/"\n'))
    assert spec.experiment.storage_path == "s3://bucket/prefix/"
    assert spec.experiment_path == "s3://bucket/prefix/spec"

    absolute = tmp_path / "elsewhere"
    spec = load_spec(make_spec(f'[experiment]\nstorage_path = "{absolute}"\n'))
    assert spec.experiment.storage_path == str(absolute)


def test_fixed_num_workers_and_lowercase_resources(make_spec) -> None:
    spec = load_spec(
        make_spec("[scaling]\nnum_workers = 2\nresources_per_worker = { cpu = 1, GPU = 0 }\n")
    )
    assert spec.scaling.num_workers == 2
    assert spec.scaling.resources_per_worker == {"CPU": 1, "GPU": 0}


# ----------------------------------------------------------------------------- file level


def test_missing_spec(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    assert spec_error(missing) == f"spec not found: {missing}"


def test_spec_is_a_directory(tmp_path: Path) -> None:
    message = spec_error(tmp_path)
    assert "directory" in message and str(tmp_path) in message


def bounded_error(spec: Path) -> str:
    """``spec_error``, failing (not hanging) when the read blocks."""
    message = str(raised_within(2, lambda: load_spec(spec), SpecError))
    assert "\n" not in message, message
    return message


def test_a_fifo_spec_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "spec.toml")
    assert bounded_error(tmp_path / "spec.toml") == (
        f"{tmp_path / 'spec.toml'}: not a regular file (a FIFO): not read"
    )


def test_a_device_spec_is_refused_unread(tmp_path: Path) -> None:
    assert bounded_error(Path("/dev/zero")) == (
        "/dev/zero: not a regular file (a character device): not read"
    )
    (tmp_path / "spec.toml").symlink_to("/dev/zero")
    assert bounded_error(tmp_path / "spec.toml").endswith("(a character device): not read")


def test_a_spec_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_bytes(b"# " + b"x" * MAX_TOML_BYTES)
    assert bounded_error(spec) == (
        f"{spec}: 1,048,578 bytes (1.0 MiB), over the 1,048,576 bytes (1.0 MiB) cap: not read"
    )


def test_a_spec_nested_twenty_thousand_deep_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text("x = " + "[" * 20_000 + "]" * 20_000 + "\n")
    assert "nested too deep" in bounded_error(spec)


def test_a_spec_starting_with_a_byte_order_mark_is_read(make_spec) -> None:
    spec = make_spec('[tune]\nmetric = "loss"\nmode = "min"\n')
    spec.write_bytes(b"\xef\xbb\xbf" + spec.read_bytes())
    assert load_spec(spec).tune.metric == "loss"


def test_the_spec_keeps_the_bytes_it_was_validated_from(make_spec) -> None:
    spec_path = make_spec("")
    read = spec_path.read_bytes()
    spec = load_spec(spec_path)
    spec_path.write_text("# changed after the read\n")
    assert spec.source == read


def test_toml_syntax_error(make_spec) -> None:
    spec = make_spec("[tune]\nmetric = loss\n")
    message = spec_error(spec)
    assert message.startswith(f"{spec}: TOML syntax error: ")
    assert "line 6" in message and "column" in message


def test_missing_trainable_section(make_spec) -> None:
    message = spec_error(make_spec('[tune]\nmetric = "loss"\n', trainable=False))
    assert "[trainable]" in message and "missing" in message


def test_unknown_section_suggests(make_spec) -> None:
    spec = make_spec('[tunes]\nmetric = "loss"\n')
    assert spec_error(spec) == f"{spec}: [tunes]: unknown section (did you mean '[tune]'?)"


def test_top_level_key_outside_a_section(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('num_samples = 3\n[trainable]\nkind = "torch"\nentrypoint = "m:f"\n')
    message = spec_error(spec)
    assert "num_samples" in message and "[tune] num_samples" in message


def test_unknown_key_suggests(make_spec) -> None:
    spec = make_spec('[tune]\nmetirc = "loss"\nmode = "min"\n')
    assert spec_error(spec) == f"{spec}: [tune] metirc: unknown key (did you mean 'metric'?)"


def test_unknown_key_without_close_match_lists_known_keys(make_spec) -> None:
    message = spec_error(make_spec("[checkpoint]\nzzz = 1\n"))
    assert "[checkpoint] zzz: unknown key" in message and "num_to_keep" in message


# ----------------------------------------------------------------------------- types / ranges


def test_wrong_type(make_spec) -> None:
    spec = make_spec('[tune]\nnum_samples = "4"\n')
    assert spec_error(spec) == (
        f"{spec}: [tune] num_samples: expected an integer >= 1, got '4' (a string)"
    )


def test_stop_iterations(make_spec) -> None:
    assert load_spec(make_spec("[tune]\nstop_iterations = 20\n")).tune.stop_iterations == 20
    assert load_spec(make_spec("")).tune.stop_iterations is None
    spec = make_spec("[tune]\nstop_iterations = 0\n")
    assert spec_error(spec) == f"{spec}: [tune] stop_iterations: expected an integer >= 1, got 0"
    spec = make_spec("[tune]\nstop_iterations = 2.5\n")
    assert spec_error(spec).startswith(f"{spec}: [tune] stop_iterations: expected an integer >= 1")


def test_out_of_range(make_spec) -> None:
    spec = make_spec("[tune]\nmax_concurrent_trials = -1\n")
    assert spec_error(spec) == (
        f"{spec}: [tune] max_concurrent_trials: expected an integer >= 1, got -1"
    )


def test_bool_is_not_an_integer(make_spec) -> None:
    spec = make_spec("[checkpoint]\nnum_to_keep = true\n")
    assert spec_error(spec) == (
        f"{spec}: [checkpoint] num_to_keep: expected an integer >= 1, got true (a boolean)"
    )


def test_failure_limits_below_minus_one(make_spec) -> None:
    message = spec_error(make_spec("[failure]\ncontroller_failure_limit = -2\n"))
    assert "[failure] controller_failure_limit: expected an integer >= -1, got -2" in message


def test_use_gpu_must_be_boolean(make_spec) -> None:
    message = spec_error(make_spec("[scaling]\nuse_gpu = 1\n"))
    assert "[scaling] use_gpu: expected a boolean" in message


def test_trial_resources_negative(make_spec) -> None:
    message = spec_error(make_spec("[tune]\ntrial_resources = { CPU = -1 }\n"))
    assert "[tune] trial_resources.CPU: expected a number >= 0, got -1" in message


def test_unsafe_experiment_name(make_spec) -> None:
    message = spec_error(make_spec('[experiment]\nname = "../escape"\n'))
    assert "[experiment] name: expected a safe folder name" in message


def test_unknown_enum_value_suggests(make_spec) -> None:
    message = spec_error(make_spec('[scaling]\nplacement_strategy = "pack"\n'))
    assert "[scaling] placement_strategy:" in message and "(did you mean 'PACK'?)" in message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("[0, 2]", "1 <= min <= max"), ("[3, 2]", "1 <= min <= max"), ("[1, 2, 3]", "[min, max]")],
)
def test_bad_elastic_num_workers(make_spec, value: str, fragment: str) -> None:
    message = spec_error(make_spec(f"[scaling]\nnum_workers = {value}\n"))
    assert "[scaling] num_workers:" in message and fragment in message


def test_metric_without_mode(make_spec) -> None:
    spec = make_spec('[tune]\nmetric = "loss"\n')
    message = spec_error(spec)
    assert message.startswith(f"{spec}: [tune] mode: ")
    assert "metric and mode must be given together" in message


def test_mode_without_metric(make_spec) -> None:
    message = spec_error(make_spec('[tune]\nmode = "max"\n'))
    assert "[tune] metric: " in message and "together" in message


def test_bad_mode(make_spec) -> None:
    message = spec_error(make_spec('[tune]\nmetric = "acc"\nmode = "maximum"\n'))
    assert "[tune] mode: expected one of 'min', 'max', got 'maximum'" in message


# ----------------------------------------------------------------------------- samplers


def test_unknown_sampler_suggests(make_spec) -> None:
    spec = make_spec("[param_space]\nlr = { unifrom = [0, 1] }\n")
    assert spec_error(spec) == (
        f"{spec}: [param_space] lr: unknown sampler 'unifrom' (did you mean 'uniform'?)"
    )


def test_sampler_wrong_arity(make_spec) -> None:
    message = spec_error(make_spec("[param_space]\nlr = { uniform = [0, 1, 2] }\n"))
    assert "[param_space] lr.uniform: expected [low, high]" in message and "3 values" in message


def test_sampler_low_not_below_high(make_spec) -> None:
    spec = make_spec("[param_space]\nlr = { uniform = [1, 1] }\n")
    assert spec_error(spec) == f"{spec}: [param_space] lr.uniform: expected low < high, got [1, 1]"


def test_loguniform_needs_positive_low(make_spec) -> None:
    message = spec_error(make_spec("[param_space]\nlr = { loguniform = [0, 1] }\n"))
    assert "[param_space] lr.loguniform: expected low > 0" in message


def test_randint_needs_integers(make_spec) -> None:
    message = spec_error(make_spec("[param_space]\nseed = { randint = [0, 1.5] }\n"))
    assert "[param_space] seed.randint:" in message and "integers" in message


def test_grid_needs_non_empty_list(make_spec) -> None:
    message = spec_error(make_spec("[param_space]\nbs = { grid = [] }\n"))
    assert "[param_space] bs.grid: expected a non-empty array" in message


def test_sampler_table_with_two_keys(make_spec) -> None:
    message = spec_error(make_spec("[param_space]\nbs = { grid = [1], choice = [2] }\n"))
    assert "[param_space] bs: expected a table with exactly one of" in message


# ----------------------------------------------------------------------------- GPU rule


def test_gpu_in_resources_per_worker_needs_use_gpu(make_spec) -> None:
    spec = make_spec("[scaling]\nresources_per_worker = { CPU = 1, gpu = 1 }\n")
    message = spec_error(spec)
    assert message.startswith(f"{spec}: [scaling] resources_per_worker.GPU: ")
    assert "use_gpu = true" in message


# ----------------------------------------------------------------------------- entrypoint


@pytest.mark.parametrize("entrypoint", ["train_func", "mod:", ":fn", "a b:fn", "mod:fn.x"])
def test_entrypoint_malformed(tmp_path: Path, entrypoint: str) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[trainable]\nkind = "torch"\nentrypoint = "{entrypoint}"\n')
    assert spec_error(spec) == (
        f"{spec}: [trainable] entrypoint: expected 'module:function' "
        f"(e.g. 'train:train_func'), got '{entrypoint}'"
    )


def test_reading_a_spec_runs_none_of_its_module(make_spec, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    spec = make_spec(
        '[experiment]\nstorage_path = "deep/results"\n',
        module_source=f"open({str(marker)!r}, 'w').close()\ndef train_func(config): pass\n",
    )
    before = {p.name for p in tmp_path.iterdir()}
    load_spec(spec)
    assert not marker.exists()
    assert {p.name for p in tmp_path.iterdir()} == before  # no storage folder, no probe


@pytest.mark.parametrize(
    "entrypoint", ["os:system", "subprocess:run", "builtins:exec", "os.path:join", "sys:exit"]
)
def test_entrypoint_in_the_standard_library_is_refused_without_importing(
    tmp_path: Path, entrypoint: str
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[trainable]\nkind = "function"\nentrypoint = "{entrypoint}"\n')
    top = entrypoint.split(":")[0].split(".")[0]
    assert spec_error(spec) == (
        f"{spec}: [trainable] entrypoint: '{entrypoint}' names the standard-library module "
        f"'{top}'; expected your own train module (e.g. 'train:train_func')"
    )


def test_a_module_named_like_no_stdlib_module_is_accepted(make_spec) -> None:
    assert load_spec(make_spec("")).trainable.module.startswith("raytop_spec_ep_")


# ----------------------------------------------------------------------------- bounds


def test_name_at_the_byte_limit_is_accepted_and_one_more_is_refused(make_spec) -> None:
    ok = "n" * MAX_NAME_BYTES
    assert load_spec(make_spec(f'[experiment]\nname = "{ok}"\n')).experiment.name == ok
    spec = make_spec(f'[experiment]\nname = "{ok}x"\n')
    assert spec_error(spec) == (
        f"{spec}: [experiment] name: {MAX_NAME_BYTES + 1} bytes, longer than the limit of "
        f"{MAX_NAME_BYTES}: the Train run folders raytop names after it (<name>-<trial_id>) "
        "must fit the 255-byte file-name limit"
    )


def test_the_longest_derived_file_name_fits_255_bytes() -> None:
    from raytop.rundir import train_run_name

    renamed = "n" * MAX_NAME_BYTES + "-20261203-041500"  # run --new-name's stamp
    # trial ids: 5 hex + '_' + the trial index, 5 digits up to MAX_TRIALS
    trial_id = f"abcde_{MAX_TRIALS - 1:05d}"
    assert len(train_run_name(renamed, trial_id).encode()) <= 255


def test_a_default_name_too_long_is_refused(make_spec) -> None:
    spec = make_spec("", name="s" * (MAX_NAME_BYTES + 1) + ".toml")
    message = spec_error(spec)
    assert "[experiment] name: " in message and "(the default: the file's stem)" in message


@pytest.mark.parametrize(
    ("storage", "fragment"),
    [
        ("s3://", "'s3://' names no bucket (expected 's3://bucket/path')"),
        ("s3:///prefix", "'s3:///prefix' names no bucket"),
        ("gs://?endpoint_override=x", "names no bucket (expected 'gs://bucket/path')"),
        ("s3:/bucket", "'s3:/bucket' looks like a mistyped URI (expected 's3://bucket/path')"),
        ("s3:bucket/p", "as written it would be a local folder named 's3:'"),
        ("file://relative", "expected 'file:///absolute/path', got 'file://relative'"),
    ],
)
def test_bad_storage_uris(make_spec, storage: str, fragment: str) -> None:
    spec = make_spec(f'[experiment]\nstorage_path = "{storage}"\n')
    message = spec_error(spec)
    assert message.startswith(f"{spec}: [experiment] storage_path: "), message
    assert fragment in message, message


def test_good_storage_uris_are_kept(make_spec) -> None:
    for uri in ("s3://bucket", "s3://b/p?endpoint_override=127.0.0.1:9000", "file:///data/r"):
        spec = load_spec(make_spec(f'[experiment]\nstorage_path = "{uri}"\n'))
        assert spec.experiment.storage_path == uri


def test_num_samples_at_the_cap_is_accepted_above_refused(make_spec) -> None:
    spec = load_spec(make_spec(f"[tune]\nnum_samples = {MAX_TRIALS}\n"))
    assert spec.tune.num_samples == MAX_TRIALS
    spec = make_spec("[tune]\nnum_samples = 1_000_000_000\n")
    assert spec_error(spec) == (
        f"{spec}: [tune] num_samples: 1,000,000,000 is above the limit "
        f"(the limit is {MAX_TRIALS:,} trials)"
    )


def test_num_samples_as_a_float_is_refused(make_spec) -> None:
    message = spec_error(make_spec("[tune]\nnum_samples = 1e9\n"))
    assert "[tune] num_samples: expected an integer >= 1, got 1000000000.0 (a float)" in message


def test_the_grid_product_times_num_samples_is_capped(make_spec) -> None:
    grids = "\n".join(f"p{i} = {{ grid = [{', '.join(str(v) for v in range(10))}] }}"
                      for i in range(5))  # fmt: skip
    spec = make_spec(f"[param_space]\n{grids}\n[tune]\nnum_samples = 2\n")
    assert spec_error(spec) == (
        f"{spec}: [param_space]: the grid (10 x 10 x 10 x 10 x 10) x [tune] num_samples (2) "
        f"makes 200,000 trials; the limit is {MAX_TRIALS:,} trials"
    )
    ok = make_spec(f"[param_space]\n{grids}\n")
    assert load_spec(ok).tune.num_samples == 1  # 100,000 trials: at the cap


def test_a_saved_copy_resolves_against_the_original_folder(make_spec, tmp_path: Path) -> None:
    spec = make_spec('[experiment]\nname = "exp"\nstorage_path = "results"\n')
    saved = tmp_path / "exp_results" / ".raytop" / "spec.toml"
    saved.parent.mkdir(parents=True)
    saved.write_bytes(spec.read_bytes())
    copy = load_spec(saved, base_dir=tmp_path)
    assert copy.experiment.storage_path == str(tmp_path / "results")
    assert copy.spec_dir == tmp_path and copy.path == saved
    assert load_spec(saved).spec_dir == saved.parent  # on its own, the copy's folder


@pytest.mark.parametrize("value", [f"{MAX_WORKERS + 1}", f"[1, {MAX_WORKERS + 1}]"])
def test_num_workers_above_the_cap_is_refused(make_spec, value: str) -> None:
    spec = make_spec(f"[scaling]\nnum_workers = {value}\n")
    assert spec_error(spec) == (
        f"{spec}: [scaling] num_workers: {MAX_WORKERS + 1:,} workers is above the limit of "
        f"{MAX_WORKERS:,} per trial"
    )
    at_cap = make_spec(f"[scaling]\nnum_workers = [1, {MAX_WORKERS}]\n")
    assert load_spec(at_cap).scaling.num_workers == (1, MAX_WORKERS)
