# Two commands for a newcomer: `make run` and `make test`. Nothing but Python 3.10+ needed.
# While working: `make check` (ruff + mypy + the fast tests on 2 workers; 1,447 tests. 2026-12-07 on this
# 2-core machine shared with other jobs, the tests alone: 4:29-4:48 at load 3-4, 7:35 at load 6-9).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test check install install-test browser postgres bench clean

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

## make check: the fast loop before a push: ruff, then the tests that need neither a browser
## nor PostgreSQL and are not slow, on DuckDB, on 2 workers (markers: tests/conftest.py).
## make check PYTEST_ARGS='-x tests/golden_store' narrows it. --dist worksteal: a worker that
## runs out of tests takes some of the other's, so one long test (the differential harness)
## does not leave a core idle at the end. The end-to-end page and flow tests are `slow` (list and
## rule in tests/conftest.py); make check CHECK_MARKERS="not browser and not postgres" adds them.
## The differential harness draws 6 stores here, 40 in make test.
CHECK_MARKERS := not slow and not browser and not postgres
PYTEST_ARGS ?=
check: $(TSTAMP)
	$(VENV)/bin/ruff check annotator golden_store app_pages scripts tests app.py
	$(VENV)/bin/mypy
	GOLDEN_DIFF_EXAMPLES=$${GOLDEN_DIFF_EXAMPLES:-6} GOLDEN_TEST_ENGINE=duckdb $(PY) -m pytest -q -m "$(CHECK_MARKERS)" -n 2 --dist worksteal $(PYTEST_ARGS)

## make test: install the test dependencies and run the whole suite on DuckDB (with the tests
## that start their own PostgreSQL), then the tests that open a store again on PostgreSQL
## (GOLDEN_TEST_ENGINE=postgresql, -m "store or postgres": every store a throwaway cluster's
## database; pure tests have nothing to prove on a second engine). Without Debian's postgresql
## the second pass is skipped with a line saying how to run it, and `make test` still succeeds
## (REQUIRE_PG=1, as CI sets it, makes that a failure instead). Each pass prints its 25
## slowest tests, so the next slow one is seen the day it lands; TEST_ARGS adds pytest options.
## Each pass runs its tests without a browser on 2 workers (--dist worksteal, as make check),
## then its browser tests one at a time: a Chromium beside another Streamlit server on 2 cores
## waits on the CPU, not on the app, and a browser test's deadlines are for the app.
TEST_ARGS ?= --durations=25
PARALLEL := -n 2 --dist worksteal
test: $(TSTAMP) browser postgres
	GOLDEN_DIFF_EXAMPLES=$${GOLDEN_DIFF_EXAMPLES:-40} GOLDEN_TEST_ENGINE=duckdb $(PY) -m pytest -m "not browser" $(PARALLEL) $(TEST_ARGS)
	GOLDEN_TEST_ENGINE=duckdb $(PY) -m pytest -m browser $(TEST_ARGS)
	@why="$$($(PY) -m tests.pg)"; \
	if [ -z "$$why" ]; then \
	  echo "== the tests that open a store again, on PostgreSQL (GOLDEN_TEST_ENGINE=postgresql)"; \
	  GOLDEN_TEST_ENGINE=postgresql $(PY) -m pytest -m "(store or postgres) and not browser" $(PARALLEL) $(TEST_ARGS) && \
	  GOLDEN_TEST_ENGINE=postgresql $(PY) -m pytest -m "(store or postgres) and browser" $(TEST_ARGS); \
	else \
	  echo "PostgreSQL pass skipped ($$why): to run it, sudo apt-get install postgresql, then make test"; \
	  if [ -n "$(REQUIRE_PG)" ]; then exit 1; fi; \
	fi

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
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache
