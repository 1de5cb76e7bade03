# StarForge developer commands. `make demo` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RAY_STAMP := $(VENV)/.installed-ray

.PHONY: install install-ray demo demo-trl test bench lint services clean

# scripts/install_venv.py installs with uv (pip's own package sources passed on), else with pip; bytecode is written
# on first import, not at install (compiling every module of every dependency costs ~25 s of CPU for nothing)
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python scripts/install_venv.py $(VENV) console,dev
	@touch $(STAMP)

install: $(STAMP)

## install-ray: add the `ray` extra (the Ray executor; its suites and the Ray head of scripts/services.sh need it)
$(RAY_STAMP): $(STAMP)
	$(BIN)/python scripts/install_venv.py $(VENV) ray
	@touch $(RAY_STAMP)

install-ray: $(RAY_STAMP)

## demo: run the main job end to end on the embedded default (console on loopback, local executor)
demo: $(STAMP)
	$(BIN)/python scripts/demo.py

## demo-trl: TRL SFT end to end on the CPU (pre-builds the TRL runtime once per machine: about a minute the first time)
demo-trl: $(STAMP)
	$(BIN)/python scripts/demo_trl.py

## test: the whole suite on $(TEST_WORKERS) workers, one module per unit, longest modules first (tests/conftest.py:
## UNIT_SECONDS); suites whose services are missing are skipped loudly (CI requires them all). The suite is CPU-bound
## on the 2-core machine: 3 workers measured fastest (2, 4, 5 and 6 were slower). Bytecode is written (git-ignored
## __pycache__) even where PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds of Python processes, and each
## would otherwise compile StarForge again, and every worker would rewrite every test module.
TEST_WORKERS ?= 3
test: $(RAY_STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

## bench: print benchmark figures against their targets (never part of the tests)
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests bench scripts
	$(BIN)/python -m mypy
	PYTHONPATH=src $(BIN)/lint-imports --no-cache

## services: provision PostgreSQL on loopback for the database suites (what .ci/run does first)
services:
	scripts/services.sh up

clean:
	rm -rf $(VENV) .pytest_cache .services build dist
