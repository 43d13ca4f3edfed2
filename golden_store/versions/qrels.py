"""Deriving document-level qrels from span evidence and passage judgments (pure functions).

Labels are stored as spans and (query, passage) grades; qrels are derived, never authored.
The rule, recorded in every manifest as ``qrels_rule``:

* a document that holds an evidence span for a query gets grade ``EVIDENCE_GRADE`` (3,
  "fully answers": an expert quoted it as the answer, or as one hop of it);
* a document with judged passages gets the maximum grade of those passages, 0 included,
  so judged-irrelevant documents are known to be judged (bpref, judged@k need that);
* the document's qrel is the maximum of the two.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from golden_store.core.errors import ValidationError
from golden_store.core.judgment_formats import QRELS_SIDECAR_FORMAT

EVIDENCE_GRADE = 3
QRELS_RULE = (
    "doc grade = max(3 if the doc holds an evidence span for the query, "
    "max grade of the query's judged passages in the doc); judged 0s are kept"
)


def derive_qrels(
    evidence: Iterable[tuple[str, str]],
    judgments: Iterable[tuple[str, str, int]],
) -> dict[str, dict[str, int]]:
    """``evidence``: (query_id, doc_id) pairs; ``judgments``: (query_id, doc_id, grade).
    Returns {query_id: {doc_id: grade}}."""
    out: dict[str, dict[str, int]] = {}
    for qid, doc in evidence:
        docs = out.setdefault(qid, {})
        docs[doc] = max(docs.get(doc, EVIDENCE_GRADE), EVIDENCE_GRADE)
    for qid, doc, grade in judgments:
        docs = out.setdefault(qid, {})
        docs[doc] = max(docs.get(doc, int(grade)), int(grade))
    return out


def qrels_lines(qrels: dict[str, dict[str, int]]) -> list[str]:
    """TREC qrels lines ``qid 0 docid grade``, sorted by query then document."""
    return [
        f"{qid} 0 {doc} {grade}"
        for qid in sorted(qrels)
        for doc, grade in sorted(qrels[qid].items())
    ]


# ---- what "relevant" means in an exported qrels file ----------------------------------------
#
# ``golden score --version`` counts grade >= 2 (partially or fully answers) as relevant for
# binary measures (golden_store.scoring.golden) and leaves unanswerable questions out. A
# qrels file alone says neither: trec_eval's default level is 1, and an unanswerable
# question's judged-0 rows would be scored 0 and averaged in. So the export leaves those rows
# out of the qrels (into a file of their own) and writes beside each qrels file a small JSON
# "sidecar" with the level and what was left out; ``golden score --qrels`` reads it, and
# trec_eval -l 2 / pytrec_eval relevance_level=2 / ir_measures rel=2 reproduce the version's
# numbers from it.

RELEVANCE_LEVEL = 2  # the version path's level (golden_store.scoring.golden.evaluate: rel=2)
GRADES = {"0": "irrelevant", "1": "related, does not answer", "2": "partially answers", "3": "fully answers"}
SIDECAR_SUFFIX = ".scoring.json"


def split_unanswerable(qrels: Mapping[str, Mapping[str, int]], unanswerable: Iterable[str]
                       ) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(the answerable questions' qrels, the unanswerable questions' qrels): retrieval
    measures are undefined for a question with no answer (METHODOLOGY §3.4), so its rows
    (judged-0 pooled passages) are kept apart instead of being scored 0."""
    neg = set(unanswerable)
    keep = {q: dict(d) for q, d in qrels.items() if q not in neg}
    apart = {q: dict(d) for q, d in qrels.items() if q in neg}
    return keep, apart


def sidecar_path(qrels_path: str | Path) -> Path:
    """Where the sidecar of ``qrels_path`` sits: beside it, its name with ``.scoring.json``
    for the suffix (``qrels.txt`` -> ``qrels.scoring.json``, ``qrels/test.tsv`` ->
    ``qrels/test.scoring.json``): one per qrels file, so a folder of splits stays clear."""
    p = Path(qrels_path)
    return p.with_name(p.stem + SIDECAR_SUFFIX)


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def scoring_sidecar(*, qrels_file: str, qrels_format: str, qrels_sha256: str, manifest: Mapping[str, Any],
                    n_queries: int, left_out: list[str], left_out_file: str | None,
                    unanswerable: list[str]) -> dict[str, Any]:
    """The sidecar's content (see the notes above). ``left_out``: the unanswerable questions
    whose rows were moved to ``left_out_file``; ``unanswerable``: every question of the
    version marked answerable = false (most have no rows at all)."""
    lvl = RELEVANCE_LEVEL
    run = "RUN"
    return {
        "format": QRELS_SIDECAR_FORMAT,
        "qrels_file": qrels_file,
        "qrels_format": qrels_format,
        "qrels_sha256": qrels_sha256,
        "dataset_version": manifest.get("dataset_version"),
        "content_digest": manifest.get("content_digest"),
        "qrels_rule": manifest.get("qrels_rule"),
        "relevance_level": lvl,
        "relevance": (f"binary measures (AP, P, R, RR, Bpref, Success, ...) count grade >= {lvl} (partially or "
                      f"fully answers) as relevant; nDCG uses the grades themselves"),
        "graded": "0-3",
        "grades": dict(GRADES),
        "n_queries": n_queries,
        "left_out": {
            "unanswerable": list(left_out),
            "file": left_out_file,
            "why": ("questions marked answerable = false have no relevant passage: retrieval measures are undefined "
                    "for them, so golden score leaves them out; their rows (judged pooled passages) are in the "
                    f"file named here (a path from this file's folder), not in {qrels_file}"),
        },
        "unanswerable_questions": sorted(unanswerable),
        "how_to_score": {
            "golden": f"golden score --qrels {qrels_file} --run {run} -m 'R@10' -m nDCG@10 (reads this file: "
                      f"level {lvl})",
            "trec_eval": (f"trec_eval -c -l {lvl} {qrels_file} {run}" if qrels_format == "trec" else
                          f"trec_eval -c -l {lvl} QRELS {run}, QRELS being this TSV as TREC lines: tail -n +2 "
                          f"{qrels_file} | awk -F'\\t' '{{print $1, 0, $2, $3}}'"),
            "pytrec_eval": (f"pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level={lvl}); it scores only "
                            "the queries the run ranks, so give every qrels query a ranking (trec_eval -c counts a "
                            "missing one as 0)"),
            "ir_measures": f"R(rel={lvl})@10, AP(rel={lvl}), P(rel={lvl})@5, RR(rel={lvl}), nDCG@10",
        },
    }


def write_sidecar(path: Path, content: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_sidecar(qrels_path: str | Path) -> dict[str, Any] | None:
    """The sidecar beside ``qrels_path`` (None when there is none). One that names another
    qrels file, or is not the export's, is refused: a level read from the wrong file would
    change every binary measure without a word."""
    p = sidecar_path(qrels_path)
    if not p.is_file():
        return None
    try:
        content = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{p}: not the JSON an export writes beside {Path(qrels_path).name} ({exc}); fix or "
                              "remove it, or give -l N.") from None
    if not isinstance(content, dict) or content.get("format") != QRELS_SIDECAR_FORMAT:
        raise ValidationError(f"{p}: not a qrels scoring note ({QRELS_SIDECAR_FORMAT}); remove or rename it, or give "
                              "-l N.")
    level = content.get("relevance_level")
    if isinstance(level, bool) or not isinstance(level, int):
        raise ValidationError(f"{p}: relevance_level {level!r} is not a whole number.")
    if content.get("qrels_file") != Path(qrels_path).name:
        raise ValidationError(f"{p} describes {content.get('qrels_file')!r}, not {Path(qrels_path).name!r}; give "
                              "-l N to score this file.")
    return content


def qrels_level(qrels_path: str | Path, given: int | None) -> tuple[int, str, list[str]]:
    """The relevance level of ``golden score --qrels FILE``, where it came from, and notes
    for stderr: ``-l N`` when given; else the level the export wrote beside FILE; else
    trec_eval's default 1. One rule for both paths of golden score: binary measures count
    grade >= the qrels' level."""
    side = read_sidecar(qrels_path)
    notes: list[str] = []
    name = sidecar_path(qrels_path).name
    if side is not None and side.get("qrels_sha256") and file_sha256(qrels_path) != side["qrels_sha256"]:
        notes.append(f"{Path(qrels_path).name} changed since the export wrote {name} (its sha256 differs)")
    if given is not None:
        if side is not None and side["relevance_level"] != given:
            notes.append(f"-l {given} given: {name} says {side['relevance_level']} (the version's level)")
        return given, f"-l {given}", notes
    if side is not None:
        return int(side["relevance_level"]), f"the level the export wrote beside the qrels ({name})", notes
    return 1, f"trec_eval's default (no -l and no {name} beside the qrels)", notes
