"""The pool items page as leads and engineers read it (issue 19): cached per store generation,
so a grade written since shows on the next read; annotators may not read it (it names the runs
that pooled each item: judging is blind to systems)."""

from __future__ import annotations

import pytest

from annotator.evaluation import runs_import
from annotator.people import identity
from annotator.people.roles import PermissionDenied
from golden_store.live import judging
from tests.golden_store import pool_gen


def test_the_cached_page_follows_a_new_grade_and_annotators_may_not_read_it(store, tmp_path):
    pool_gen.fill(store, tmp_path, seed=8, n_queries=12, graded_share=0.5)
    admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789ab")
    lead = identity.create_user(store, admin, "lead1", ["lead"], password="0123456789ab")
    ann = identity.create_user(store, admin, "ann1", ["annotator"], password="0123456789ab")
    total, page = runs_import.pool_items_page(store, lead, status="unjudged", limit=5)
    assert total > 5 and len(page) == 5
    q, d, s, e = page.iloc[0][["query_id", "doc_id", "start", "end"]]
    page.loc[0, "query_id"] = "changed by the caller"  # a caller's change never reaches the cache
    assert runs_import.pool_items_page(store, lead, status="unjudged", limit=5)[1].iloc[0]["query_id"] == q
    judging.record(store, "ann1", q, d, int(s), int(e), op="grade", grade=2)
    again, page2 = runs_import.pool_items_page(store, lead, status="unjudged", limit=5)
    assert again == total - 1
    assert (q, d, s, e) not in set(zip(page2["query_id"], page2["doc_id"], page2["start"], page2["end"]))
    with pytest.raises(PermissionDenied):
        runs_import.pool_items_page(store, ann)
