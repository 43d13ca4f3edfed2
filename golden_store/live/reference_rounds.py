"""Double authoring of reference answers, the SQL side (METHODOLOGY §3.7 applied to the answer
layer, as :mod:`golden_store.live.evidence_rounds` applies it to quotes): rounds that give the
same questions to two or more authors, each author's drafts and one submission per question
(``reference_round_events``), and a lead's adjudication, which writes the question's next
reference answer revision (naming the round) and approves it, in one transaction.

Who may read what (blindness until one's own submission) is the annotator layer's rule; this
module returns rows as stored and checks what the data itself must satisfy: a known question,
an author of the round, a non-empty answer, spans that lie in their documents, one submission
per author, one adjudication per question.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow
from golden_store.live import reference_answers as refs
from golden_store.live.reference_answers import Anchor, CriterionDraft, ReferenceDraft

OPS = ("draft", "submit")
DECISIONS = ("accept", "merge")


@dataclass(frozen=True)
class RoundAnswer:
    """What an author writes in a round (or a lead merges): the reference answer's fields and
    the criteria the author would mark answers by (optional)."""

    short_answer: str | None
    full_answer: str | None
    evidence: tuple[Anchor, ...] = ()
    criteria: tuple[CriterionDraft, ...] = ()

    @property
    def reference(self) -> ReferenceDraft:
        return ReferenceDraft(self.short_answer, self.full_answer, self.evidence)


def answer_of(stored: dict) -> RoundAnswer:
    """A stored draft or submission (``short_answer``, ``full_answer``, ``evidence`` and
    ``criteria`` as decoded lists) as the answer it was."""
    return RoundAnswer(stored["short_answer"], stored["full_answer"],
                       tuple(Anchor(str(e["doc_id"]), int(e["start"]), int(e["end"])) for e in stored["evidence"]),
                       tuple(CriterionDraft(c["id"], c["text"], c["example"], float(c["weight"]), int(c["scale_max"]))
                             for c in stored["criteria"]))


def _clean(text: str | None) -> str | None:
    return text.strip() if text and text.strip() else None


def _check(cur: Cursor, query_id: str, answer: RoundAnswer) -> tuple[str | None, str | None, str, str]:
    """The answer as stored, or one sentence saying what is wrong with it."""
    short, full = _clean(answer.short_answer), _clean(answer.full_answer)
    if short is None and full is None:
        raise ValidationError(f"{query_id}: a reference answer needs a short answer, a full answer or both.")
    evidence = json.dumps(refs.check_anchors(cur, query_id, answer.evidence))
    refs.check_criteria(answer.criteria, query_id)
    return short, full, evidence, refs.criteria_json(answer.criteria)


# ---- rounds -------------------------------------------------------------------------------------


_OPEN = ("SELECT q.query_id, q.round_id FROM reference_round_questions q WHERE {where} AND NOT EXISTS "
         "(SELECT 1 FROM reference_round_adjudications a WHERE a.round_id = q.round_id AND a.query_id = q.query_id)")


def open_rounds_of(cur: Cursor, query_ids: Sequence[str]) -> dict[str, str]:
    """query id -> the reference round it is in and not yet adjudicated."""
    if not query_ids:
        return {}
    return {q: r for q, r in cur.execute(_OPEN.format(where="q.query_id IN (SELECT unnest(?))"),
                                         [list(query_ids)]).fetchall()}


def open_questions(store: Store) -> dict[str, str]:
    """Every question waiting in a reference round (not adjudicated) -> its round."""
    return {q: r for q, r in store.read(_OPEN.format(where="TRUE"))}


def create(store: Store, authors: Sequence[str], query_ids: Sequence[str], *, actor: str,
           note: str | None = None) -> str:
    """Open a round: the same questions for every author. Its id (``ref1``, ``ref2``...)."""
    people = sorted({a.strip() for a in authors if a and a.strip()})
    if len(people) < 2:
        raise ValidationError("A reference-answer round needs at least two authors.")
    wanted = list(dict.fromkeys(q.strip() for q in query_ids if q and q.strip()))
    if not wanted:
        raise ValidationError("Name at least one question for the round.")

    def tx(cur: Cursor) -> str:
        known = {r[0] for r in cur.execute("SELECT query_id FROM queries WHERE query_id IN (SELECT unnest(?))",
                                           [wanted]).fetchall()}
        missing = [q for q in wanted if q not in known]
        if missing:
            raise NotFoundError(f"No live question {missing[0]!r}" + (f" (nor {', '.join(missing[1:4])})"
                                                                      if len(missing) > 1 else "")
                                + "; a round takes questions of the store.")
        busy = open_rounds_of(cur, wanted)
        if busy:
            q = sorted(busy)[0]
            raise ValidationError(f"{q} is already in reference round {busy[q]}, not yet adjudicated; a question is "
                                  f"in one open round at a time.")
        n = cur.execute("SELECT count(*) FROM reference_rounds").fetchone()[0]
        rid = f"ref{n + 1}"
        cur.execute("INSERT INTO reference_rounds (round_id, authors, note, created_by, created_at) "
                    "VALUES (?, ?, ?, ?, ?)", [rid, people, _clean(note), actor, utcnow()])
        cur.executemany("INSERT INTO reference_round_questions VALUES (?, ?)", [(rid, q) for q in wanted])
        return rid

    return store.write(tx)


def rounds(store: Store) -> list[dict]:
    """Every round, newest first, with its counts of questions and of adjudicated ones."""
    rows = store.read_dicts(
        "SELECT r.round_id, r.authors, r.note, r.created_by, r.created_at, "
        "(SELECT count(*) FROM reference_round_questions q WHERE q.round_id = r.round_id) AS n_questions, "
        "(SELECT count(*) FROM reference_round_adjudications a WHERE a.round_id = r.round_id) AS n_adjudicated "
        "FROM reference_rounds r ORDER BY r.created_at DESC, r.round_id DESC")
    for r in rows:
        r["authors"] = list(r["authors"])
        r["n_questions"], r["n_adjudicated"] = int(r["n_questions"]), int(r["n_adjudicated"])
    return rows


def get_round(store: Store, round_id: str) -> dict:
    found = [r for r in rounds(store) if r["round_id"] == round_id]
    if not found:
        raise NotFoundError(f"No reference round {round_id!r}; `golden references round-status` lists them.")
    return found[0]


def questions(store: Store, round_id: str) -> list[dict]:
    """The round's questions (text, stratum) with their adjudication, if any."""
    rows = store.read_dicts(
        "SELECT q.query_id, v.text, v.stratum, a.decision, a.accepted_author, a.revision, a.note AS adjudication_note, "
        "a.actor AS adjudicated_by, a.created_at AS adjudicated_at FROM reference_round_questions q "
        "LEFT JOIN queries v ON v.query_id = q.query_id "
        "LEFT JOIN reference_round_adjudications a ON a.round_id = q.round_id AND a.query_id = q.query_id "
        "WHERE q.round_id = ? ORDER BY q.query_id", [round_id])
    for r in rows:
        r["adjudicated"] = r["decision"] is not None
    return rows


def _decoded(row: dict) -> dict:
    row["evidence"] = json.loads(row["evidence"] or "[]")
    row["criteria"] = json.loads(row["criteria"] or "[]")
    return row


def entries(store: Store, round_id: str) -> list[dict]:
    """Per (question, author): their latest draft and their submission (None where there is
    none), as stored - the caller decides who may see which."""
    rows = store.read_dicts(
        "SELECT event_id, query_id, author, op, short_answer, full_answer, evidence, criteria, created_at "
        "FROM (SELECT *, row_number() OVER (PARTITION BY query_id, author, op ORDER BY event_id DESC) AS rn "
        "FROM reference_round_events WHERE round_id = ?) AS latest WHERE rn = 1 ORDER BY query_id, author, op",
        [round_id])
    out: dict[tuple[str, str], dict] = {}
    for r in rows:
        e = out.setdefault((r["query_id"], r["author"]), {"query_id": r["query_id"], "author": r["author"],
                                                          "draft": None, "submission": None})
        e["draft" if r["op"] == "draft" else "submission"] = _decoded(
            {k: r[k] for k in ("event_id", "short_answer", "full_answer", "evidence", "criteria", "created_at")})
    return list(out.values())


def _round_tx(cur: Cursor, round_id: str, query_id: str) -> list[str]:
    """The round's authors, after checking the round exists and holds the question."""
    row = cur.execute("SELECT authors FROM reference_rounds WHERE round_id = ?", [round_id]).fetchone()
    if row is None:
        raise NotFoundError(f"No reference round {round_id!r}; `golden references round-status` lists them.")
    if not cur.execute("SELECT 1 FROM reference_round_questions WHERE round_id = ? AND query_id = ?",
                       [round_id, query_id]).fetchone():
        raise NotFoundError(f"{query_id} is not a question of reference round {round_id}.")
    if cur.execute("SELECT 1 FROM reference_round_adjudications WHERE round_id = ? AND query_id = ?",
                   [round_id, query_id]).fetchone():
        raise ValidationError(f"{query_id} in round {round_id} is already adjudicated; its reference answer is "
                              f"edited on the Reference answers page now.")
    return list(row[0])


def save(store: Store, round_id: str, query_id: str, author: str, answer: RoundAnswer, *, submit: bool) -> int:
    """An author's draft (kept private, replaced by the next) or their one submission; the
    event id."""

    def tx(cur: Cursor) -> int:
        authors = _round_tx(cur, round_id, query_id)
        if author not in authors:
            raise ValidationError(f"{author} is not an author of reference round {round_id} "
                                  f"({', '.join(authors)}).")
        if cur.execute("SELECT 1 FROM reference_round_events WHERE round_id = ? AND query_id = ? AND author = ? "
                       "AND op = 'submit'", [round_id, query_id, author]).fetchone():
            raise ValidationError(f"You already submitted your answer to {query_id} in round {round_id}; a "
                                  f"submission is final (a lead adjudicates it).")
        short, full, evidence, criteria = _check(cur, query_id, answer)
        row = cur.execute(
            "INSERT INTO reference_round_events (round_id, query_id, author, op, short_answer, full_answer, evidence, "
            "criteria, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
            [round_id, query_id, author, "submit" if submit else "draft", short, full, evidence, criteria,
             utcnow()]).fetchone()
        assert row is not None
        return int(row[0])

    return store.write(tx)


def adjudicate(store: Store, round_id: str, query_id: str, *, actor: str, accept: str | None = None,
               merged: RoundAnswer | None = None, note: str | None = None) -> int:
    """Settle a question: ``accept`` an author's submission, or write ``merged`` (exactly one
    of them). Writes and approves the question's reference answer revision (naming the round),
    makes the chosen criteria the question's own when there are any, and records the decision.
    Returns the revision."""
    if (accept is None) == (merged is None):
        raise ValidationError("Adjudicate by accepting one author's answer or by writing a merged one (one of the "
                              "two).")

    def tx(cur: Cursor) -> int:
        authors = _round_tx(cur, round_id, query_id)
        if not cur.execute("SELECT 1 FROM queries WHERE query_id = ?", [query_id]).fetchone():
            raise NotFoundError(f"{query_id} is retired; it takes no reference answer.")
        if accept is not None:
            if accept not in authors:
                raise ValidationError(f"{accept} is not an author of reference round {round_id} "
                                      f"({', '.join(authors)}).")
            row = cur.execute(
                "SELECT short_answer, full_answer, evidence, criteria FROM reference_round_events WHERE round_id = ? "
                "AND query_id = ? AND author = ? AND op = 'submit'", [round_id, query_id, accept]).fetchone()
            if row is None:
                raise ValidationError(f"{accept} has not submitted an answer to {query_id} in round {round_id}; "
                                      f"accept a submitted one or write a merged answer.")
            answer = answer_of(_decoded({"short_answer": row[0], "full_answer": row[1], "evidence": row[2],
                                         "criteria": row[3]}))
        else:
            assert merged is not None
            answer = merged
        _check(cur, query_id, answer)
        why = _clean(note)
        revision = refs.write_tx(cur, query_id, answer.reference, actor=actor, round_id=round_id,
                                 note=f"round {round_id}: " + (f"accepted {accept}'s answer" if accept else "merged")
                                 + (f" - {why}" if why else ""))
        refs.approve_tx(cur, query_id, actor=actor, revision=revision, round_id=round_id)
        if answer.criteria:
            refs.set_criteria_tx(cur, "query", query_id, answer.criteria, actor=actor)
        cur.execute("INSERT INTO reference_round_adjudications (round_id, query_id, decision, accepted_author, "
                    "revision, note, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [round_id, query_id, "accept" if accept else "merge", accept, revision, why, actor, utcnow()])
        return revision

    return store.write(tx)
