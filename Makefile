# StarForge developer commands. `make demo` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench lint services clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[console,dev]'
	@touch $(STAMP)

install: $(STAMP)

## demo: run the main job end to end on the embedded default (console on loopback, local executor)
demo: $(STAMP)
	$(BIN)/python scripts/demo.py

## test: the whole suite on 4 workers (most tests wait on real processes); suites whose services are missing are
## skipped loudly (CI requires them all)
test: $(STAMP)
	$(BIN)/python -m pytest -n 4 --dist loadscope

## bench: print benchmark figures against their targets (never part of the tests)
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests bench scripts
	$(BIN)/python -m mypy

## services: provision PostgreSQL on loopback for the database suites (what .ci/run does first)
services:
	scripts/services.sh up

clean:
	rm -rf $(VENV) .pytest_cache .services build dist
