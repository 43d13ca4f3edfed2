"""Several grade events appended and folded at once (``grade_state.append_many_tx``, issue 41:
the label channel writes the labels that arrive together in one transaction): random sequences of
grades, skips, unsures and retracts by three annotators on four items, cut into random chunks
(one annotator's item twice in a chunk, several annotators on one item), appended chunk by chunk
with adjudications between chunks. After every chunk the state tables equal the former views
replayed over the log and a refill from it (tests/golden_store/test_grade_state.py's check),
and the ids come back in the order the events were given."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from golden_store.core.errors import NotFoundError
from golden_store.live import adjudication, grade_state
from tests.golden_store.test_grade_state import ACTORS, ITEMS, _tiny_store, assert_state_matches_log

T0 = datetime(2026, 3, 1, 9, 0, 0)
EVENT = st.tuples(st.sampled_from(["grade", "grade", "skip", "unsure", "retract"]), st.integers(0, len(ITEMS) - 1),
                  st.integers(0, len(ACTORS) - 1), st.integers(0, 3), st.sampled_from([None, 1, 2]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(EVENT, min_size=1, max_size=8), min_size=1, max_size=6), st.integers(0, 3))
def test_chunks_of_events_keep_state_equal_to_the_log(chunks, decide_on):
    s = _tiny_store()
    try:
        k = 0
        for n, chunk in enumerate(chunks):
            events = []
            for op, i, a, grade, rubric in chunk:
                q, d, start, end = ITEMS[i]
                events.append({"query_id": q, "doc_id": d, "start": start, "end": end, "doc_sha256": f"sha-{d}",
                               "op": op, "grade": grade if op == "grade" else None, "actor": ACTORS[a],
                               "created_at": T0 + timedelta(seconds=k), "rubric_version": rubric,
                               "round_id": None, "note": f"n{k}" if k % 3 else None})
                k += 1
            ids = s.write(lambda cur: grade_state.append_many_tx(cur, events))
            assert len(ids) == len(events) and ids == sorted(ids) and len(set(ids)) == len(ids)
            stored = s.read("SELECT actor, op, query_id FROM grade_events WHERE event_id >= ? ORDER BY event_id",
                            [ids[0]])
            assert stored == [(e["actor"], e["op"], e["query_id"]) for e in events]
            if n % 2 == 1:
                try:  # an adjudication between chunks: the one-event fold beside the chunked one
                    adjudication.decide(s, "lead", *ITEMS[decide_on], n % 4, f"rationale {n}")
                except NotFoundError:
                    pass
            assert_state_matches_log(s)
    finally:
        s.close()
