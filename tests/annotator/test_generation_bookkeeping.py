"""Signing in, signing out and "Got it" on the rubric banner leave the store's generation
where it was (issue 19): pages cache whole-store figures under ``Store.generation()``, and
when each sign-in moved it, every sign-in of a team of 20 threw every cached figure away
(Home, Agreement, Runs & pool recomputed from millions of events). A label still moves it."""

from __future__ import annotations

import pytest

from annotator.labeling import agreement, rounds
from annotator.people import identity, sessions
from annotator.process import cache
from annotator.demo import load_demo
from golden_store.live import judging, rubric
from golden_store.live import rounds as store_rounds


@pytest.mark.parametrize("any_store", ["duckdb", "postgresql"], indirect=True)
def test_sign_in_and_banner_keep_the_cache_a_label_refreshes_it(any_store):
    s = any_store
    admin = identity.create_user(s, None, "admin", ["admin"], password="0123456789ab")
    lead = identity.create_user(s, admin, "lead", ["lead"], password="0123456789ab")
    load_demo(s, admin, workflows=True)
    cache.clear()
    first = agreement.compute(s, lead)
    gen = s.generation()
    token = sessions.start(s, lead)  # a sign-in
    assert s.generation() == gen
    rubric.mark_seen(s, "lead", 1)  # the changelog banner's "Got it"
    sessions.end(s, token)  # a sign-out
    assert s.generation() == gen
    assert agreement.compute(s, lead) is first  # the cached figures survive
    # the Rounds tab's free-item count, in SQL on this engine, equals the items' list
    assert rounds.free_item_count(s, lead) == len(store_rounds.free_items(s))
    q, d, a, b = s.read_one("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3 LIMIT 1")
    judging.record(s, "ann99", q, d, a, b, op="grade", grade=2)
    assert s.generation() != gen
    assert agreement.compute(s, lead) is not first
    cache.clear()
