"""Double annotation of evidence, the SQL side (METHODOLOGY §3.7 applied to quotes): rounds
that give the same questions to several annotators, who may see what while a question is
unsettled, per-annotator "no answer" verdicts, each annotator's quotes, and the lead's
settlement (keep one annotator's quotes, keep all, or no answer) in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from golden_store.db.cursor import Cursor
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live.queries import _INSERT_REVISION, _revision_row, record_of_row
from golden_store.db.store import Store, utcnow



def free_questions(store: Store) -> list[dict]:
    """Answerable questions without quotes that no evidence round has taken yet."""
    return store.read_dicts(
        "SELECT q.query_id, q.stratum FROM queries q WHERE q.answerable "
        "AND NOT EXISTS (SELECT 1 FROM current_evidence e WHERE e.query_id = q.query_id) "
        "AND NOT EXISTS (SELECT 1 FROM evidence_assignments a WHERE a.query_id = q.query_id) ORDER BY q.query_id")


def create(store: Store, annotators: Sequence[str], query_ids: Sequence[str], *, actor: str, seed: int | None,
           note: str | None) -> str:
    people = sorted(set(annotators))
    if len(people) < 2:
        raise ValidationError("An evidence round needs at least two annotators.")
    if not query_ids:
        raise ValidationError("No question to give out: every answerable question already has quotes or a round.")

    def tx(cur: Cursor) -> str:
        known = {r[0] for r in cur.execute("SELECT query_id FROM queries WHERE query_id IN (SELECT unnest(?))",
                                           [list(query_ids)]).fetchall()}
        missing = sorted(set(query_ids) - known)
        if missing:
            raise ValidationError("Some questions are not in the store.", missing[:20])
        n = cur.execute("SELECT count(*) FROM rounds").fetchone()[0]
        rid = f"r{n + 1}"
        cur.execute("INSERT INTO rounds (round_id, kind, annotators, overlap, seed, n_items, note, created_by, "
                    "created_at, item_kind) VALUES (?, 'calibration', ?, NULL, ?, ?, ?, ?, ?, 'evidence')",
                    [rid, people, seed, len(query_ids), note or None, actor, utcnow()])
        cur.executemany("INSERT INTO evidence_assignments VALUES (?, ?, ?)",
                        [(rid, a, q) for a in people for q in query_ids])
        return rid

    return store.write(tx)


def unsettled(store: Store) -> set[str]:
    return {r[0] for r in store.read("SELECT query_id FROM unsettled_evidence_questions")}


def assigned_to(store: Store, actor: str) -> list[str]:
    """The actor's unsettled evidence-round questions, oldest round first."""
    return [r[0] for r in store.read(
        "SELECT a.query_id FROM evidence_assignments a JOIN rounds r USING (round_id) "
        "SEMI JOIN unsettled_evidence_questions u USING (query_id) WHERE a.annotator = ? "
        "GROUP BY a.query_id ORDER BY min(r.created_at), a.query_id", [actor])]


def no_answer_actors(store: Store, query_id: str) -> set[str]:
    """Who currently says the corpus does not answer the question (latest verdict per person)."""
    return {r[0] for r in store.read(
        "SELECT actor FROM (SELECT actor, op, row_number() OVER (PARTITION BY actor ORDER BY event_id DESC) AS rn "
        "FROM evidence_no_answer_events WHERE query_id = ?) WHERE rn = 1 AND op = 'no_answer'",
        [query_id])}


def set_no_answer(store: Store, query_id: str, actor: str, on: bool) -> None:
    store.write(lambda cur: cur.execute(
        "INSERT INTO evidence_no_answer_events (query_id, op, actor, created_at) VALUES (?, ?, ?, ?)",
        [query_id, "no_answer" if on else "withdrawn", actor, utcnow()]))


def round_state(store: Store) -> list[dict]:
    """Per unsettled evidence-round question and assigned annotator: their current quotes
    (doc, start, end, quote) and whether they said "no answer"."""
    rows = store.read_dicts(
        "SELECT a.query_id, a.annotator, q.text AS query_text, q.stratum, e.evidence_id, e.doc_id, e.start, "
        "e.\"end\", e.quote FROM (SELECT DISTINCT query_id, annotator FROM evidence_assignments) a "
        "SEMI JOIN unsettled_evidence_questions u USING (query_id) JOIN queries q USING (query_id) "
        "LEFT JOIN current_evidence e ON e.query_id = a.query_id AND e.author = a.annotator "
        "ORDER BY a.query_id, a.annotator, e.doc_id, e.start")
    no = store.read(
        "SELECT query_id, actor FROM (SELECT query_id, actor, op, row_number() OVER (PARTITION BY query_id, actor "
        "ORDER BY event_id DESC) AS rn FROM evidence_no_answer_events) WHERE rn = 1 AND op = 'no_answer'")
    said_no = set(no)
    out: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["query_id"], r["annotator"])
        st = out.setdefault(key, {"query_id": r["query_id"], "annotator": r["annotator"],
                                  "query_text": r["query_text"], "stratum": r["stratum"], "spans": [],
                                  "no_answer": key in said_no})
        if r["evidence_id"]:
            st["spans"].append({"evidence_id": r["evidence_id"], "doc_id": r["doc_id"], "start": r["start"],
                                "end": r["end"], "quote": r["quote"]})
    return list(out.values())


def settle(store: Store, query_id: str, decision: str, rationale: str, *, actor: str) -> int:
    """Settle a question: ``keep:<annotator>`` retracts every other annotator's quotes,
    ``keep_all`` keeps every quote, ``no_answer`` retracts all. Returns quotes retracted.
    (Moving a question to the negative stratum is the caller's next step.)"""
    if not rationale or not rationale.strip():
        raise ValidationError("Write the rationale of the decision.")

    def tx(cur: Cursor) -> int:
        if not cur.execute("SELECT 1 FROM unsettled_evidence_questions WHERE query_id = ?", [query_id]).fetchone():
            raise NotFoundError(f"{query_id} is not an unsettled evidence-round question.")
        quotes = cur.execute("SELECT evidence_id, author FROM current_evidence WHERE query_id = ?",
                             [query_id]).fetchall()
        assigned = {r[0] for r in cur.execute("SELECT DISTINCT annotator FROM evidence_assignments WHERE query_id = ?",
                                              [query_id]).fetchall()}
        if decision == "keep_all":  # every quote of the round's annotators (no one else's)
            drop = [e for e, a in quotes if a not in assigned]
        elif decision == "no_answer":
            drop = [e for e, _ in quotes]
        elif decision.startswith("keep:"):
            who = decision.split(":", 1)[1]
            if who not in assigned or not any(a == who for _, a in quotes):
                raise ValidationError(f"{who!r} has no quote of {query_id} in this round to keep.")
            drop = [e for e, a in quotes if a != who]
        else:
            raise ValidationError(f"Unknown decision {decision!r}: keep:<annotator>, keep_all or no_answer.")
        now = utcnow()
        for eid in drop:
            cur.execute("INSERT INTO evidence_events (query_id, evidence_id, op, actor, created_at, note) "
                        "VALUES (?, ?, 'retract', ?, ?, ?)", [query_id, eid, actor, now, f"adjudication: {decision}"])
        cur.execute("INSERT INTO evidence_settlement_events (query_id, decision, note, actor, created_at) "
                    "VALUES (?, ?, ?, ?, ?)", [query_id, decision, rationale.strip(), actor, now])
        if decision == "no_answer":  # the question joins the negative stratum, in the same transaction
            row = cur.execute("SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, "
                              "generator_model, generator_prompt_sha, tier FROM queries WHERE query_id = ?",
                              [query_id]).fetchone()
            if row is None:
                raise NotFoundError(f"{query_id} is retired.")
            rec = record_of_row(row)
            notes = (rec.notes + " | " if rec.notes else "") + f"no answer in corpus (adjudicated by {actor})"
            cur.execute(_INSERT_REVISION, _revision_row(replace(rec, answerable=False, stratum="negative",
                                                                notes=notes), actor))
        return len(drop)

    return store.write(tx)


def round_spans(store: Store) -> dict[str, dict[str, list]]:
    """question -> annotator -> [(doc_id, start, end), ...] for every evidence-round question
    and each assigned annotator who quoted it or said "no answer" ([] then). An annotator's
    quote counts unless they retracted it themselves: a lead's settlement retracts the
    losing quotes, but the round's agreement is about what the annotators said."""
    spans = store.read(
        "WITH s AS (SELECT *, row_number() OVER (PARTITION BY query_id, evidence_id, actor ORDER BY event_id DESC) "
        "  AS rn FROM evidence_events WHERE op = 'set'), "
        "mine AS (SELECT query_id, evidence_id, actor, max(event_id) AS rid FROM evidence_events "
        "  WHERE op = 'retract' GROUP BY ALL) "
        "SELECT s.query_id, s.actor, s.doc_id, s.start, s.\"end\" FROM s "
        "SEMI JOIN (SELECT DISTINCT query_id, annotator AS actor FROM evidence_assignments) a USING (query_id, actor) "
        "LEFT JOIN mine r ON r.query_id = s.query_id AND r.evidence_id = s.evidence_id AND r.actor = s.actor "
        "  AND r.rid > s.event_id "
        "WHERE s.rn = 1 AND r.rid IS NULL ORDER BY 1, 2, 3, 4")
    out: dict[str, dict[str, list]] = {}
    for q, a, d, st, en in spans:
        out.setdefault(q, {}).setdefault(a, []).append((d, st, en))
    for q, a in store.read(
            "SELECT query_id, actor FROM (SELECT query_id, actor, op, row_number() OVER (PARTITION BY query_id, actor "
            "ORDER BY event_id DESC) AS rn FROM evidence_no_answer_events) v WHERE rn = 1 AND op = 'no_answer' "
            "AND EXISTS (SELECT 1 FROM evidence_assignments a WHERE a.query_id = v.query_id AND a.annotator = v.actor)"):
        out.setdefault(q, {}).setdefault(a, [])
    return out
