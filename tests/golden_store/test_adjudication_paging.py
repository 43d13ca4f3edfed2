"""The adjudication queue and history paged in SQL (issue 19) hold exactly the rows the
whole-table queries they replaced returned, in the same order, page after page."""

from __future__ import annotations

import random

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.live import adjudication, judging

OLD_QUEUE = (
    "SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.stratum, q.text AS query_text, p.n_annotators, "
    "min(g.created_at) AS first_label_at, max(g.created_at) AS last_label_at "
    "FROM pending_grades p JOIN queries q USING (query_id) "
    "JOIN current_grades g USING (query_id, doc_id, start, \"end\") "
    "WHERE ? IS NULL OR q.stratum = ? "
    "GROUP BY ALL ORDER BY q.stratum, first_label_at, p.query_id, p.doc_id, p.start")
OLD_HISTORY = (
    "SELECT a.query_id, a.doc_id, a.start, a.\"end\", q.stratum, a.grade AS final_grade, a.rationale, "
    "a.actor AS decided_by, a.created_at AS decided_at, a.rubric_version, "
    "string_agg(g.actor || '=' || g.grade, ', ' ORDER BY g.actor) AS annotator_grades "
    "FROM adjudications a LEFT JOIN queries q USING (query_id) "
    "LEFT JOIN current_grades g USING (query_id, doc_id, start, \"end\") "
    "GROUP BY ALL ORDER BY decided_at DESC")


def test_paged_queue_and_history_equal_the_whole_table_queries(store):
    load_demo(store, cli_user(), workflows=True)
    rng = random.Random(7)
    items = store.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")
    for q, d, s, e in rng.sample(items, min(80, len(items))):
        for who in rng.sample(["ann", "bob", "cy"], rng.randint(2, 3)):
            judging.record(store, who, q, d, s, e, op="grade", grade=rng.randint(0, 3))
        if rng.random() < 0.1:
            store.write(lambda cur, it=(q, d, s, e): judging.insert_tx(cur, "bob", *it, op="retract"))
    pending = adjudication.queue(store)
    for it in pending[::4]:
        adjudication.decide(store, "lead", it["query_id"], it["doc_id"], it["start"], it["end"], 2, "why")
    for stratum in (None, *adjudication.pending_by_stratum(store)):
        old = store.read_dicts(OLD_QUEUE, [stratum, stratum])
        assert adjudication.queue(store, stratum) == old
        paged = [r for off in range(0, len(old) + 7, 7) for r in adjudication.queue(store, stratum, limit=7, offset=off)]
        assert paged == old
    assert adjudication.pending_by_stratum(store) == {
        s: n for s, n in store.read("SELECT q.stratum, count(*) FROM pending_grades p JOIN queries q USING (query_id) "
                                    "GROUP BY 1")}
    old_h = store.read_dicts(OLD_HISTORY)
    assert len(old_h) >= 5
    key = lambda r: (str(r["decided_at"]), r["query_id"], r["doc_id"], r["start"], r["end"])  # noqa: E731
    assert sorted(adjudication.history(store), key=key) == sorted(old_h, key=key)
    paged = [r for off in range(0, len(old_h) + 3, 3) for r in adjudication.history(store, 3, off)]
    assert sorted(paged, key=key) == sorted(old_h, key=key)
