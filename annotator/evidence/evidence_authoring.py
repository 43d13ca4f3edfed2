"""Evidence authoring: an expert picks a question, searches the corpus, types or pastes a
quote, sees where it lands (exact / fuzzy with a character diff / ambiguous / unresolved),
and saves it as an event. Also: retract a quote, mark a question "no answer in corpus" (and
undo one's own mark).

A short quote (under ``MIN_QUOTE_CHARS`` characters or ``MIN_QUOTE_WORDS`` words) or one
whose text occurs more than once in the corpus is saved only when the author confirms it
(:func:`quote_warnings` says why; ``save_quote(..., confirmed=True)``): such a quote becomes
a graded qrel and may not show what answers the question.

Search and resolution read the store's persisted corpus index (golden_store.corpus.index):
nothing is built per process."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace

from annotator.labeling import labeling
from annotator.labeling.evidence_rounds import check_can_write, is_blind, say_no_answer, visible_evidence
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import documents
from golden_store.live import evidence, queries
from golden_store.live import evidence_rounds
from golden_store.corpus.index import CorpusSearchIndex
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live.evidence import EvidenceSpan, new_evidence_id
from golden_store.corpus.resolver import DEFAULT_THRESHOLD, Candidate, IndexedResolver, Resolution
from golden_store.live.rubric import current_rubric
from golden_store.corpus.search import SearchHit, search_indexed
from golden_store.db.store import Store

def corpus_index(store: Store) -> CorpusSearchIndex:
    """The store's persisted word index (golden_store.corpus.index), current with its corpus:
    opening it costs milliseconds, so every session and process uses its own handle."""
    return documents.search_index(store)


def resolver(store: Store, threshold: float = DEFAULT_THRESHOLD) -> IndexedResolver:
    """A quote resolver over the store's persisted index (which also holds the raw texts
    that offsets map back to)."""
    return IndexedResolver(corpus_index(store), threshold=threshold)


# ---- the queue ----------------------------------------------------------------------------


def queue(store: Store, user: User):
    """Answerable questions: the annotator's evidence-round questions first, then those
    still without evidence. On a blind (unsettled round) question the quote count is the
    annotator's own, so nobody learns that another already quoted it."""
    require(user, Permission.LABEL)
    df = evidence.evidence_queue(store)
    blind = evidence_rounds.unsettled(store)
    if blind and not user.can(Permission.ADJUDICATE):
        own = {q: len(visible_evidence(store, user, q)) for q in blind if q in set(df["query_id"])}
        df["quotes"] = [own.get(q, n) for q, n in zip(df["query_id"], df["quotes"])]
    mine = evidence_rounds.assigned_to(store, user.username)
    df["in_round"] = df["query_id"].isin(mine)
    return df.sort_values(["in_round", "quotes", "query_id"], ascending=[False, True, True],
                          key=lambda c: c > 0 if c.name == "quotes" else c).reset_index(drop=True)


def question(store: Store, user: User, query_id: str) -> queries.QueryRecord:
    require(user, Permission.LABEL)
    rec = queries.get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    return rec


def quotes(store: Store, user: User, query_id: str) -> list[dict]:
    """The quotes this user may see (only their own on a question of an unsettled round)."""
    require(user, Permission.LABEL)
    return visible_evidence(store, user, query_id)


def in_evidence_round(store: Store, user: User, query_id: str) -> bool:
    """True while the question is in an unsettled evidence round (and this user is blind)."""
    require(user, Permission.LABEL)
    return is_blind(store, query_id) and not user.can(Permission.ADJUDICATE)


def said_no_answer(store: Store, user: User, query_id: str) -> bool:
    require(user, Permission.LABEL)
    return user.username in evidence_rounds.no_answer_actors(store, query_id)


def withdraw_no_answer(store: Store, user: User, query_id: str) -> None:
    say_no_answer(store, user, query_id, on=False)


# ---- search and resolution ---------------------------------------------------------------


def search_corpus(store: Store, user: User, text: str, *, limit: int = 8) -> list[SearchHit]:
    require(user, Permission.LABEL)
    return search_indexed(corpus_index(store), text, limit=limit)


@dataclass(frozen=True)
class Placement:
    """Where a candidate landed, for display: raw text around it and a character diff."""

    candidate: Candidate
    before: str
    passage: str
    after: str
    diff: tuple[tuple[str, str], ...]  # (op, text): op in equal / quote_only / corpus_only


def char_diff(quote: str, passage: str) -> tuple[tuple[str, str], ...]:
    """Character diff between the canonical quote and the canonical corpus passage."""
    from golden_store.core.canonical import canonical_text

    a, b = canonical_text(quote), canonical_text(passage)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("equal", a[i1:i2]))
            continue
        if i2 > i1:
            out.append(("quote_only", a[i1:i2]))
        if j2 > j1:
            out.append(("corpus_only", b[j1:j2]))
    return tuple(out)


def resolve(store: Store, user: User, quote: str, *, doc_id: str | None = None,
            threshold: float = DEFAULT_THRESHOLD) -> Resolution:
    require(user, Permission.LABEL)
    return resolver(store, threshold).resolve(quote, doc_id=doc_id)


def placement(store: Store, user: User, quote: str, cand: Candidate, *, context: int = 240) -> Placement:
    require(user, Permission.LABEL)
    raw = documents.raw_text(store, cand.doc_id)
    if raw is None:
        raise NotFoundError(f"Document {cand.doc_id!r} is no longer in the corpus.")
    passage = raw[cand.start:cand.end]
    return Placement(cand, raw[max(0, cand.start - context):cand.start], passage,
                     raw[cand.end:cand.end + context], char_diff(quote, passage))


# ---- quoting by selection ----------------------------------------------------------------

MAX_QUOTE_CHARS = 5000  # a quote is a passage, not a document


@dataclass(frozen=True)
class ShownDocument:
    doc_id: str
    text: str    # raw text: a selection's offsets index it
    digest: str  # of what is shown, so a selection is refused if the document changed since


def document(store: Store, user: User, doc_id: str) -> ShownDocument:
    require(user, Permission.LABEL)
    raw = documents.raw_text(store, doc_id)
    if raw is None:
        raise NotFoundError(f"Document {doc_id!r} is no longer in the corpus.")
    return ShownDocument(doc_id, raw, labeling.digest(doc_id, raw))


def resolve_selection(store: Store, user: User | None, selection: dict) -> tuple[str, Resolution, int | None]:
    """A passage selected in the document viewer, as a quote: its raw offsets are checked
    against the document shown (digest and text), the quote is confirmed by the resolver
    exactly as a pasted one is, and of the places the resolver finds the one selected is
    chosen. Returns (quote, resolution, index of the selected place among the candidates).
    ``user`` None (signed out since the document was shown) is refused as every write refuses it."""
    user = require(user, Permission.LABEL)
    try:
        doc_id, start, end = str(selection["doc_id"]), int(selection["start"]), int(selection["end"])
    except (KeyError, TypeError, ValueError):
        raise ValidationError("The selection did not say where it was; select the passage again.") from None
    shown = document(store, user, doc_id)
    if shown.digest != selection.get("digest"):
        raise ValidationError(f"{doc_id} changed since it was shown (re-imported); select the passage again.")
    raw = shown.text
    if not 0 <= start < end <= len(raw) or raw[start:end] != selection.get("text"):
        raise ValidationError("The selection could not be placed exactly in the document; select it again or "
                              "paste the quote instead.")
    while start < end and raw[start].isspace():
        start += 1
    while end > start and raw[end - 1].isspace():
        end -= 1
    quote = raw[start:end]
    if not quote:
        raise ValidationError("The selection is only white space; select the passage that answers the question.")
    if len(quote) > MAX_QUOTE_CHARS:
        raise ValidationError(f"The selection is {len(quote):,} characters; a quote is at most "
                              f"{MAX_QUOTE_CHARS:,}: select the passage that answers, not the whole section.")
    res = resolve(store, user, quote, doc_id=doc_id)
    places = list(res.candidates) if res.status == "ambiguous" else [res.best] if res.best else []

    def overlap(c: Candidate) -> int:
        return min(c.end, end) - max(c.start, start) if c.doc_id == doc_id else -1

    best = max(range(len(places)), key=lambda i: overlap(places[i]), default=None)
    if best is not None and overlap(places[best]) <= 0:
        best = None
    return quote, res, best


# ---- saving ------------------------------------------------------------------------------

MIN_QUOTE_CHARS = 30  # a shorter quote is saved only when confirmed
MIN_QUOTE_WORDS = 5


def _exact_occurrences(store: Store, canon: str, stop: int = 2) -> int:
    """How many times the canonical text occurs in the canonical corpus (counting stops at ``stop``)."""
    r = resolver(store)
    n = 0
    for text in r.texts(r.candidate_ids(canon)).values():
        n += text.count(canon)
        if n >= stop:
            break
    return n


def quote_warnings(store: Store, user: User, quote: str, resolution: Resolution) -> list[str]:
    """Why this quote should be confirmed before it is saved (empty: nothing to confirm):
    it is short, or its text occurs more than once in the corpus (the resolver's ``ambiguous``
    status, or the exact text found several times)."""
    require(user, Permission.LABEL)
    from golden_store.core.canonical import canonical_text

    canon = " ".join(canonical_text(quote).split())
    words = len(canon.split())
    out: list[str] = []
    if len(canon) < MIN_QUOTE_CHARS or words < MIN_QUOTE_WORDS:
        out.append(f"The quote is short ({len(canon)} characters, {words} word{'s' if words != 1 else ''}; "
                   f"at least {MIN_QUOTE_CHARS} characters and {MIN_QUOTE_WORDS} words are expected): "
                   "check that it shows the answer, not just a phrase.")
    if canon and (resolution.status == "ambiguous" or _exact_occurrences(store, canon) > 1):
        out.append("The quote's text occurs more than once in the corpus: check that the place chosen is the "
                   "one that answers the question, or quote a longer passage.")
    return out



def save_quote(store: Store, user: User, query_id: str, quote: str, resolution: Resolution,
               chosen: Candidate | None = None, note: str | None = None, *, confirmed: bool = False) -> str:
    """Save a located quote (or, for an ambiguous one, the candidate the expert chose) as an
    evidence event. Returns the new evidence id. A short or repeated quote
    (:func:`quote_warnings`) is refused unless ``confirmed``."""
    require(user, Permission.LABEL)
    rec = queries.get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    check_can_write(store, user, query_id, quoting=True)
    if not rec.answerable:
        raise ValidationError(f"Query {query_id} is marked 'no answer in corpus'; it takes no quotes.")
    if resolution.status == "unresolved":
        raise ValidationError("The quote was not found in the corpus; edit it until it resolves.")
    if resolution.status == "ambiguous":
        if chosen is None or chosen not in resolution.candidates:
            raise ValidationError("The quote occurs in several places: choose one before saving.")
        cand, kind = chosen, ("exact" if chosen.score >= 100 else "fuzzy")
    elif resolution.best is not None:  # exact and fuzzy always carry the span they found
        cand, kind = resolution.best, resolution.status
    else:
        raise ValidationError(f"The quote is {resolution.status}: it has no place in the corpus to save.")
    if not confirmed and (warnings := quote_warnings(store, user, quote, resolution)):
        raise ValidationError("Quote not saved: confirm it first (\"Save anyway\").", warnings)
    same = [q for q in visible_evidence(store, user, query_id)
            if (q["doc_id"], q["start"], q["end"]) == (cand.doc_id, cand.start, cand.end)]
    if same:
        raise ValidationError(f"This passage is already a quote of {query_id} ({same[0]['evidence_id']}).")
    stored, typed_note = stored_quote(store, quote, cand)
    rubric = current_rubric(store)
    eid = new_evidence_id()
    evidence.append_evidence(
        store,
        [EvidenceSpan(query_id, eid, stored, cand.doc_id, cand.start, cand.end, cand.canonical_start,
                      cand.canonical_end, kind, cand.score)],
        actor=user.username, rubric_version=rubric["version"] if rubric else None,
        note=" | ".join(n for n in (typed_note, note) if n) or None,
    )
    return eid


TYPED_PREFIX = "typed: "  # a fuzzy quote's note starts with the text the expert typed, as a JSON string


def stored_quote(store: Store, quote: str, cand: Candidate) -> tuple[str, str | None]:
    """What a quote is saved as: the document's own text of the span (what exports carry as
    ``quote``, so nobody reads misspelt gold) and, when the expert's text differs from it (a
    fuzzy match), a note keeping what they typed (``typed: "..."``, a JSON string, so the
    text reads back exactly whatever it holds). An exact quote is saved as typed."""
    if cand.score >= 100:
        return quote, None
    raw = documents.raw_text(store, cand.doc_id)
    if raw is None:
        raise NotFoundError(f"Document {cand.doc_id!r} is no longer in the corpus.")
    corpus = raw[cand.start:cand.end]
    return (corpus, TYPED_PREFIX + json.dumps(quote, ensure_ascii=False)) if corpus != quote else (quote, None)


def typed_form(note: str | None) -> str | None:
    """The text the expert typed for a fuzzy quote (from the note :func:`save_quote` wrote), or None."""
    if not note or not note.startswith(TYPED_PREFIX):
        return None
    try:
        typed, _ = json.JSONDecoder().raw_decode(note, len(TYPED_PREFIX))
    except ValueError:
        return None
    return typed if isinstance(typed, str) else None


def retract_quote(store: Store, user: User, query_id: str, evidence_id: str) -> None:
    require(user, Permission.LABEL)
    if not any(q["evidence_id"] == evidence_id for q in visible_evidence(store, user, query_id)):
        raise NotFoundError(f"Query {query_id} has no current quote {evidence_id}.")
    if not evidence.retract_evidence(store, query_id, evidence_id, actor=user.username):
        raise NotFoundError(f"Query {query_id} has no current quote {evidence_id}.")


def mark_no_answer(store: Store, user: User, query_id: str) -> None:
    """Record that the corpus does not answer the question: it joins the negative stratum.
    Refused while the question still has quotes (retract them first: a label is never
    silently dropped)."""
    require(user, Permission.LABEL)
    rec = queries.get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    if is_blind(store, query_id):  # in an evidence round it is this annotator's own verdict
        say_no_answer(store, user, query_id)
        return
    if evidence.list_evidence(store, query_id):
        raise ValidationError(f"Query {query_id} still has quotes; retract them before marking it unanswerable.")
    if not rec.answerable:
        raise ValidationError(f"Query {query_id} is already marked 'no answer in corpus'.")
    note = (rec.notes + " | " if rec.notes else "") + f"no answer in corpus (was stratum {rec.stratum}, {user.username})"
    queries.save_query(store, replace(rec, answerable=False, stratum="negative", notes=note),
                       actor=user.username, must_exist=True)


def _own_mark(store: Store, user: User, query_id: str):
    """The revision before this user's "no answer" mark, if the mark is the question's latest
    revision (else None: only one's own, still current mark can be undone)."""
    hist = queries.query_history(store, query_id)
    if len(hist) < 2:
        return None
    last, before = hist.iloc[-1], hist.iloc[-2]
    if (last["actor"] != user.username or bool(last["answerable"]) or bool(last["retired"])
            or not bool(before["answerable"]) or last["stratum"] != "negative"):
        return None
    return before


def my_no_answers(store: Store, user: User) -> list[queries.QueryRecord]:
    """Questions this user marked "no answer in corpus" (outside evidence rounds) whose mark
    is still their latest revision: the ones :func:`undo_no_answer` can reopen."""
    require(user, Permission.LABEL)
    # the rule of _own_mark, for every question at once in SQL (golden_store.live.queries)
    return [rec for qid in queries.no_answer_marks(store, user.username)
            if (rec := queries.get_query(store, qid)) is not None]


def undo_no_answer(store: Store, user: User, query_id: str) -> None:
    """Reopen a question this user marked "no answer in corpus": a new revision restores the
    stratum and notes it had before (the mark stays in the history)."""
    require(user, Permission.LABEL)
    rec = queries.get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    before = _own_mark(store, user, query_id)
    if before is None:
        raise ValidationError(f"Query {query_id} has no \"no answer\" mark of yours to undo (only your own mark, "
                              "while it is the question's latest change, can be undone; a lead can edit it on the "
                              "Queries page).")
    queries.save_query(store, replace(rec, answerable=True, stratum=str(before["stratum"]),
                                      notes=str(before["notes"] or "")),
                       actor=user.username, must_exist=True)
