"""The differential harness (issue 36, the lasting fix): random small stores, every number the
studio gives held against an oracle that shares no code with it.

Each example is one generated store (``tests/differential/world.py``): documents, strata of
1-30 questions, answerable and unanswerable ones, evidence quotes, imported TREC document
grades, people's passage grades (agreeing and not), document runs with ties and repeated
documents, passage runs over several chunkers. On it (``tests/differential/harness.py``):

1. ``golden score --version V --run R`` (per question, mean and per stratum of nDCG@10,
   R(rel=2)@10, AP(rel=2), P(rel=2)@5, RR(rel=2)) = pytrec_eval and ir_measures on qrels
   derived from the generated labels; a run repeating a document for a scored question is
   refused (trec_eval's rule);
2. ``golden export V --format trec|beir``: the exported qrels are the oracle's, and
   pytrec_eval on them at the level of their scoring note reproduces ``golden score``;
3. passage runs, every chunker under any_overlap and contains_span, through the CLI (JSONL)
   and ``evaluate`` (explicit ids, tied scores) = a from-scratch unit counter + pytrec_eval;
4. ``golden compare`` of two recorded runs: n, delta, W/L/T per cell, "too few" under 6,
   exact sign-flip p (scipy.stats.permutation_test) under 30, BH (scipy
   false_discovery_control), the interval near scipy's bootstrap, verdicts, gate, exit code;
   a measure not recorded exits 2;
5. ``golden pool status``: AP and Bpref per run = pytrec_eval map / bpref at level 2 on the
   answerable questions' final grades.

(The manifest's kappas, oracle 6, are not generated here: a double-annotated round needs the
rounds workflow's assignment and blind grading steps per item; tests/golden_store/
test_manifest_kappa_names.py and the Agreement page tests hold them against sklearn.)

Budget: GOLDEN_DIFF_EXAMPLES stores (default 15; ``make test`` sets 40). The number of
stores generated is in the terminal summary.
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings

from tests.differential import stats
from tests.differential.harness import check_world
from tests.differential.world import worlds

EXAMPLES = int(os.environ.get("GOLDEN_DIFF_EXAMPLES", "15"))


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory):
    """An empty store at the current schema, copied for every generated store."""
    from golden_store.db.store import Store

    path = tmp_path_factory.mktemp("diff-template") / "migrated.duckdb"
    Store.open(path).close()
    return path


def test_every_number_equals_its_oracle(migrated_template, tmp_path_factory):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(worlds())
    def run(w):
        root = tmp_path_factory.mktemp("world")
        rep = check_world(w, root, migrated_template)
        stats.record(rep)
        assert not rep.mismatches, f"{w.describe()}: {len(rep.mismatches)} mismatch(es):\n" + "\n".join(
            rep.mismatches[:20])
        shutil.rmtree(root, ignore_errors=True)

    run()


def test_the_oracles_share_no_code_with_the_studio():
    """oracle.py imports the standard library and the reference tools only, never the studio."""
    import ast
    import sys
    from pathlib import Path

    tree = ast.parse((Path(__file__).parent / "oracle.py").read_text())
    roots = {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    roots |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    allowed = {"numpy", "scipy", "pytrec_eval", "ir_measures", "pandas", "pyarrow", "__future__"}
    assert roots - allowed <= set(sys.stdlib_module_names), roots - allowed
