"""preflight: what only a launch or an actual resume does with a spec. It imports the
entrypoint (each import problem is one line) and proves local storage writable with a
probe created exclusively, under an unpredictable name, never through a symlink."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from raytop.launch.preflight import preflight
from raytop.launch.spec import RunSpec, SpecError, load_spec


@pytest.fixture
def make_spec(tmp_path: Path):
    """``<tmp>/spec.toml`` and a uniquely named entrypoint module beside it; returns the
    spec path and the module name."""
    created: list[str] = []

    def _make(module_source: str = "def train_func(config):\n    pass\n", body: str = ""):
        mod = f"raytop_preflight_ep_{uuid.uuid4().hex[:12]}"
        created.append(mod)
        (tmp_path / f"{mod}.py").write_text(textwrap.dedent(module_source))
        spec = tmp_path / "spec.toml"
        spec.write_text(
            f'[trainable]\nkind = "torch"\nentrypoint = "{mod}:train_func"\n\n'
            + textwrap.dedent(body)
        )
        return spec, mod

    path_before = list(sys.path)
    yield _make
    assert sys.path == path_before, "preflight must restore sys.path"
    for mod in created:
        sys.modules.pop(mod, None)


def preflight_error(spec: RunSpec) -> str:
    with pytest.raises(SpecError) as info:
        preflight(spec)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message, message
    return message


def probes(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".raytop-write-probe")]


# ----------------------------------------------------------------------------- entrypoint


def test_a_good_spec_passes_and_imports_its_module(make_spec, tmp_path: Path) -> None:
    spec_path, mod = make_spec()
    spec = load_spec(spec_path)
    assert mod not in sys.modules
    preflight(spec)
    assert mod in sys.modules
    assert (tmp_path / "results").is_dir()  # the storage folder exists now...
    assert probes(tmp_path / "results") == []  # ...and the probe is gone
    preflight(spec)  # twice is fine (launch after start_resume)


def test_entrypoint_module_not_importable(make_spec) -> None:
    spec_path, mod = make_spec("def train_func(config)\n    pass\n")
    message = preflight_error(load_spec(spec_path))
    assert message.startswith(
        f"{spec_path}: [trainable] entrypoint '{mod}:train_func': cannot import module "
        f"'{mod}': SyntaxError: "
    )


def test_entrypoint_module_raises_on_import(make_spec) -> None:
    spec_path, _ = make_spec("raise RuntimeError('boom\\nsecond line')\n")
    message = preflight_error(load_spec(spec_path))
    assert "cannot import module" in message and "RuntimeError: boom second line" in message


def test_entrypoint_module_exits_on_import(make_spec) -> None:
    spec_path, _ = make_spec("raise SystemExit(3)\n")
    assert "cannot import module" in preflight_error(load_spec(spec_path))


def test_entrypoint_module_missing(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.toml"
    mod = f"raytop_preflight_missing_{uuid.uuid4().hex[:8]}"
    spec_path.write_text(f'[trainable]\nkind = "function"\nentrypoint = "{mod}:f"\n')
    message = preflight_error(load_spec(spec_path))
    assert f"cannot import module '{mod}': ModuleNotFoundError: " in message


def test_entrypoint_function_missing(make_spec) -> None:
    spec_path, mod = make_spec("def other(config):\n    pass\n")
    assert preflight_error(load_spec(spec_path)) == (
        f"{spec_path}: [trainable] entrypoint '{mod}:train_func': "
        f"'train_func' not found in module '{mod}'"
    )


def test_entrypoint_not_callable(make_spec) -> None:
    spec_path, mod = make_spec("train_func = 42\n")
    assert preflight_error(load_spec(spec_path)) == (
        f"{spec_path}: [trainable] entrypoint '{mod}:train_func': "
        f"'{mod}:train_func' is not callable"
    )


def test_a_saved_copy_imports_from_the_original_folder(make_spec, tmp_path: Path) -> None:
    spec_path, mod = make_spec(body='[experiment]\nname = "exp"\n')
    saved = tmp_path / "results" / "exp" / ".raytop" / "spec.toml"
    saved.parent.mkdir(parents=True)
    saved.write_bytes(spec_path.read_bytes())
    preflight(load_spec(saved, base_dir=tmp_path))
    sys.modules.pop(mod)
    with pytest.raises(SpecError, match="ModuleNotFoundError"):
        preflight(load_spec(saved))  # on its own, the copy's folder has no module


# ----------------------------------------------------------------------------- storage


def storage_spec(make_spec, storage: Path | str) -> RunSpec:
    spec_path, _ = make_spec(body=f'[experiment]\nstorage_path = "{storage}"\n')
    return load_spec(spec_path)


def test_storage_path_not_writable(make_spec, tmp_path: Path) -> None:
    # Tests run as root, so chmod cannot make a folder unwritable; a regular file in the
    # middle of the path fails for everyone.
    (tmp_path / "afile").write_text("not a folder")
    spec = storage_spec(make_spec, "afile/sub")
    target = tmp_path / "afile" / "sub"
    message = preflight_error(spec)
    assert message.startswith(f"{spec.path}: [experiment] storage_path '{target}': not writable (")
    assert message.endswith(")")


def test_storage_folder_is_a_file(make_spec, tmp_path: Path) -> None:
    (tmp_path / "results").write_text("a file")
    spec = storage_spec(make_spec, "results")
    assert preflight_error(spec) == (
        f"{spec.path}: [experiment] storage_path '{tmp_path / 'results'}': "
        "not a folder (a file is in the way)"
    )
    assert (tmp_path / "results").read_text() == "a file"


def test_storage_folder_is_a_symlink_loop(make_spec, tmp_path: Path) -> None:
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    spec = storage_spec(make_spec, "loop_a")
    assert preflight_error(spec) == (
        f"{spec.path}: [experiment] storage_path '{tmp_path / 'loop_a'}': "
        "not a folder (Too many levels of symbolic links)"
    )


def test_storage_folder_is_a_dangling_symlink(make_spec, tmp_path: Path) -> None:
    os.symlink(tmp_path / "gone", tmp_path / "results")
    spec = storage_spec(make_spec, "results")
    message = preflight_error(spec)
    assert message.endswith("not a folder (No such file or directory)"), message
    assert not (tmp_path / "gone").exists()


def test_a_storage_folder_reached_through_a_symlink_is_fine(make_spec, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "results")
    preflight(storage_spec(make_spec, "results"))
    assert probes(tmp_path / "real") == []


def test_the_probe_never_writes_through_a_planted_symlink(make_spec, tmp_path: Path) -> None:
    """The old probe name was ``.raytop-write-probe-<pid>``: a link planted there sent the
    write to its target. Now the name is random, and an exclusive no-follow create would
    refuse a link even where it guessed right."""
    storage = tmp_path / "results"
    storage.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    planted = storage / f".raytop-write-probe-{os.getpid()}"
    os.symlink(victim, planted)
    preflight(storage_spec(make_spec, storage))
    assert victim.read_text() == "precious"
    assert planted.is_symlink() and os.readlink(planted) == str(victim)
    assert probes(storage) == [planted.name]  # ours was removed; the planted link is left


def test_probe_names_are_unpredictable(make_spec, tmp_path: Path, monkeypatch) -> None:
    seen: list[str] = []
    real_open = os.open

    def recording_open(path, flags, mode=0o777, *, dir_fd=None):
        if str(path).startswith(".raytop-write-probe"):
            seen.append(str(path))
            assert flags & os.O_EXCL and flags & os.O_NOFOLLOW and flags & os.O_CREAT
            assert mode == 0o600 and dir_fd is not None
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", recording_open)
    spec = storage_spec(make_spec, "results")
    preflight(spec)
    preflight(spec)
    assert len(seen) == 2 and seen[0] != seen[1]
    assert all(len(name) >= len(".raytop-write-probe-") + 32 for name in seen)


def test_remote_storage_is_not_probed(make_spec, tmp_path: Path) -> None:
    preflight(storage_spec(make_spec, "s3://bucket/prefix"))
    assert not any(p.name.startswith("s3") for p in tmp_path.iterdir())


def test_file_uri_storage_is_probed_as_a_local_folder(make_spec, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    spec = storage_spec(make_spec, f"file://{tmp_path}/afile")
    assert "not a folder (a file is in the way)" in preflight_error(spec)


def test_a_torch_spec_where_torch_is_missing_says_what_to_install(make_spec, monkeypatch):
    """raytop does not bring torch (an image's own must not be replaced): a torch spec on
    a Python without it is one line, before the entrypoint (which would import torch) is
    imported; a function spec needs none."""
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else found(name, *a))  # fmt: skip
    spec_path, mod = make_spec()
    message = preflight_error(load_spec(spec_path))
    assert message.endswith(
        "[trainable] kind 'torch': needs PyTorch, which this Python does not have: install "
        "the torch build for your hardware (pip install torch, or pip install 'raytop[torch]')"
    ), message
    assert mod not in sys.modules
    spec_path.write_text(spec_path.read_text().replace('kind = "torch"', 'kind = "function"'))
    preflight(load_spec(spec_path))
