"""The live broken-label check (Home, Evidence, freeze) sends only the labels that may be off
their document to Python (issue 19): it must still list exactly what checking every label in
Python lists. Each way a label breaks is made here on the demo store, beside labels that only
look broken to SQL (a quote that matches up to canonicalization, a span after characters of
several bytes, kinds other than exact), and the check is compared with the all-Python
reference below, for everyone and for one annotator's view."""

from __future__ import annotations

from golden_store.live import grade_state
from golden_store.live.drift import stale_grades_tx
from golden_store.freezing import broken_labels
from golden_store.db.store import utcnow
from golden_store.versions import short_repr, span_problem


def _reference(cur, viewer: str | None) -> list[str]:
    """Every current quote and final grade checked in Python (the check before issue 19)."""
    out: list[str] = []
    blind = ("" if viewer is None else
             " WHERE e.author = $viewer OR e.query_id NOT IN (SELECT query_id FROM unsettled_evidence_questions)")
    params = {"viewer": viewer} if viewer is not None else None
    for qid, eid, doc, start, end, quote, kind, stale, raw in cur.execute(
            "SELECT e.query_id, e.evidence_id, e.doc_id, e.start, e.\"end\", e.quote, e.match_kind, "
            "e.doc_sha256 IS NOT NULL AND e.doc_sha256 <> d.canonical_sha256, d.raw_text "
            f"FROM current_evidence e SEMI JOIN queries q USING (query_id) LEFT JOIN documents d USING (doc_id){blind}",
            params).fetchall():
        where = f"query {qid} evidence {eid} ({short_repr(quote)})"
        if raw is None:
            out.append(f"{where}: document {doc!r} is not in the corpus")
        elif stale:
            out.append(f"{where}: was placed on an earlier text of {doc!r} and could not be re-placed; "
                       f"edit or retract the quote")
        elif why := span_problem(raw, start, end, quote, kind):
            out.append(f"{where}: {why} in {doc!r}")
    own = ("" if viewer is None else
           " SEMI JOIN (SELECT query_id, doc_id, start, \"end\" FROM current_grades WHERE actor = $viewer) m "
           "USING (query_id, doc_id, start, \"end\")")
    for qid, doc, start, end, n in cur.execute(
            "SELECT j.query_id, j.doc_id, j.start, j.\"end\", length(d.raw_text) FROM final_grades j "
            f"SEMI JOIN queries q USING (query_id){own} LEFT JOIN documents d USING (doc_id)", params).fetchall():
        if n is None:
            out.append(f"query {qid} judgment: document {doc!r} is not in the corpus")
        elif not 0 <= start < end <= n:
            out.append(f"query {qid} judgment: passage [{start}, {end}) is outside document {doc!r}")
    for qid, doc, start, end, actor, _text, _decision in stale_grades_tx(cur):
        if viewer is None or actor == viewer:
            out.append(f"query {qid} judgment by {actor} of {doc}[{start}:{end}]: made on an earlier text of the "
                       f"document; re-judge the passage")
    return out


def _evidence(store) -> list[tuple]:
    return store.read("SELECT e.event_id, e.query_id, e.doc_id, e.start, e.\"end\", e.quote FROM current_evidence e "
                      "WHERE e.match_kind = 'exact' ORDER BY e.event_id")


def _break_labels(store) -> None:
    """One label per way of breaking (and of only looking broken), by editing the rows."""
    ev = _evidence(store)
    assert len(ev) >= 9, "the demo store has too few exact quotes for this test"

    def upd(sql: str, params: list) -> None:
        store.write(lambda cur: cur.execute(sql, params))

    (e0, _, _, s0, t0, q0), (e1, *_), (e2, *_), (e3, *_), (e4, *_), (e5, *_), (e6, *_), (e7, _, d7, s7, t7, q7), (e8, *_) = ev[:9]
    # 0: same text up to canonicalization (spaces doubled): fine in Python, not verbatim for SQL
    upd("UPDATE evidence_events SET quote = ? WHERE event_id = ?", [q0.replace(" ", "  ", 1) + " ", e0])
    # 1: the quote no longer at its offsets; 2: the span past the document's end; 3: no start
    upd("UPDATE evidence_events SET quote = 'nothing like the text here' WHERE event_id = ?", [e1])
    upd("UPDATE evidence_events SET \"end\" = 10000000 WHERE event_id = ?", [e2])
    upd("UPDATE evidence_events SET start = NULL WHERE event_id = ?", [e3])
    # 4: a document not in the corpus; 5: placed on an earlier text of its document
    upd("UPDATE evidence_events SET doc_id = 'no-such-document' WHERE event_id = ?", [e4])
    upd("UPDATE evidence_events SET doc_sha256 = 'sha256:earlier' WHERE event_id = ?", [e5])
    # 6: a fuzzy placement with a quote that differs from the text: not a problem
    upd("UPDATE evidence_events SET match_kind = 'fuzzy', quote = 'paraphrase' WHERE event_id = ?", [e6])
    # 7: characters of several bytes before the span, offsets moved with them (still verbatim)
    raw7 = store.read_one("SELECT raw_text FROM documents WHERE doc_id = ?", [d7])[0]
    assert raw7[s7:t7] == q7
    lead = "é😀ß"
    upd("UPDATE documents SET raw_text = ? WHERE doc_id = ?", [lead + raw7, d7])
    upd("UPDATE evidence_events SET start = start + ?, \"end\" = \"end\" + ? WHERE doc_id = ?",
        [len(lead), len(lead), d7])
    # 8: the quote one character off its offsets, in a document with characters of several bytes
    upd("UPDATE evidence_events SET start = start + 1 WHERE event_id = ?", [e8])
    # a judgment past its document's end, one on a document not in the corpus
    docs = store.read("SELECT doc_id FROM documents ORDER BY doc_id LIMIT 2")
    qid = store.read_one("SELECT query_id FROM queries ORDER BY query_id")[0]
    g = [(qid, docs[0][0], 0, 5), (qid, docs[1][0], 0, 5)]
    for q, d, a, b in g + [(qid, docs[0][0], 5, 9)]:
        for actor in ("ann", "bob"):
            store.write(lambda cur, q=q, d=d, a=a, b=b, actor=actor: grade_state.append_tx(
                cur, query_id=q, doc_id=d, start=a, end=b, op="grade", grade=2, actor=actor, created_at=utcnow(),
                doc_sha256=None, rubric_version=1))
    upd("UPDATE grade_item_state SET \"end\" = 10000000 WHERE query_id = ? AND doc_id = ? AND start = ? "
        "AND \"end\" = ?", list(g[0]))
    upd("UPDATE grade_item_state SET doc_id = 'gone-document' WHERE query_id = ? AND doc_id = ? AND start = ? "
        "AND \"end\" = ?", list(g[1]))


def test_the_sql_prefilter_lists_exactly_what_checking_every_label_lists(demo_store):
    _break_labels(demo_store)
    with demo_store.cursor() as cur:
        got = broken_labels(cur, "current_evidence")
        want = _reference(cur, None)
    assert sorted(got) == sorted(want)
    # every kind of break is among them, and the two labels that only look broken are not
    text = "\n".join(got)
    for piece in ("no longer matches the quote", "is outside the document", "'no-such-document' is not in the corpus",
                  "earlier text", "is outside document", "'gone-document' is not in the corpus"):
        assert piece in text, piece
    assert "paraphrase" not in text
    assert sum("no longer matches the quote" in p for p in got) == 2  # quotes 1 and 8, not 0 nor 7


def test_one_annotators_view_is_the_same_as_the_reference(demo_store):
    _break_labels(demo_store)
    actors = [r[0] for r in demo_store.read("SELECT DISTINCT actor FROM evidence_events ORDER BY 1")]
    graders = [r[0] for r in demo_store.read("SELECT DISTINCT actor FROM grade_state ORDER BY 1")]
    with demo_store.cursor() as cur:
        for viewer in sorted(set(actors) | set(graders)):
            assert sorted(broken_labels(cur, "current_evidence", viewer=viewer)) == sorted(_reference(cur, viewer)), \
                viewer
