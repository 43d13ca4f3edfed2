# Two commands for a newcomer: `make run` and `make test`. Nothing but Python 3.10+ needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test install install-test browser postgres bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e .
	touch $@

$(TSTAMP): pyproject.toml $(STAMP)
	$(PIP) install --quiet -e '.[test]'
	touch $@

install: $(STAMP)
install-test: $(TSTAMP)

## make run: create the venv if needed, install, start the app on $GOLDEN_DB (default ./golden.duckdb);
## make run PORT=8600 picks the port (default: $STREAMLIT_SERVER_PORT, else 8501)
PORT ?=
run: $(STAMP)
	$(VENV)/bin/golden serve$(if $(strip $(PORT)), --port $(strip $(PORT)))

## make test: install the test dependencies and run the whole suite (the PostgreSQL tests
## start their own throwaway cluster from Debian's postgresql; without it they are skipped)
test: $(TSTAMP) browser postgres
	$(PY) -m pytest

# The real-browser test drives Debian's chromium (Playwright cannot download browsers here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser test"; \
	    apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "note: the browser test needs Debian's chromium: sudo apt-get install chromium"; \
	  fi; }

# The PostgreSQL half of the suite runs Debian's server binaries (initdb, pg_ctl) as the
# unprivileged postgres user in a temp dir; the package's own cluster is not used.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's postgresql for the PostgreSQL tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	  else \
	    echo "note: the PostgreSQL tests need Debian's postgresql: sudo apt-get install postgresql"; \
	  fi; }

bench: $(STAMP)
	$(PY) scripts/bench_store.py
	$(PY) scripts/bench_spans.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
