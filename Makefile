# Sophos: `make run` starts the server, `make test` runs every test. Both bootstrap first.
VENV := .venv
PY := $(VENV)/bin/python
# the interpreter that creates the venv; pyproject.toml's requires-python says the same minimum
PYTHON ?= python3
MIN_PYTHON := 3.11
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# test workers (pytest-xdist): twice the cores, since a test spends most of its time waiting on the
# processes, servers and browser it drives (docs/testing.md has the measurements); each worker gets
# its own PostgreSQL server, ports and tmp dirs
JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
# whole modules per worker (their module-scoped servers are built once), those of the slow tests first
XDIST = -n $(JOBS) --dist loadscope --no-loadscope-reorder
# what `make test-fast` leaves out: the PostgreSQL server, other processes, Chromium, the container image
FAST := not postgres and not processes and not browser and not deploy
NPM_DIR := config/mcp-servers
NPM_STAMP := $(NPM_DIR)/node_modules/.installed
WEB_DIR := src/entrypoints/http/web
WEB_STAMP := $(WEB_DIR)/node_modules/.installed

# Debian packages, as COMMAND=PACKAGE: installed when missing (as root), else one line says how.
NEED := scripts/need-system-packages
NODE_PACKAGES := node=nodejs npm=npm
TEST_PACKAGES := chromium=chromium pg_ctlcluster=postgresql
# `make test-deploy`: the image is built from a debootstrapped Debian and run by podman with runc
# (two of its containers share a PostgreSQL server the tests start)
DEPLOY_PACKAGES := podman=podman runc=runc debootstrap=debootstrap pg_ctlcluster=postgresql

.PHONY: install install-dev run demo test test-fast test-deploy need-deploy test-model test-phoenix test-unit lint bench bench-retrieval bench-concurrency bench-postgres bench-search bench-peers bench-graph-suite bench-startup bench-traces bench-usage soak soak-schedules soak-graphs clean-db check-python need-node need-test help

help:
	@echo "make run      start Sophos (creates .venv and installs everything first)"
	@echo "make demo     start Sophos on the offline demo model and tools (no model server needed)"
	@echo "make test     run the whole test suite (in parallel: JOBS=auto)"
	@echo "make test-fast   the edit loop: unit tests and the in-memory/SQLite contracts, no server or browser"
	@echo "make test-deploy   build the container image (deploy/) and run it; render the Helm chart (slow the first time)"
	@echo "make test-model  end-to-end against a real model (SmolLM2-135M on llama-server; builds it once, cached)"
	@echo "make test-phoenix  the traces in Arize Phoenix (installed once into a cache)"
	@echo "make bench    run the benchmarks and print their figures"
	@echo "make bench-concurrency   only the concurrency section (BENCH_BASELINE_REF=ref to compare with)"
	@echo "make bench-postgres      only the storage section on PostgreSQL (both backends, the bare official saver)"
	@echo "make bench-retrieval     only retrieval quality (recall@10, nDCG@10: hybrid, BM25, embedding) and 10,000-chunk timings"
	@echo "make bench-search        only the search queries (as typed too), 10,000 conversations on SQLite and PostgreSQL"
	@echo "make bench-peers   only the side-by-side run with the LangGraph dev server and bare LangGraph"
	@echo "make bench-graph-suite   LangGraph's own integration suite against langgraph dev and sophos serve (scores per test)"
	@echo "make bench-startup  only start-up: --help, a read command and serve, main against this tree"
	@echo "make bench-traces   what OTLP tracing costs a turn, A/B, with the load average (not part of make bench)"
	@echo "make bench-usage    usage totals against the fake model server's counts over 1,000 turns"
	@echo "make soak N=1000   the kill -9 torture test, long form (BACKEND=postgres: three processes on PostgreSQL; QUEUE=1: queued messages)"
	@echo "make soak-schedules N=200 SECONDS=600   the scheduled runs' kill -9 torture (two processes; BACKEND=postgres)"
	@echo "make soak-graphs N=100   kill -9 during the streamed runs of LangGraph's integration suite's graphs (hosted)"

CHECK_PYTHON = $(PYTHON) -c 'import sys; need = tuple(map(int, "$(MIN_PYTHON)".split("."))); \
	sys.exit(0 if sys.version_info >= need else "Sophos needs Python $(MIN_PYTHON) or newer, but $(PYTHON) is " \
	+ sys.version.split()[0] + "; install a newer one and run: make PYTHON=/path/to/python3")'

check-python:
	@$(CHECK_PYTHON)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(PY) || $(CHECK_PYTHON)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.lock 2>&1 | grep -v "is ignored" || true
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e . 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import langgraph, langchain_ollama, starlette, click, dependency_injector"
	touch $(STAMP)

# the test and lint tools, on top of the runtime: `make run` never installs them
$(DEV_STAMP): $(STAMP) requirements-dev.lock
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.lock -r requirements-dev.lock 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import pytest, xdist, pytest_asyncio, playwright, importlinter"
	touch $(DEV_STAMP)

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

$(WEB_STAMP): $(WEB_DIR)/package.json $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_STAMP)

# checked first, all at once, so that a missing package is one message before any long step
need-node:
	@$(NEED) $(NODE_PACKAGES)

need-test:
	@$(NEED) $(NODE_PACKAGES) $(TEST_PACKAGES)

need-deploy:
	@$(NEED) $(DEPLOY_PACKAGES)

install: need-node $(STAMP) $(NPM_STAMP) $(WEB_STAMP)

install-dev: install $(DEV_STAMP)

run: install
	$(VENV)/bin/sophos serve

# its own database: the demo's conversations never mix with `make run`'s
demo: install
	@echo "Demo: the offline demo model and tools, no model server needed (data in data/demo)"
	$(VENV)/bin/sophos --backend demo --tools demo --db data/demo/sophos.db serve

test: need-test install-dev
	PYTHONPATH=src $(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check -q src tests bench scripts
	scripts/agent-chat-ui build >/dev/null  # built once into ~/.cache/sophos-agentchat (tests/browser/test_agent_chat_ui.py)
	@# mypy on one core while the other writes bytecode once, since PYTHONDONTWRITEBYTECODE (CI
	@# images set it) would have every process compile what it imports again: the test modules
	@# as pytest rewrites their asserts (a collection; pytest reads that back even under the
	@# variable: each xdist worker collects in 4.5 s of CPU instead of 10), then src/ and tests/
	@# for the `sophos` processes the suite starts. A collection error is reported by the run.
	$(VENV)/bin/mypy & mypy=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest --collect-only -q -p no:cacheprovider > /dev/null || true; \
	$(PY) -m compileall -q -j 0 src tests > /dev/null; \
	wait $$mypy
	$(PY) -m pytest -q -m "not model and not deploy and not phoenix" --durations=25 $(XDIST)

# a real model: scripts/model-server fetches it and builds llama-server once, into a cache
# outside the work tree (SOPHOS_MODEL_CACHE, default ~/.cache/sophos-model); tests/model runs
# real `sophos serve` and CLI processes against it on both backends (docs/model.md)
test-model: install-dev
	scripts/model-server install
	SOPHOS_TEST_MODEL=1 $(PY) -m pytest -q -m model tests/model

# the image, the chart and the container runs (tests/deploy, marker `deploy`): the first run
# debootstraps the base (~6 min) and builds the image; both are cached in ~/.cache/sophos-deploy
# Arize Phoenix as the trace receiver: installed once (some 10 minutes, 850 MB) into a cache
# outside the work tree (SOPHOS_PHOENIX_CACHE, default ~/.cache/sophos-phoenix)
test-phoenix: install-dev
	$(PY) -m pytest -q -m phoenix tests/phoenix

test-deploy: need-deploy install-dev
	$(PY) -m pytest -q -m deploy tests/deploy

# in one process: two xdist workers spend more on start-up than they save here
test-fast: install-dev
	$(PY) -m pytest -q -m "$(FAST) and not model" tests/unit tests/contracts

test-unit: test-fast

lint: install-dev
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check -q src tests bench scripts
	PYTHONPATH=src $(VENV)/bin/lint-imports

# the peer (LangGraph's dev server) in a venv of its own: run by the benchmark, never imported
BENCH_VENV := .bench-venv
BENCH_STAMP := $(BENCH_VENV)/.installed
$(BENCH_STAMP): bench/peer/requirements.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --disable-pip-version-check -q -r bench/peer/requirements.txt 2>&1 | grep -v "is ignored" || true
	$(BENCH_VENV)/bin/langgraph --help > /dev/null
	touch $(BENCH_STAMP)

# the servers under measurement run on the runtime lock alone, as `make run` installs it (the dev
# tools in .venv would add their imports to every RSS and start-up figure)
SERVE_VENV := .bench-runtime
SERVE_STAMP := $(SERVE_VENV)/.installed
$(SERVE_STAMP): requirements.lock
	test -x $(SERVE_VENV)/bin/python || $(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_VENV)/bin/pip install --disable-pip-version-check -q -r requirements.lock 2>&1 | grep -v "is ignored" || true
	touch $(SERVE_STAMP)

# the retrieval benchmark's extra (wordllama's embedding model, bm25s) in .venv, never in the runtime lock
RETRIEVAL_STAMP := $(VENV)/.bench-retrieval-installed
$(RETRIEVAL_STAMP): $(STAMP) requirements-bench.lock
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.lock -r requirements-bench.lock 2>&1 | grep -v "is ignored" || true
	touch $(RETRIEVAL_STAMP)

bench: install $(BENCH_STAMP) $(SERVE_STAMP) $(RETRIEVAL_STAMP)
	PYTHONPATH=.:src $(PY) -m bench

bench-retrieval: install $(RETRIEVAL_STAMP) need-test
	PYTHONPATH=.:src $(PY) -m bench --only retrieval

bench-peers: install $(BENCH_STAMP) $(SERVE_STAMP)
	PYTHONPATH=.:src $(PY) -m bench --only peers
	PYTHONPATH=.:src $(PY) -m bench --only peers-hosted

# the suite's pytest is the dev tools' (install-dev); the peer is .bench-venv's `langgraph dev`
bench-graph-suite: install-dev $(BENCH_STAMP)
	PYTHONPATH=.:src $(PY) -m bench --only graph-suite

bench-concurrency: install $(SERVE_STAMP)
	PYTHONPATH=.:src $(PY) -m bench --only concurrency

bench-postgres: install
	PYTHONPATH=.:src $(PY) -m bench --only postgres

bench-startup: install $(SERVE_STAMP)
	PYTHONPATH=.:src $(PY) -m bench --only startup

bench-search: install
	PYTHONPATH=.:src $(PY) -m bench --only search

bench-traces: install
	PYTHONPATH=.:src $(PY) -m bench.traces --turns 100 --reps 4

bench-usage: install
	PYTHONPATH=.:src $(PY) -m bench.usage --turns 1000

N ?= 1000
BACKEND ?= sqlite
soak: install
	PYTHONPATH=.:src $(PY) -m tests.support.torture --kills $(N) --backend $(BACKEND) $(if $(QUEUE),--queue) $(if $(TRACES),--traces)

# scheduled runs: two processes, a schedule firing every second, N kills over SECONDS seconds
soak-schedules: install
	PYTHONPATH=.:src $(PY) -m tests.support.schedule_torture --kills $(N) --seconds $(or $(SECONDS),600) --backend $(BACKEND)

# the suite's graphs (langgraph-sdk's integration/langgraph.json) hosted by `sophos serve`, killed -9
# N times at random points of their streamed runs, re-joined after an AUTO_RESUME restart; a dated
# report goes to bench/results (the suite's packages: tests/support/graph-suite-requirements.txt)
soak-graphs: install-dev
	PYTHONPATH=.:src $(PY) -m tests.support.graph_torture --kills $(N) --seed $(or $(SEED),1) --results bench/results

clean-db:
	rm -rf data/db
