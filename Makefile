# Sophos: `make run` starts the server, `make test` runs every test. Both bootstrap first.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NPM_DIR := config/mcp-servers
NPM_STAMP := $(NPM_DIR)/node_modules/.installed
WEB_DIR := src/entrypoints/http/web
WEB_STAMP := $(WEB_DIR)/node_modules/.installed

.PHONY: install run test test-unit lint bench bench-concurrency soak clean-db help

help:
	@echo "make run      start Sophos (creates .venv and installs everything first)"
	@echo "make test     run the whole test suite"
	@echo "make bench    run the benchmarks and print their figures"
	@echo "make bench-concurrency   only the concurrency section (BENCH_BASELINE_REF=ref to compare with)"
	@echo "make soak N=1000   the kill -9 torture test, long form"

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.lock 2>&1 | grep -v "is ignored" || true
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e . 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import langgraph, langchain_ollama, starlette, click, dependency_injector"
	touch $(STAMP)

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

$(WEB_STAMP): $(WEB_DIR)/package.json $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_STAMP)

install: $(STAMP) $(NPM_STAMP) $(WEB_STAMP)

run: install
	$(VENV)/bin/sophos serve

test: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check src tests bench
	$(PY) -m pytest -q

test-unit: install
	$(PY) -m pytest -q tests/unit tests/contracts

lint: install
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/lint-imports

bench: install
	PYTHONPATH=.:src $(PY) -m bench

bench-concurrency: install
	PYTHONPATH=.:src $(PY) -m bench --only concurrency

N ?= 1000
soak: install
	PYTHONPATH=.:src $(PY) -m tests.support.torture --kills $(N)

clean-db:
	rm -rf data/db
