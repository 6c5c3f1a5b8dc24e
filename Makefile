# `make test` is what CI runs (.ci/run); `make demo` runs the main job.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
DEPS    = $(VENV)/.deps-installed
LINKS   = $(VENV)/.links-installed

.PHONY: test lint typecheck layers unit live demo bench clean

test: lint typecheck layers unit

# Dependencies come from pyproject.toml alone; rerun when it changes.
$(DEPS): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77" wheel
	$(PY) -m pip install -q -e '.[dev]' --config-settings editable_mode=strict \
		> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; false)
	touch $@

# The strict editable install links each file; relink when a package gains or loses one.
$(LINKS): $(DEPS) core adapters shell shell/testing
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . \
		--config-settings editable_mode=strict > $(VENV)/relink.log 2>&1 \
		|| (cat $(VENV)/relink.log; false)
	touch $@

lint: $(LINKS)
	$(VENV)/bin/ruff check core adapters shell tests
	$(VENV)/bin/ruff format --check core adapters shell tests

typecheck: $(LINKS)
	$(VENV)/bin/mypy -p toolreel.core -p toolreel.adapters

layers: $(LINKS)
	$(VENV)/bin/lint-imports

# Tests marked `live` talk to real providers: never in `make test`, only here.
unit: $(LINKS)
	$(VENV)/bin/pytest -m "not live"

live: $(LINKS)
	$(VENV)/bin/pytest -m live -rs

demo: $(LINKS)
	$(PY) -m toolreel.shell.demo

bench: $(LINKS)
	$(PY) tests/bench/bench_step.py

clean:
	rm -rf $(VENV) build *.egg-info
