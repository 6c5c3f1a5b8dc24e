# `make test` is what CI runs (.ci/run); `make demo` runs the main job.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
DEPS    = $(VENV)/.deps-installed
LINKS   = $(VENV)/.links-installed

.PHONY: test lint typecheck layers docs docs-serve unit live demo bench compat mutate clean

test: lint typecheck layers docs unit

# Dependencies come from pyproject.toml alone; rerun when it changes.
$(DEPS): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77" wheel
	$(PY) -m pip install -q -e '.[dev]' --config-settings editable_mode=strict \
		> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; false)
	touch $@

# The strict editable install links each file; relink when a package gains or loses one.
$(LINKS): $(DEPS) core adapters adapters/_providers shell shell/testing shell/scripted shell/cli \
		shell/cli/toplevel \
		shell/otel shell/web shell/open_agent shell/mcp shell/a2a shell/temporal $(wildcard shell/web/static)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . \
		--config-settings editable_mode=strict > $(VENV)/relink.log 2>&1 \
		|| (cat $(VENV)/relink.log; false)
	touch $@

lint: $(LINKS)
	$(VENV)/bin/ruff check core adapters shell tests examples docs/hooks
	$(VENV)/bin/ruff format --check core adapters shell tests examples docs/hooks

# Everything shipped, strict (pyproject.toml [tool.mypy]); tests/typing checks users' view.
typecheck: $(LINKS)
	$(VENV)/bin/mypy -p toolreel.core -p toolreel.adapters -p toolreel.shell -p toolreel.testing \
		-p toolreel.otel -p toolreel.web -p toolreel.open_agent -p toolreel.mcp -p toolreel.a2a -p toolreel.temporal \
		-p toolreel.cli \
		-m toolreel.__main__
	$(VENV)/bin/mypy examples docs/hooks

layers: $(LINKS)
	$(VENV)/bin/lint-imports

# The docs site (mkdocs.yml, docs/) into build/site, strict: a broken link, a reference
# that does not resolve or a docstring that does not parse fails it. Needs no network.
export NO_MKDOCS_2_WARNING = 1
DOCS_ADDRESS ?= 127.0.0.1:8001
docs: $(LINKS)
	$(VENV)/bin/mkdocs build --strict --quiet

docs-serve: $(LINKS)
	$(VENV)/bin/mkdocs serve --strict --dev-addr $(DOCS_ADDRESS)

# Tests marked `live` talk to real providers: never in `make test`, only here.
unit: $(LINKS)
	$(VENV)/bin/pytest -m "not live"

live: $(LINKS)
	$(VENV)/bin/pytest -m live -rs

demo: $(LINKS)
	$(PY) -m toolreel.shell.demo

bench: $(LINKS)
	$(PY) tests/bench/bench_step.py

# open-agent-sdk 0.4.2's own tests run against toolreel.open_agent (issue 13); on demand
# only, never in `make test`: pip downloads its sdist and installs its test requirements.
# open_agent's own suite installs its test requirements (pytest-asyncio, ...): into a venv
# of its own, so they never reach .venv and `make test`.
COMPAT_VENV = build/compat-venv
compat:
	test -x $(COMPAT_VENV)/bin/python || $(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/python -m pip install -q --upgrade pip "setuptools>=77" wheel
	$(COMPAT_VENV)/bin/python -m pip install -q '.[openai]' "pytest>=8.0"
	$(COMPAT_VENV)/bin/python -m pip install -q --no-deps --force-reinstall .
	VENV=$(COMPAT_VENV) tests/compat/open_agent_suite.sh

# Mutation testing with mutmut, on demand only: never part of `make test` or CI. It is
# slow (the core's thirteen rule modules, ~3,000 mutants, took ~15 min on 2 cores against
# tests/core alone; adapters/ and their tests add more); narrow it with MUTANTS (globs
# over mutant names) and MUTATE_TESTS (test folders or files), e.g.
#   make mutate MUTANTS='toolreel.core._step.*' MUTATE_TESTS=tests/core
# mutmut mutates copies, never core/ or adapters/ themselves. It runs in build/mutation/,
# where src/toolreel/{core,adapters} link to the sources so that its copies are what
# `import toolreel.core` loads (see [tool.mutmut] in pyproject.toml). Results are kept
# there (a rerun retests only what changed); to read a survivor:
#   cd build/mutation && ../../.venv/bin/mutmut show <mutant name>
MUTATION = build/mutation
MUTMUT   = $(VENV)/.mutmut-installed
MUTANTS ?=
MUTATE_TESTS ?=

$(MUTMUT): $(DEPS)
	$(PY) -m pip install -q -e '.[mutation]' --config-settings editable_mode=strict \
		> $(VENV)/mutmut-install.log 2>&1 || (cat $(VENV)/mutmut-install.log; false)
	touch $@

mutate: $(MUTMUT) $(LINKS)
	mkdir -p $(MUTATION)/src/toolreel
	ln -sfn ../../../../core $(MUTATION)/src/toolreel/core
	ln -sfn ../../../../adapters $(MUTATION)/src/toolreel/adapters
	ln -sfn ../../tests $(MUTATION)/tests
	sed 's|^pytest_add_cli_args_test_selection = .*|$(if $(MUTATE_TESTS),pytest_add_cli_args_test_selection = [$(foreach t,$(MUTATE_TESTS),"$(t)",)],&)|' \
		pyproject.toml > $(MUTATION)/pyproject.toml
	cd $(MUTATION) && nice -n 10 $(abspath $(VENV))/bin/mutmut run $(MUTANTS)
	cd $(MUTATION) && $(abspath $(VENV))/bin/mutmut results

clean:
	rm -rf $(VENV) build *.egg-info
