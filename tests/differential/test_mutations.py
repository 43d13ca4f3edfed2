"""The harness catches a broken studio: each test breaks one formula or one filter on purpose
(monkeypatch, in this process: the CLI runs in it) and asserts that check_world, on worlds
drawn from a fixed seed (derandomized hypothesis, no shrinking), reports a mismatch within a
few stores. A mutation the harness let through would mean the oracles do not look where the
issue's bugs were."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from tests.differential import stats
from tests.differential.harness import check_world
from tests.differential.world import worlds

TRIES = 12  # worlds drawn (fixed seed) before a mutation counts as missed


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    from golden_store.db.store import Store

    path = tmp_path_factory.mktemp("mut-template") / "migrated.duckdb"
    Store.open(path).close()
    return path


def caught(tmp_path_factory, template, parts, where=lambda w: True, share_neg=None) -> list[str]:
    """The mismatches of the first world (fixed seed) in which the harness sees one."""
    found: list[list[str]] = []

    def fails(w) -> bool:
        if not where(w):
            return False
        rep = check_world(w, tmp_path_factory.mktemp("mut"), template, parts)
        stats.record(rep, mutation=True)
        if rep.mismatches:
            found.append(rep.mismatches)
        return bool(rep.mismatches)

    try:
        find(worlds(share_neg=share_neg), fails, settings=settings(max_examples=TRIES, derandomize=True, database=None,
                                                phases=[Phase.generate], deadline=None,
                                                suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        pytest.fail(f"the harness did not catch the mutation in {TRIES} generated stores")
    return found[0]


def has_unanswerable_labels(w) -> bool:
    return any(q in set(w.unanswerable) for (q, _d) in w.imported)


def test_the_unanswerable_filter_made_a_no_op_is_caught(monkeypatch, tmp_path_factory, template):
    """golden score scores unanswerable questions again (their judged-0 rows as 0s)."""
    import golden_store.scoring.golden as golden_mod

    monkeypatch.setattr(golden_mod, "unanswerable_ids", lambda gs: set())
    got = caught(tmp_path_factory, template, ("score",), has_unanswerable_labels, 0.5)
    assert any("scored questions" in m or "n_queries" in m for m in got), got[:3]


def test_ndcg_with_exponential_gain_is_caught(monkeypatch, tmp_path_factory, template):
    """nDCG computed with 2^g - 1 instead of trec_eval's linear gain."""
    from golden_store.scoring import formulas

    def exp_gain(self, grades, m):
        return np.where(grades >= 0, np.exp2(grades.astype(np.float64)) - 1.0, 0.0)

    monkeypatch.setattr(formulas.Ranked, "gain_of", exp_gain)
    got = caught(tmp_path_factory, template, ("score",))
    assert any("nDCG@10" in m for m in got), got[:3]


def test_a_document_grade_on_every_chunk_is_caught(monkeypatch, tmp_path_factory, template):
    """The bug of issue 36 item 3 put back: a whole-document grade makes every chunk of the
    document in the question's ranking relevant (N units, not one)."""
    import golden_store.scoring.golden as golden_mod
    from golden_store.scoring.passage_units import unit_qrels

    def every_chunk(span_qrels, documents, subsumed, run, query_ids):
        out = unit_qrels(span_qrels, documents, subsumed, run, query_ids)
        for q, pid, doc in zip(run["query_id"].astype(str), run["passage_id"].astype(str), run["doc_id"].astype(str)):
            if (q, doc) in documents and q in out:
                out[q][pid] = max(out[q].get(pid, 0), documents[(q, doc)])
        return out

    monkeypatch.setattr(golden_mod, "unit_qrels", every_chunk)
    got = caught(tmp_path_factory, template, ("passages",), lambda w: len(w.imported) >= 3)
    assert any(m.startswith("passages") for m in got), got[:3]


def test_the_export_keeping_unanswerable_rows_is_caught(monkeypatch, tmp_path_factory, template):
    """The bug of issue 36 item 4 put back: the exported qrels keep the unanswerable rows."""
    import golden_store.versions.export as export_mod

    monkeypatch.setattr(export_mod, "split_unanswerable", lambda qrels, neg: ({q: dict(d) for q, d in qrels.items()}, {}))
    got = caught(tmp_path_factory, template, ("score", "export"), has_unanswerable_labels, 0.5)
    assert any(m.startswith("export") for m in got), got[:3]


def test_a_bootstrap_p_in_small_cells_is_caught(monkeypatch, tmp_path_factory, template):
    """The bug of issue 36 item 2 put back: cells under 30 take the bootstrap's p, not the
    exact sign-flip test's."""
    import golden_store.scoring.compare as compare_mod
    from golden_store.scoring.stats import paired_bootstrap

    def bootstrap_p(d, n, seed):
        d = np.asarray(d, dtype=float)
        return paired_bootstrap(np.zeros_like(d), d, n, seed).p, "exact"

    monkeypatch.setattr(compare_mod, "sign_flip_p", bootstrap_p)
    got = caught(tmp_path_factory, template, ("compare",), lambda w: len(w.queries) >= 12)
    assert any("sign-flip p" in m for m in got), got[:3]


def test_pool_status_averaging_unanswerable_questions_in_is_caught(monkeypatch, tmp_path_factory, template):
    """The bug of issue 36 item 5 put back: pool status' AP and Bpref count unanswerable
    questions (each a 0)."""
    import golden_store.live.pool as pool_mod

    monkeypatch.setattr(pool_mod, "_POOL_STATUS_SQL", pool_mod._POOL_STATUS_SQL.replace(
        "WHERE query_id NOT IN (SELECT query_id FROM queries WHERE NOT answerable)", ""))
    real = pool_mod.pool_status

    def with_unanswerable(store, **kw):
        out = real(store, **kw)
        with store.cursor() as cur:
            n = cur.execute("SELECT count(DISTINCT query_id) FROM final_grades").fetchone()[0]
        for e in out["runs"].values():
            for k in ("ap", "bpref"):
                if k in e and out["ap_queries"]:
                    e[k] = e[k] * out["ap_queries"] / n
        return out

    monkeypatch.setattr(pool_mod, "pool_status", with_unanswerable)
    got = caught(tmp_path_factory, template, ("pool",), has_unanswerable_labels, 0.5)
    assert any(m.startswith("pool status") for m in got), got[:3]
