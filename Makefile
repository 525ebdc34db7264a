# The few verbs people type: run, test, lint, bench.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# Python 3.12 or newer (Django 6.1): the version in .python-version through pyenv, else the newest on PATH.
PYTHON ?= $(shell ./scripts/find-python)
export PYTEST_ADDOPTS ?=

.PHONY: help run worker test test-all check lint bench bench-peers cluster fuzz venv dev-venv browser redis nginx migrate clean screenshots

# The suite runs on every core (pytest-xdist, a test database per worker); tests that share one fixed resource (a
# Redis database they flush) name an xdist_group and run one at a time on one worker.
PARALLEL ?= -n auto --dist loadgroup
RUN_ADDR ?= 127.0.0.1:8000

help:
	@echo "make run    set up .venv, migrate, load demo data, serve on http://127.0.0.1:8000 (SQLite unless DATABASE_URL is set)"
	@echo "make worker run a Celery worker for the background tasks against CELERY_BROKER_URL (e.g. redis://127.0.0.1:6379/1)"
	@echo "make test   install the dev tools, lint, check migrations, run every test in parallel (PostgreSQL when one answers)"
	@echo "make test-all  make test with the slow tests at full length (a minute of load instead of 10 s)"
	@echo "make check  the inner loop: lint, types and every test but the browser, server and slow ones, in parallel"
	@echo "make lint   ruff, mypy and the import contracts (lint-imports) only"
	@echo "make bench  run the benchmarks against PostgreSQL"
	@echo "make bench-peers  Label Studio 1.23.2 (installed into var/label-studio-venv) against our P5, same sitting"
	@echo "make screenshots  regenerate the README's screenshots (docs/screenshot-*.png) in both themes, in Chromium"
	@echo "make cluster  two app servers behind nginx: a minute of load through them (and one alone), the shared state"
	@echo "make fuzz   the fuzz and query-string suites with many more examples, random each run (nightly)"

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "No Python 3.12+ found. Install one (e.g. pyenv install 3.12) or set PYTHON=/path/to/python3.12." >&2; exit 1; }
	@echo "Using $(PYTHON) ($$($(PYTHON) --version))"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed
dev-venv: $(VENV)/.installed-dev

run: venv
	DEBUG=1 $(PY) manage.py migrate --no-input
	DEBUG=1 $(PY) manage.py seed_demo
	DEBUG=1 $(PY) manage.py create_demo_admin
	DEBUG=1 $(PY) manage.py runserver $(RUN_ADDR)

# A worker for the background tasks. Without CELERY_BROKER_URL the application runs them inline, so neither `make run`
# nor the tests need one.
worker: venv
	@test -n "$$CELERY_BROKER_URL" || { echo "Set CELERY_BROKER_URL, e.g. redis://127.0.0.1:6379/1" >&2; exit 1; }
	$(BIN)/celery -A masterbrain_site worker --loglevel=INFO --concurrency=$${CELERY_CONCURRENCY:-2}

# Browser tests drive Debian's Chromium; it is installed here when missing (never downloaded by a test tool).
browser:
	@test -x /usr/bin/chromium || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi; }

# The throttle tests count in Redis, production's shared cache; it is installed and started here when missing.
redis:
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { \
	  command -v redis-server >/dev/null || { \
	    echo "Installing Debian's redis-server for the throttle tests"; \
	    if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; \
	    else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; fi; }; \
	  echo "Starting Redis on 127.0.0.1:6379"; \
	  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 >/dev/null; \
	  for _ in $$(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done; }

# The cluster run (bench/cluster.py, tests/reliability/test_cluster.py) puts Debian's nginx in front of the servers;
# it is installed here when missing. Only the binary is used: the cluster starts its own nginx with a generated
# configuration on a free port of 127.0.0.1, whether or not the system's nginx service runs.
nginx:
	@test -x /usr/sbin/nginx || { \
	  echo "Installing Debian's nginx for the cluster tests"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; fi; }

lint: dev-venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DEBUG=1 $(BIN)/mypy chats masterbrain_site tests bench
	$(BIN)/lint-imports

test: dev-venv browser redis nginx lint
	@db=$$(./scripts/test-database-url); \
	echo "==> Tests run on: $${db%%\?*}"; \
	DATABASE_URL= DEBUG=0 SECRET_KEY=test-only-not-secret $(PY) manage.py makemigrations --check --dry-run && \
	echo "==> Deployment checklist with production settings" && \
	DATABASE_URL= DEBUG=0 ALLOWED_HOSTS=audit.example.org SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	  $(PY) manage.py check --deploy --fail-level WARNING && \
	DATABASE_URL="$$db" $(BIN)/pytest $(PARALLEL) --durations=25 $(PYTEST_ARGS)

# The tests marked slow run a short version in `make test` (10 seconds of load, 5 through the cluster); here every
# test runs once, the slow ones at full length (a minute, 15 seconds through the cluster).
test-all:
	MASTERBRAIN_LOAD_SECONDS=60 MASTERBRAIN_CLUSTER_SECONDS=15 $(MAKE) test

# The inner loop: what a change most likely breaks, in a few minutes. The browser tests, the tests that start
# servers of their own (tests/reliability, the benchmark's smoke run) and the slow ones are left to `make test`,
# and the property tests try 10 examples each instead of their full count (FUZZ_EXAMPLES sets it).
check: lint redis
	@db=$$(./scripts/test-database-url); \
	echo "==> Tests run on: $${db%%\?*}"; \
	DATABASE_URL="$$db" FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-10} $(BIN)/pytest $(PARALLEL) -m "not browser and not servers and not slow" --durations=10 $(PYTEST_ARGS)

# The README's screenshots, from the browser test fixtures (tests/browser/test_screenshots.py), light and dark.
screenshots: dev-venv browser
	MB_SCREENSHOT=1 $(PY) -m pytest -p no:cacheprovider -q tests/browser/test_screenshots.py

bench: dev-venv redis
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/read_audit.py
	$(PY) bench/audit_chain.py

# The peer measured in the same sitting: Label Studio 1.23.2 from PyPI in var/label-studio-venv (made once), on a
# PostgreSQL database of its own, importing P5's documents at 1 and 4 clients alternated with our P5 runs
# (bench/peers.py; PEERS_ARGS="--documents 200 --runs 1" for a quick check, "--reads" for its read timings too).
bench-peers: dev-venv
	$(PY) bench/peers.py $(PEERS_ARGS)

# Two instances behind nginx for CLUSTER_SECONDS of load, after as long against one instance alone.
CLUSTER_SECONDS ?= 60
cluster: dev-venv redis nginx
	$(PY) bench/cluster.py --seconds $(CLUSTER_SECONDS) $(CLUSTER_ARGS)

clean:
	rm -rf $(VENV) var/staticfiles .mypy_cache .ruff_cache .pytest_cache

# Nightly-style: hypothesis and schemathesis with many more examples and longer stateful sequences, on random
# seeds (failures are saved in .hypothesis/ and replayed first next time). CI runs the same tests bounded.
FUZZ_EXAMPLES ?= 300
fuzz: dev-venv
	@db=$$(./scripts/test-database-url); \
	CI= DATABASE_URL="$$db" FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_STEPS=40 \
	  $(BIN)/pytest tests/fuzz tests/security/test_query_strings.py -q $(PYTEST_ARGS)
