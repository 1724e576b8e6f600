# Two commands a fresh clone needs (README): `make run` and `make test`.
# Every install goes through constraints.txt, so torch is always the CPU build 2.13.0
# found on disk, never a multi-GB CUDA release.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# --no-compile: pip would compile all ~15,800 modules of the venv (~29 CPU-s, ~40 s of the
# install); the suite imports ~2,500 of them. What they import is compiled once below.
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile \
          -c constraints.txt
STAMP  := $(VENV)/.installed
SPEC   ?= examples/torch_sweep.toml

.PHONY: run test test-fast test-compat compat-venv compat-smoke lint bench down

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test,torch]'
	# Bytecode, once, even where PYTHONDONTWRITEBYTECODE is set (every process, each CLI
	# call, driver, Ray worker and dashboard module, would compile what it imports again):
	# raytop's own, and what raytop, Ray's workers and dashboard, Tune, Train and torch
	# import, by importing it (~2,200 modules, ~6 CPU-s).
	$(BIN)/python -m compileall -q src
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "$(WARM)"
	touch $@

WARM := import raytop.cli, raytop.tui.app, raytop.probe, ray.train.torch, ray.tune, ray.data, \
        torch, ray.dashboard.head, ray.dashboard.agent, ray._private.workers.default_worker

## make run: install, start the embedded cluster if none is reachable, launch the torch
## sweep in a detached driver and open the TUI on it (quit with q; the run keeps going).
run: $(STAMP)
	$(BIN)/raytop run $(SPEC) --new-name

## make test: install what the tests need and run the whole suite (lint first). Two
## pytest-xdist workers: every Ray test on one (tests/conftest.py), the rest on the other.
test: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks compat
	$(BIN)/ruff format --check src tests examples benchmarks compat
	$(BIN)/lint-imports --no-cache
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n 2 --dist loadgroup --durations=30

## make test-fast: the development loop: lint, the layer contracts, then every test that
## needs no Ray cluster (unit, Textual Pilot and snapshot tests), in about three minutes.
test-fast: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks compat
	$(BIN)/lint-imports --no-cache
	$(BIN)/pytest -q tests/unit tests/tui

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests examples benchmarks
	$(BIN)/ruff format src tests examples benchmarks

## make bench: the figures in docs/PERFORMANCE.md.
bench: $(STAMP)
	$(BIN)/python benchmarks/freshness_bench.py
	$(BIN)/python benchmarks/ledger_bench.py
	$(BIN)/python benchmarks/plan_bench.py
	$(BIN)/python benchmarks/storage_bench.py
	$(BIN)/python benchmarks/scale_bench.py

## make down: stop the embedded cluster raytop started (never any other).
down: $(STAMP)
	$(BIN)/raytop down

## make test-compat: another Python and Ray line than the suite's (default Python 3.12,
## Ray 2.60.0): a venv that has that Ray first, raytop installed into it (its Ray kept, no
## torch), then a real-cluster smoke (compat/test_ray_line.py). Its two halves are
## targets of their own (compat-venv, compat-smoke): CI runs both beside the suite, from
## its install on (the core pip leaves idle), and shows their output after the suite's.
# python3.12 itself, or pyenv's 3.12 (whose python3.12 shim refuses unless selected).
COMPAT_PYTHON ?= $(or $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12)),python3.12)
COMPAT_RAY    ?= 2.60.0
COMPAT        ?= .venv-compat
test-compat: compat-venv compat-smoke

compat-venv:
	rm -rf $(COMPAT)
	$(COMPAT_PYTHON) -m venv $(COMPAT)
	$(COMPAT)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
		'ray[default,train,tune]==$(COMPAT_RAY)' pytest
	$(COMPAT)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile .

compat-smoke:
	PYTHONDONTWRITEBYTECODE= RAYTOP_COMPAT_RAY=$(COMPAT_RAY) $(COMPAT)/bin/pytest -q -p no:cacheprovider \
		--confcutdir compat compat
