# The few verbs people type: run, test, lint, bench.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# Python 3.12 or newer (Django 6.1): the version in .python-version through pyenv, else the newest on PATH.
PYTHON ?= $(shell ./scripts/find-python)
export PYTEST_ADDOPTS ?=

.PHONY: help run test lint bench venv dev-venv browser migrate clean

help:
	@echo "make run    set up .venv, migrate, load demo data, serve on http://127.0.0.1:8000 (SQLite unless DATABASE_URL is set)"
	@echo "make test   install the dev tools, lint, check migrations, run the test suite (PostgreSQL when one answers)"
	@echo "make lint   ruff and mypy only"
	@echo "make bench  run the benchmarks against PostgreSQL"

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
	DEBUG=1 $(PY) manage.py runserver 127.0.0.1:8000

# Browser tests drive Debian's Chromium; it is installed here when missing (never downloaded by a test tool).
browser:
	@test -x /usr/bin/chromium || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi; }

lint: dev-venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DEBUG=1 $(BIN)/mypy chats masterbrain_site

test: dev-venv browser lint
	@db=$$(./scripts/test-database-url); \
	echo "==> Tests run on: $${db%%\?*}"; \
	DATABASE_URL= DEBUG=0 SECRET_KEY=test-only-not-secret $(PY) manage.py makemigrations --check --dry-run && \
	echo "==> Deployment checklist with production settings" && \
	DATABASE_URL= DEBUG=0 ALLOWED_HOSTS=audit.example.org SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	  $(PY) manage.py check --deploy --fail-level WARNING && \
	DATABASE_URL="$$db" $(BIN)/pytest $(PYTEST_ARGS)

bench: dev-venv
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var/staticfiles .mypy_cache .ruff_cache .pytest_cache
