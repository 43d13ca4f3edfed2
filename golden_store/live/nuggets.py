"""Nuggets, the SQL side (METHODOLOGY §10.9): every draft, edit, delete and approval is an
event (who, when, model id and prompt sha when a model proposed it), the current list is a
view, and system answers with their per-nugget support labels live beside them.

A nugget's supporting quote is stored with the span it was verified on; a quote that could
not be placed on the evidence is kept with ``doc_id`` NULL, which is what "flagged" means:
such a nugget cannot be approved until a person fixes or clears its quote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from golden_store.db.cursor import Cursor
from golden_store.live import answer_citations
from golden_store.core.errors import NotFoundError, OptionRequiredError, ValidationError
from golden_store.core.system_names import check_system_name
from golden_store.db.store import Store, utcnow

IMPORTANCE = ("vital", "okay")
SUPPORT = ("support", "partial", "none")
MAX_WORDS = 12


@dataclass(frozen=True)
class NuggetDraft:
    """One nugget as written to the store (by a model's draft or a person's edit)."""

    text: str
    importance: str
    quote: str | None = None
    doc_id: str | None = None  # set when the quote was verified on the evidence
    start: int | None = None
    end: int | None = None


def check(n: NuggetDraft, where: str) -> None:
    if not n.text or not n.text.strip():
        raise ValidationError(f"{where}: the nugget text is empty.")
    words = len(n.text.split())
    if words > MAX_WORDS:
        raise ValidationError(f"{where}: {words} words; a nugget is one atomic fact of 1-{MAX_WORDS} words "
                              f"(split it).")
    if n.importance not in IMPORTANCE:
        raise ValidationError(f"{where}: importance must be vital or okay, not {n.importance!r}.")


def current(store: Store, query_id: str) -> list[dict]:
    """The question's current nuggets in order, each with ``approved`` and ``flagged``."""
    return store.read_dicts(
        "SELECT nugget_id, text, importance, position, quote, doc_id, start, \"end\", actor, created_at, model, "
        "prompt_sha, approved, (quote IS NOT NULL AND doc_id IS NULL) AS flagged FROM current_nuggets "
        "WHERE query_id = ? ORDER BY position, nugget_id", [query_id])


def history(store: Store, query_id: str) -> list[dict]:
    """Every nugget event of the question, oldest first: what a model proposed, what people changed."""
    return store.read_dicts(
        "SELECT event_id, nugget_id, op, text, importance, position, quote, doc_id IS NOT NULL AS quote_verified, "
        "actor, model, prompt_sha, created_at FROM nugget_events WHERE query_id = ? ORDER BY event_id", [query_id])


def _insert(cur: Cursor, query_id: str, nugget_id: str, op: str, n: NuggetDraft | None,
            position: int | None, actor: str, model: str | None, prompt_sha: str | None,
            rubric_version: int | None) -> None:
    sha = None
    if n is not None and n.doc_id:
        row = cur.execute("SELECT canonical_sha256 FROM documents WHERE doc_id = ?", [n.doc_id]).fetchone()
        sha = row[0] if row else None
    cur.execute(
        "INSERT INTO nugget_events (query_id, nugget_id, op, text, importance, position, quote, doc_id, start, "
        "\"end\", doc_sha256, actor, created_at, rubric_version, model, prompt_sha) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [query_id, nugget_id, op, n.text.strip() if n else None, n.importance if n else None, position,
         (n.quote or None) if n else None, n.doc_id if n else None, n.start if n else None, n.end if n else None,
         sha, actor, utcnow(), rubric_version, model, prompt_sha])


def _next_ids(cur: Cursor, query_id: str, k: int) -> list[str]:
    used = cur.execute("SELECT coalesce(max(TRY_CAST(substr(nugget_id, 2) AS INTEGER)), 0) FROM nugget_events "
                       "WHERE query_id = ? AND nugget_id LIKE 'n%'", [query_id]).fetchone()[0]
    return [f"n{used + i + 1}" for i in range(k)]


def _require_query(cur: Cursor, query_id: str) -> None:
    if not cur.execute("SELECT 1 FROM queries WHERE query_id = ?", [query_id]).fetchone():
        raise NotFoundError(f"Query {query_id!r} is not in the store.")


def add_draft(store: Store, query_id: str, nuggets: Sequence[NuggetDraft], *, actor: str, model: str | None,
              prompt_sha: str | None, rubric_version: int | None = None) -> list[str]:
    """Append nuggets after the current ones (a model's draft, or people adding); one transaction."""
    for i, n in enumerate(nuggets):
        check(n, f"{query_id} nugget {i + 1}")

    def tx(cur: Cursor) -> list[str]:
        _require_query(cur, query_id)
        start = cur.execute("SELECT coalesce(max(position), 0) FROM current_nuggets WHERE query_id = ?",
                            [query_id]).fetchone()[0]
        ids = _next_ids(cur, query_id, len(nuggets))
        for k, (nid, n) in enumerate(zip(ids, nuggets)):
            _insert(cur, query_id, nid, "add", n, start + k + 1, actor, model, prompt_sha, rubric_version)
        return ids

    return store.write(tx)


def save_list(store: Store, query_id: str, rows: Sequence[tuple[str | None, NuggetDraft]], *, actor: str,
              rubric_version: int | None = None) -> dict[str, int]:
    """Make the current list equal to ``rows`` (nugget id or None for a new one, in display
    order): changed nuggets get an ``edit``, missing ones a ``delete``, new ones an ``add``.
    Only differences become events. Returns counts per op."""
    for i, (_, n) in enumerate(rows):
        check(n, f"{query_id} row {i + 1}")

    def tx(cur: Cursor) -> dict[str, int]:
        _require_query(cur, query_id)
        now = {r[0]: r[1:8] for r in cur.execute(
            "SELECT nugget_id, text, importance, position, quote, doc_id, start, \"end\", approved FROM current_nuggets "
            "WHERE query_id = ?", [query_id]).fetchall()}
        approved = {r[0] for r in cur.execute("SELECT nugget_id FROM current_nuggets WHERE query_id = ? AND approved",
                                              [query_id]).fetchall()}
        kept = {nid for nid, _ in rows if nid}
        unknown = sorted(kept - set(now))
        if unknown:
            raise ValidationError(f"{query_id}: nugget id(s) {', '.join(unknown)} are not current; reload and retry.")
        counts = {"add": 0, "edit": 0, "delete": 0}
        new_ids = iter(_next_ids(cur, query_id, sum(1 for nid, _ in rows if not nid)))
        for pos, (nid, n) in enumerate(rows, start=1):
            if nid is None:
                _insert(cur, query_id, next(new_ids), "add", n, pos, actor, None, None, rubric_version)
                counts["add"] += 1
                continue
            text, imp, old_pos, quote, doc, s, e = now[nid]
            if (text, imp, old_pos, quote or None) != (n.text.strip(), n.importance, pos, n.quote or None):
                if (quote or None) == (n.quote or None):  # quote unchanged: keep where it was verified
                    n = NuggetDraft(n.text, n.importance, quote, doc, s, e)
                _insert(cur, query_id, nid, "edit", n, pos, actor, None, None, rubric_version)
                counts["edit"] += 1
                if nid in approved and (text, imp, quote or None) == (n.text.strip(), n.importance, n.quote or None):
                    # only moved: its content is what was approved, so the approval stands
                    cur.execute("INSERT INTO nugget_events (query_id, nugget_id, op, actor, created_at) "
                                "VALUES (?, ?, 'approve', ?, ?)", [query_id, nid, actor, utcnow()])
        for nid in sorted(set(now) - kept):
            _insert(cur, query_id, nid, "delete", None, None, actor, None, None, rubric_version)
            counts["delete"] += 1
        return counts

    return store.write(tx)


def approve(store: Store, query_id: str, *, actor: str) -> int:
    """Approve the question's whole current list (one event per nugget). Refused while a
    nugget's quote is unverified, or when there is nothing to approve."""

    def tx(cur: Cursor) -> int:
        rows = cur.execute("SELECT nugget_id, quote IS NOT NULL AND doc_id IS NULL FROM current_nuggets "
                           "WHERE query_id = ? ORDER BY position", [query_id]).fetchall()
        if not rows:
            raise ValidationError(f"{query_id} has no nuggets to approve: draft or add some first.")
        flagged = [nid for nid, bad in rows if bad]
        if flagged:
            raise ValidationError(f"{query_id}: the supporting quote of {', '.join(flagged)} is not in the evidence; "
                                  "fix the quote (or clear it) before approving.")
        for nid, _ in rows:
            cur.execute("INSERT INTO nugget_events (query_id, nugget_id, op, actor, created_at) "
                        "VALUES (?, ?, 'approve', ?, ?)", [query_id, nid, actor, utcnow()])
        return len(rows)

    return store.write(tx)


def status(store: Store) -> list[dict]:
    """Per live query: stratum, held_out, number of evidence spans, nuggets and approved nuggets."""
    return store.read_dicts(
        "SELECT q.query_id, q.text, q.stratum, q.held_out, q.answerable, "
        "(SELECT count(*) FROM current_evidence e WHERE e.query_id = q.query_id) AS n_evidence, "
        "count(n.nugget_id) AS n_nuggets, count(n.nugget_id) FILTER (WHERE n.approved) AS n_approved "
        "FROM queries q LEFT JOIN current_nuggets n USING (query_id) GROUP BY ALL ORDER BY q.query_id")


def approved(store: Store) -> list[dict]:
    """Every approved nugget of a live query, for export and scoring."""
    return store.read_dicts(
        "SELECT n.query_id, nugget_id, text, importance, position, quote, doc_id, start, \"end\", actor, model, "
        "prompt_sha FROM current_nuggets n SEMI JOIN queries USING (query_id) WHERE approved "
        "ORDER BY n.query_id, position, nugget_id")


# ---- system answers and nugget assignment ---------------------------------------------------


def store_answers(store: Store, system: str, rows: Sequence[tuple[str, str] | tuple[str, str, str]], *,
                  actor: str, replace: bool = False,
                  contexts: Mapping[str, Sequence[answer_citations.Context]] | None = None,
                  citations: Mapping[str, Sequence[answer_citations.Cited]] | None = None) -> int:
    """Store a system's answers ``(query_id, answer)`` or ``(query_id, answer, outcome)`` in one
    transaction; an answer without an outcome is ``unknown`` (see
    :func:`annotator.nuggets.import_answers` for why not "answered"). On ``replace``, an answer
    whose text changed loses its support labels and its reviewer's outcome mark (both
    described the old text): each gets a ``withdrawn`` event. ``contexts`` and ``citations``
    (per query id) replace the system's, in the same transaction
    (:mod:`golden_store.live.answer_citations`)."""
    check_system_name(system)  # the one rule for a system's name, as for runs
    full = [(r[0], r[1], r[2] if len(r) > 2 else UNMARKED) for r in rows]
    for q, _, outcome in full:
        if outcome not in OUTCOMES + (UNMARKED,):
            raise ValidationError(f"{q}: an answer's outcome is one of {', '.join(OUTCOMES)} (or {UNMARKED}), "
                                  f"not {outcome!r}.")

    def tx(cur: Cursor) -> int:
        if cur.execute("SELECT 1 FROM answers WHERE system = ? LIMIT 1", [system]).fetchone():
            if not replace:
                raise OptionRequiredError(f"Answers of system {system!r} are already imported; pick another system "
                                          "name or replace them (support labels on unchanged answers are kept).",
                                          option="--replace", advice="Pass --replace to replace them.")
            old = dict(cur.execute("SELECT query_id, answer FROM answers WHERE system = ?", [system]).fetchall())
            new = {q: a for q, a, _ in full}
            changed = [q for q, a in old.items() if new.get(q) != a]
            # support labels and outcome marks on a changed or dropped answer no longer describe it: withdrawn
            for q in changed:
                cur.execute(
                    "INSERT INTO nugget_support_events (system, query_id, nugget_id, label, note, actor, created_at) "
                    "SELECT DISTINCT system, query_id, nugget_id, 'withdrawn', 'answer replaced', ?, ? "
                    "FROM nugget_support_events WHERE system = ? AND query_id = ?",
                    [actor, utcnow(), system, q])
                cur.execute(
                    "INSERT INTO answer_outcome_events (system, query_id, outcome, note, actor, created_at) "
                    "SELECT DISTINCT system, query_id, 'withdrawn', 'answer replaced', ?, ? "
                    "FROM answer_outcome_events WHERE system = ? AND query_id = ?",
                    [actor, utcnow(), system, q])
            cur.execute("DELETE FROM answers WHERE system = ?", [system])
        now = utcnow()
        cur.executemany("INSERT INTO answers (system, query_id, answer, imported_at, imported_by, outcome) "
                        "VALUES (?, ?, ?, ?, ?, ?)", [(system, q, a, now, actor, o) for q, a, o in full])
        answer_citations.write_tx(cur, system, contexts or {}, citations or {})
        return len(full)

    return store.write(tx)


def answers(store: Store, system: str | None = None) -> list[dict]:
    return store.read_dicts(
        "SELECT a.system, a.query_id, q.text AS query_text, a.answer FROM answers a JOIN queries q USING (query_id) "
        "WHERE ? IS NULL OR a.system = ? ORDER BY a.system, a.query_id", [system, system])


# ---- an answer's outcome (METHODOLOGY §10.5) ---------------------------------------------------

OUTCOMES = ("answered", "abstained", "refused")
UNMARKED = "unknown"


def answer_outcomes(store: Store, system: str | None = None) -> list[dict]:
    """Every answer to a live question with its current outcome (the latest reviewer mark,
    else the imported outcome, else ``unknown``), ``basis`` (marked / imported / unmarked),
    who marked it and when, and the question's ``answerable`` and stratum."""
    return store.read_dicts(
        "SELECT o.system, o.query_id, q.text AS query_text, q.answerable, q.stratum, a.answer, o.outcome, "
        "o.imported_outcome, o.basis, o.marked_by, o.marked_at, o.note "
        "FROM current_answer_outcomes o JOIN answers a ON a.system = o.system AND a.query_id = o.query_id "
        "JOIN queries q ON q.query_id = o.query_id "
        "WHERE ? IS NULL OR o.system = ? ORDER BY o.system, o.query_id", [system, system])


def mark_outcome(store: Store, system: str, query_id: str, outcome: str, *, actor: str,
                 note: str | None = None) -> int:
    """Append a reviewer's mark of an answer's outcome (answered / abstained / refused; or
    ``withdrawn``, an undo: back to the imported outcome). Returns the event id."""
    if outcome not in OUTCOMES + ("withdrawn",):
        raise ValidationError(f"An answer's outcome is one of {', '.join(OUTCOMES)} (or withdrawn, to undo a mark), "
                              f"not {outcome!r}.")

    def tx(cur: Cursor) -> int:
        if not cur.execute("SELECT 1 FROM answers WHERE system = ? AND query_id = ?", [system, query_id]).fetchone():
            raise NotFoundError(f"No answer of {system!r} to {query_id}.")
        return cur.execute(
            "INSERT INTO answer_outcome_events (system, query_id, outcome, note, actor, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING event_id",
            [system, query_id, outcome, (note or "").strip() or None, actor, utcnow()]).fetchone()[0]

    return store.write(tx)


def outcome_history(store: Store, system: str, query_id: str) -> list[dict]:
    """Every outcome mark of one answer, oldest first."""
    return store.read_dicts(
        "SELECT event_id, outcome, note, actor, created_at FROM answer_outcome_events "
        "WHERE system = ? AND query_id = ? ORDER BY event_id", [system, query_id])


def assign_tx(cur: Cursor, system: str, query_id: str, nugget_id: str, label: str,
              actor: str) -> int:
    """Record whether the system's answer supports the nugget (support / partial / none; or
    ``withdrawn``, an undo) inside the caller's transaction; returns the event id."""
    if label not in SUPPORT + ("withdrawn",):
        raise ValidationError(f"A nugget assignment is support, partial or none, not {label!r}.")
    if not cur.execute("SELECT 1 FROM answers WHERE system = ? AND query_id = ?", [system, query_id]).fetchone():
        raise NotFoundError(f"No answer of {system!r} to {query_id}.")
    if not cur.execute("SELECT 1 FROM current_nuggets WHERE query_id = ? AND nugget_id = ?",
                       [query_id, nugget_id]).fetchone():
        raise NotFoundError(f"{query_id} has no current nugget {nugget_id}.")
    return cur.execute(
        "INSERT INTO nugget_support_events (system, query_id, nugget_id, label, actor, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING event_id",
        [system, query_id, nugget_id, label, actor, utcnow()]).fetchone()[0]


def assign(store: Store, system: str, query_id: str, nugget_id: str, label: str, *, actor: str) -> None:
    """Record whether the system's answer supports the nugget (support / partial / none)."""
    if label not in SUPPORT:
        raise ValidationError(f"A nugget assignment is support, partial or none, not {label!r}.")
    store.write(lambda cur: assign_tx(cur, system, query_id, nugget_id, label, actor))


def answers_to_tx(cur: Cursor, query_id: str) -> list[tuple[str, str]]:
    """(system, answer) of every imported answer to the question."""
    return cur.execute("SELECT system, answer FROM answers WHERE query_id = ? ORDER BY system", [query_id]).fetchall()


def nugget_tx(cur: Cursor, query_id: str, nugget_id: str) -> tuple[str, str, bool] | None:
    """(question text, nugget text, approved) of a current nugget, or None."""
    return cur.execute(
        "SELECT q.text, n.text, n.approved FROM current_nuggets n JOIN queries q USING (query_id) "
        "WHERE n.query_id = ? AND n.nugget_id = ?", [query_id, nugget_id]).fetchone()


def latest_assignment_event_tx(cur: Cursor, system: str, query_id: str,
                               nugget_id: str) -> int | None:
    return cur.execute("SELECT max(event_id) FROM nugget_support_events WHERE system = ? AND query_id = ? "
                       "AND nugget_id = ?", [system, query_id, nugget_id]).fetchone()[0]


def assignments(store: Store, system: str | None = None) -> list[dict]:
    """The latest support label per (system, query, nugget)."""
    return store.read_dicts(
        "SELECT system, query_id, nugget_id, label, actor, created_at FROM current_nugget_support "
        "WHERE ? IS NULL OR system = ? ORDER BY system, query_id, nugget_id", [system, system])


def counts(store: Store) -> dict[str, int]:
    """Home-page numbers: questions with approved nuggets, approved nuggets, drafts waiting
    for approval, imported answers and support labels."""
    row = store.read_row(
        "SELECT (SELECT count(DISTINCT query_id) FROM current_nuggets SEMI JOIN queries USING (query_id) "
        "        WHERE approved), "
        "(SELECT count(*) FROM current_nuggets SEMI JOIN queries USING (query_id) WHERE approved), "
        "(SELECT count(*) FROM current_nuggets SEMI JOIN queries USING (query_id) WHERE NOT approved), "
        "(SELECT count(*) FROM answers), "
        "(SELECT count(*) FROM (SELECT DISTINCT system, query_id, nugget_id FROM nugget_support_events))")
    keys = ("questions_approved", "approved", "unapproved", "answers", "assigned")
    return {k: int(v) for k, v in zip(keys, row)}


def judged_relevant(store: Store, query_id: str) -> list[dict]:
    """Pooled passages whose gold grade is 2 or 3 (extra evidence for drafting). An item a
    round gave out counts only once settled (adjudicated, or agreed by two or more): before
    that its "gold" is one annotator's grade, which the others must not see."""
    return store.read_dicts(
        "SELECT doc_id, start, \"end\" FROM final_grades f WHERE query_id = ? AND grade >= 2 "
        "AND (basis = 'adjudicated' OR strpos(decided_by, ',') > 0 OR NOT EXISTS (SELECT 1 FROM round_assignments a "
        "  WHERE a.query_id = f.query_id AND a.doc_id = f.doc_id AND a.start = f.start AND a.\"end\" = f.\"end\")) "
        "ORDER BY grade DESC, doc_id, start", [query_id])


# What an approved-nuggets export line holds (approved(), written by golden nuggets export).
EXPORT_FIELDS = ("query_id", "nugget_id", "text", "importance", "position", "quote", "doc_id", "start", "end")


def _same(held: list[dict], rows: list[dict]) -> bool:
    """Whether a question's current nuggets are exactly the file's, all approved."""
    def key(r: dict) -> tuple:
        return (r["nugget_id"], r["text"], r["importance"], r["quote"] or None, r["doc_id"], r["start"], r["end"])

    return all(h["approved"] for h in held) and sorted(map(key, held)) == sorted(map(key, rows))


def import_approved(store: Store, rows: Sequence[dict], *, actor: str) -> dict[str, list[str]]:
    """Approved nuggets read back from an export (issue 38 item 2), in one transaction: a
    question without nuggets gets the file's, with their ids, order, supporting quotes and the
    model and prompt sha that drafted them, approved by ``actor``; a question whose current
    nuggets are exactly the file's is left alone (the same file again changes nothing); a
    question with other nuggets is refused (a list a person edited is never replaced by a
    file). ``rows``: validated lines (``EXPORT_FIELDS`` plus ``model``, ``prompt_sha``).
    Returns ``{"added": [...], "unchanged": [...]}`` (query ids)."""
    by_query: dict[str, list[dict]] = {}
    for r in rows:
        by_query.setdefault(r["query_id"], []).append(r)

    def tx(cur: Cursor) -> dict[str, list[str]]:
        added, unchanged, clash = [], [], []
        for qid, items in sorted(by_query.items()):
            _require_query(cur, qid)
            held = [dict(zip(("nugget_id", "text", "importance", "quote", "doc_id", "start", "end", "approved"), r))
                    for r in cur.execute("SELECT nugget_id, text, importance, quote, doc_id, start, \"end\", approved "
                                         "FROM current_nuggets WHERE query_id = ?", [qid]).fetchall()]
            if not held:
                added.append(qid)
            elif _same(held, items):
                unchanged.append(qid)
            else:
                clash.append(qid)
        if clash:
            raise ValidationError(f"Nuggets import refused: {len(clash)} question(s) have other nuggets in this store "
                                  f"({', '.join(clash[:5])}); a list people edited is never replaced by a file: edit "
                                  "it on the Nuggets page, or import into another store. Nothing was imported.")
        for qid in added:
            for r in sorted(by_query[qid], key=lambda r: (r["position"], r["nugget_id"])):
                n = NuggetDraft(r["text"], r["importance"], r["quote"], r["doc_id"], r["start"], r["end"])
                _insert(cur, qid, r["nugget_id"], "add", n, r["position"], actor, r.get("model"), r.get("prompt_sha"),
                        None)
                cur.execute("INSERT INTO nugget_events (query_id, nugget_id, op, actor, created_at) "
                            "VALUES (?, ?, 'approve', ?, ?)", [qid, r["nugget_id"], actor, utcnow()])
        return {"added": added, "unchanged": unchanged}

    return store.write(tx)
