"""Generated stores for the differential harness: a hypothesis strategy for a small, nasty
"world" (plain data), and the code that writes a world into a real store through the studio's
own entry points (documents, queries, evidence, people's grades, a TREC qrels import, a
freeze) and writes its run files.

A world: 2-6 documents of 12-40 tokens ("a00 a01 ..."; token i of a document is characters
[4i, 4i + 3)); 1-3 strata of 1-30 questions (at most 40 in all), some unanswerable; per
answerable question evidence quotes, document grades (imported as TREC qrels), passage grades
by one or two people (sometimes disagreeing: no final grade), and sometimes a person's grade
of a whole document; unanswerable questions only grades 0-1 (freezing refuses an answer to
one). Two document runs (ties in score, sometimes a repeated document, questions left out,
rows for unanswerable and unlabeled questions) and passage runs over several chunkers (token
windows, overlapping or not) with ties in score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

TOKEN = 4  # "a00 " : a token and its space


@dataclass
class World:
    docs: dict[str, str]
    queries: list[tuple[str, str, bool]]  # (query id, stratum, answerable)
    evidence: list[tuple[str, str, int, int]] = field(default_factory=list)  # (q, doc, start, end)
    imported: dict[tuple[str, str], int] = field(default_factory=dict)  # (q, doc) -> grade (TREC qrels)
    grades: list[tuple[str, str, int, int, int, str]] = field(default_factory=list)  # people's grades
    doc_runs: dict[str, list[tuple[str, str, float]]] = field(default_factory=dict)  # name -> (q, doc, score)
    chunkers: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)  # name -> (doc, start, end)
    passage_runs: dict[str, list[tuple[str, str, int, int, float]]] = field(default_factory=dict)  # (q, doc, s, e, sc)

    @property
    def doc_len(self) -> dict[str, int]:
        return {d: len(t) for d, t in self.docs.items()}

    @property
    def unanswerable(self) -> list[str]:
        return [q for q, _s, a in self.queries if not a]

    @property
    def strata(self) -> dict[str, str]:
        return {q: s for q, s, _a in self.queries}

    def all_grades(self) -> list[tuple[str, str, int, int, int, str]]:
        """Every current grade: people's and the import's (its actor is the file)."""
        n = self.doc_len
        return [*self.grades, *[(q, d, 0, n[d], g, "import") for (q, d), g in self.imported.items()]]

    def describe(self) -> str:
        return (f"{len(self.docs)} docs, {len(self.queries)} questions ({len(self.unanswerable)} unanswerable), "
                f"{len(self.evidence)} quotes, {len(self.imported)} imported doc grades, {len(self.grades)} grades")


def tokens(doc: str, n: int) -> str:
    return " ".join(f"{doc.lower()}{i:02d}" for i in range(n))


def span(first: int, last: int) -> tuple[int, int]:
    """Characters of tokens first..last (inclusive)."""
    return TOKEN * first, TOKEN * last + 3


@st.composite
def token_span(draw, n_tokens: int, max_len: int | None = None) -> tuple[int, int]:
    first = draw(st.integers(0, n_tokens - 1))
    last = draw(st.integers(first, min(n_tokens - 1, first + (max_len or n_tokens))))
    return span(first, last)


@st.composite
def worlds(draw, max_questions: int = 40, share_neg: float | None = None) -> World:
    n_docs = draw(st.integers(2, 6))
    names = [chr(ord("A") + i) for i in range(n_docs)]
    docs = {d: tokens(d, draw(st.integers(12, 40))) for d in names}
    ntok = {d: (len(t) + 1) // TOKEN for d, t in docs.items()}
    n_strata = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 30)) for _ in range(n_strata)]
    while sum(sizes) > max_questions:
        i = sizes.index(max(sizes))
        sizes[i] -= 1
    if share_neg is None:
        share_neg = draw(st.sampled_from([0.0, 0.15, 0.4]))
    queries = []
    for si, size in enumerate(sizes):
        for j in range(size):
            queries.append((f"q{si}{j:02d}", f"s{si}", not draw(st.booleans()) if share_neg and
                            draw(st.floats(0, 1)) < share_neg else True))
    w = World(docs, queries)
    people = ["ann1", "ann2"]
    for q, _s, answerable in queries:
        kind = draw(st.sampled_from(["none", "light", "rich", "rich"]))
        if kind == "none":
            continue
        for d in draw(st.lists(st.sampled_from(names), max_size=3 if kind == "rich" else 1, unique=True)):
            if answerable and draw(st.booleans()):
                s, e = draw(token_span(ntok[d], 6))
                w.evidence.append((q, d, s, e))
            if draw(st.booleans()):  # a document grade
                g = draw(st.integers(0, 3 if answerable else 1))
                if draw(st.integers(0, 4)) == 0:  # a person's grade of the whole document
                    w.grades.append((q, d, 0, len(docs[d]), g, "ann1"))
                else:
                    w.imported[(q, d)] = g
            for _ in range(draw(st.integers(0, 2))):  # passage grades
                s, e = draw(token_span(ntok[d], 8))
                if (s, e) == (0, len(docs[d])):
                    continue
                g = draw(st.integers(0, 3 if answerable else 1))
                w.grades.append((q, d, s, e, g, "ann1"))
                second = draw(st.sampled_from(["none", "none", "agree", "disagree"]))
                if second == "agree":
                    w.grades.append((q, d, s, e, g, people[1]))
                elif second == "disagree" and (answerable or g == 0):
                    w.grades.append((q, d, s, e, (g + 1) % (4 if answerable else 2), people[1]))
    # document runs: a share of the questions, documents in a random order, scores with ties
    qids = [q for q, *_ in queries]
    score = st.sampled_from([1.0, 2.0, 2.0, 3.0, 4.5, 5.0])
    for run in ("base", "cand"):
        lines = []
        dup_ok = run == "base" and draw(st.integers(0, 4)) == 0  # trec_eval refuses such a run
        for q in qids:
            if draw(st.integers(0, 5)) == 0:
                continue  # left out of the run
            for d in draw(st.lists(st.sampled_from(names), min_size=1, max_size=n_docs, unique=True)):
                lines.append((q, d, draw(score)))
            if dup_ok and draw(st.integers(0, 6)) == 0:
                lines.append((q, lines[-1][1], draw(score)))
        w.doc_runs[run] = lines or [(qids[0], names[0], 1.0)]  # a run file has at least one line
    # chunkers: token windows (size, stride); overlap when stride < size
    for c in range(draw(st.integers(1, 3))):
        size = draw(st.integers(2, 12))
        stride = draw(st.integers(max(1, size // 2), size))
        w.chunkers[f"c{c}"] = [(d, *span(i, min(i + size, ntok[d]) - 1)) for d in names
                               for i in range(0, ntok[d], stride)]
    for name, chunks in w.chunkers.items():
        lines2 = []
        for q in qids:
            if draw(st.integers(0, 5)) == 0:
                continue
            picked = draw(st.lists(st.sampled_from(range(len(chunks))), min_size=1, max_size=12, unique=True))
            for i in picked:
                lines2.append((q, *chunks[i], draw(score)))
        w.passage_runs[name] = lines2 or [(qids[0], *chunks[0], 1.0)]
    return w


# ---- writing a world into a store (the studio's entry points) -----------------------------------

def build_store(w: World, root: Path, template: Path | None = None) -> Path:
    """A DuckDB store at ``root / golden.duckdb`` holding ``w``, frozen as version ``v1``
    (versions beside the store), and the run files written in ``root``. ``template``: a
    migrated empty store to copy (faster than migrating)."""
    import shutil

    from annotator.integration import judgments_import
    from annotator.people import identity
    from golden_store.db.store import Store
    from golden_store.freezing import freeze
    from golden_store.live import queries as lq
    from golden_store.live.documents import import_paths
    from golden_store.live.evidence import EvidenceSpan, append_evidence
    from golden_store.live.judging import insert_tx

    root.mkdir(parents=True, exist_ok=True)
    db = root / "golden.duckdb"
    if template is not None:
        shutil.copyfile(template, db)
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in w.docs.items()))
    with Store.open(db) as store:
        import_paths(store, [corpus], actor="eng")
        for s in sorted({s for _q, s, _a in w.queries} - lq.known_strata(store)):
            lq.add_stratum(store, s, "generated", actor="eng")
        qfile = "".join(json.dumps({"id": q, "text": f"question {q}", "stratum": s, "answerable": a}) + "\n"
                        for q, s, a in w.queries).encode()
        lq.import_queries(store, lq.parse_query_file("q.jsonl", qfile, lq.known_strata(store)), actor="eng")
        if w.evidence:
            append_evidence(store, [EvidenceSpan(q, f"ev{i}", w.docs[d][s:e], d, s, e, s, e, "exact", 100.0)
                                    for i, (q, d, s, e) in enumerate(w.evidence)], actor="ann1")
        if w.grades:
            def tx(cur):
                for q, d, s, e, g, who in w.grades:
                    insert_tx(cur, who, q, d, s, e, op="grade", grade=g)
            store.write(tx)
        if w.imported:
            admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789ab")
            lead = identity.create_user(store, admin, "lead1", ["lead"], password="0123456789ab")
            qrels = root / "qrels.trec"
            qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in w.imported.items()))
            judgments_import.import_judgments(store, lead, qrels)
        freeze(store, "v1", actor="eng")
    for name, lines in w.doc_runs.items():
        (root / f"{name}.trec").write_text(
            "".join(f"{q} Q0 {d} {i + 1} {sc} {name}\n" for i, (q, d, sc) in enumerate(lines)))
    for name, lines in w.passage_runs.items():
        (root / f"{name}.jsonl").write_text(
            "".join(json.dumps({"query_id": q, "doc_id": d, "start": s, "end": e, "score": sc}) + "\n"
                    for q, d, s, e, sc in lines))
    return db
