# Two commands a fresh clone needs (README): `make run` and `make test`.
# Every install goes through constraints.txt, so torch is always the CPU build 2.13.0
# found on disk, never a multi-GB CUDA release.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt
STAMP  := $(VENV)/.installed
SPEC   ?= examples/torch_sweep.toml

.PHONY: run test test-fast test-compat compat-venv compat-smoke lint bench down

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test,torch]'
	# raytop's own bytecode, once: an editable install compiles none, and where
	# PYTHONDONTWRITEBYTECODE is set every process (each CLI call, driver and probed
	# worker) would compile the modules it imports again (~0.1 CPU-s a CLI call).
	$(BIN)/python -m compileall -q src
	touch $@

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
	$(BIN)/pytest -q -n 2 --dist loadgroup --durations=30

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
## targets of their own (compat-venv, compat-smoke): CI builds the venv while the suite
## installs, on the core pip leaves idle, and runs the smoke after the suite.
# python3.12 itself, or pyenv's 3.12 (whose python3.12 shim refuses unless selected).
COMPAT_PYTHON ?= $(or $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12)),python3.12)
COMPAT_RAY    ?= 2.60.0
COMPAT        ?= .venv-compat
test-compat: compat-venv compat-smoke

compat-venv:
	rm -rf $(COMPAT)
	$(COMPAT_PYTHON) -m venv $(COMPAT)
	$(COMPAT)/bin/python -m pip install --quiet --disable-pip-version-check \
		'ray[default,train,tune]==$(COMPAT_RAY)' pytest
	$(COMPAT)/bin/python -m pip install --quiet --disable-pip-version-check .

compat-smoke:
	RAYTOP_COMPAT_RAY=$(COMPAT_RAY) $(COMPAT)/bin/pytest -q -p no:cacheprovider \
		--confcutdir compat compat
