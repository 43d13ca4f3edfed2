"""The differential harness's line in the terminal summary: how many stores it generated and
how many numbers disagreed with their oracle (summed over xdist workers). The hooks are
imported by tests/conftest.py: a conftest in this folder is not loaded by the xdist
controller of a whole-suite run (make check, make test), so its summary would never print."""

from __future__ import annotations

import json

import pytest

from tests.differential import stats


def pytest_sessionfinish(session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the counts to the controller
        workeroutput["golden_differential"] = json.dumps(stats.TOTALS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    got = getattr(node, "workeroutput", {}).get("golden_differential")
    if got:
        stats.merge(json.loads(got))


def pytest_terminal_summary(terminalreporter) -> None:
    t = stats.TOTALS
    if t["stores"] or t["mutation_stores"]:
        terminalreporter.write_line(
            f"differential harness: {t['stores']} generated stores, {t['numbers']} numbers compared with their "
            f"oracles, {t['mismatches']} mismatches; mutation check: {t['mutation_stores']} stores")
