"""Exports of a frozen version: TREC qrels, the BEIR layout, and JSONL.

Exports read the frozen version only (never the live store), so an export is exactly as
reproducible as the version. Held-out queries are exported with their flag set; the
exported files carry the version's content digest so a number computed from them can be
traced back.

An exported qrels file must give the numbers ``golden score --version`` gives (issue 36,
item 4): scored with trec_eval, pytrec_eval, ir_measures or ranx it used to disagree, because
it held the unanswerable questions' judged-0 rows (scored 0 and averaged in; the studio
leaves those questions out) and said nothing of the relevance level (2 in the studio, 1 in
trec_eval by default). So the TREC and BEIR exports

* leave the unanswerable questions' rows out of the qrels and write them to a file of their
  own (``qrels.unanswerable.txt``; BEIR: ``qrels-unanswerable/test.tsv``, a qrels folder a
  BEIR loader can be pointed at), nothing lost;
* write beside each qrels file its scoring note (``<name>.scoring.json``,
  :func:`golden_store.versions.qrels.scoring_sidecar`): the relevance level, the grade
  scale, what was left out and how to score (``golden score --qrels`` reads it);
* keep the answerable / held-out flags of every query: BEIR in ``queries.jsonl``'s metadata,
  TREC in ``queries.meta.tsv`` (``queries.tsv`` stays the two columns tools read);
* say all this in a ``README.txt``.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from golden_store.core.errors import ValidationError
from golden_store.versions.format import thaw
from golden_store.versions.reader import FrozenVersion
from golden_store.versions.qrels import (
    GRADES, RELEVANCE_LEVEL, file_sha256, qrels_lines, scoring_sidecar, sidecar_path, split_unanswerable, write_sidecar)

FORMATS = ("trec", "beir", "jsonl")


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)
            fh.write("\n")


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def _unanswerable(v: FrozenVersion) -> list[str]:
    q = v.queries
    return sorted(q.loc[~q["answerable"].astype(bool), "query_id"]) if "answerable" in q.columns else []


def _qrels_with_note(v: FrozenVersion, out: Path, fmt: str, name: str, apart_name: str,
                     lines: Any) -> tuple[list[str], dict[str, Any]]:
    """Write the answerable questions' qrels to ``name``, the unanswerable ones' rows (if
    any) to ``apart_name``, and the scoring note beside ``name``; ``lines(qrels)`` gives a
    file's lines. Returns (the files written, the note)."""
    unanswerable = _unanswerable(v)
    keep, apart = split_unanswerable(v.qrels(), unanswerable)
    _write_lines(out / name, lines(keep))
    written = [name]
    if apart:
        _write_lines(out / apart_name, lines(apart))
        written.append(apart_name)
    note = scoring_sidecar(qrels_file=Path(name).name, qrels_format=fmt, qrels_sha256=file_sha256(out / name),
                           manifest=v.manifest, n_queries=len(keep), left_out=sorted(apart),
                           # as a path from the note's folder (BEIR: ../qrels-unanswerable/test.tsv)
                           left_out_file=Path(os.path.relpath(apart_name, Path(name).parent)).as_posix()
                           if apart else None,
                           unanswerable=unanswerable)
    side = sidecar_path(out / name)
    write_sidecar(side, note)
    written.append(side.relative_to(out).as_posix())
    return written, note


def _readme(v: FrozenVersion, fmt: str, files: dict[str, str], note: dict[str, Any] | None,
            qrels_name: str = "", apart_name: str = "") -> list[str]:
    """README.txt of an export: what each file is and, for qrels (``qrels_name``, the rows
    left out in ``apart_name``, both as paths in the export), what "relevant" means."""
    m = v.manifest
    out = [f"Export ({fmt}) of frozen version {m.get('dataset_version')}, content digest {m.get('content_digest')}.",
           "Made by the golden-set curation studio (golden export); manifest.json is the version's manifest.", ""]
    out += [f"{name}: {what}" for name, what in files.items()]
    if note is not None:
        lvl = note["relevance_level"]
        left = note["left_out"]
        out += ["", f"Relevant means grade >= {lvl}: binary measures (AP, P, R, RR, Bpref) count grade >= {lvl} "
                    f"({GRADES[str(lvl)]} or better, on the 0-3 scale: "
                    + ", ".join(f"{k} {g}" for k, g in GRADES.items()) + "); nDCG uses the grades.",
                f"Score with trec_eval -c -l {lvl}, pytrec_eval relevance_level={lvl}, ir_measures R(rel={lvl})@10 "
                f"AP(rel={lvl}) P(rel={lvl})@5 RR(rel={lvl}) nDCG@10, or golden score --qrels {qrels_name} "
                f"(it reads the scoring note): the numbers equal golden score --version {m.get('dataset_version')}.",
                f"Unanswerable questions (answerable = false: {len(note['unanswerable_questions'])}) are not in the "
                f"qrels: retrieval measures are undefined for them. "
                + (f"The rows of {len(left['unanswerable'])} of them ({', '.join(left['unanswerable'][:10])}"
                   f"{', ...' if len(left['unanswerable']) > 10 else ''}) are in {apart_name}."
                   if left["unanswerable"] else "None of them has qrels rows."),
                "The scoring note (*.scoring.json) says the same for programs: relevance_level, graded, left_out, "
                "how_to_score."]
    return out


def _trec(v: FrozenVersion, out: Path) -> list[str]:
    written, note = _qrels_with_note(v, out, "trec", "qrels.txt", "qrels.unanswerable.txt", qrels_lines)
    q = v.queries
    _write_lines(
        out / "queries.tsv",
        [f"{r.query_id}\t{' '.join(str(r.text).split())}" for r in q.itertuples(index=False)],
    )
    # queries.tsv stays the two columns (id, text) TREC tools read; the flags go beside it
    _write_lines(
        out / "queries.meta.tsv",
        ["query_id\tanswerable\theld_out\tstratum"]
        + [f"{r.query_id}\t{str(bool(r.answerable)).lower()}\t{str(bool(r.held_out)).lower()}\t{r.stratum}"
           for r in q.itertuples(index=False)],
    )
    files = {"qrels.txt": "TREC qrels (qid 0 docid grade) of the answerable questions",
             **({"qrels.unanswerable.txt": "the unanswerable questions' qrels rows, kept apart (not to be scored)"}
                if "qrels.unanswerable.txt" in written else {}),
             "qrels.scoring.json": "how to score qrels.txt (relevance level, grade scale, what was left out)",
             "queries.tsv": "query id, text (tab-separated)",
             "queries.meta.tsv": "query id, answerable, held_out, stratum (tab-separated, with a header)"}
    _write_lines(out / "README.txt", _readme(v, "trec", files, note, "qrels.txt", "qrels.unanswerable.txt"))
    return [*written, "queries.tsv", "queries.meta.tsv", "README.txt"]


def _beir(v: FrozenVersion, out: Path) -> list[str]:
    docs = v.documents
    _write_lines(
        out / "corpus.jsonl",
        # a missing title reads as NaN from the frozen file, which is not JSON (its corpus.jsonl did not read back)
        [_json({"_id": d.doc_id, "title": d.title if isinstance(d.title, str) else "", "text": d.raw_text})
         for d in docs.itertuples(index=False)],
    )
    _write_lines(
        out / "queries.jsonl",
        [
            _json({
                "_id": q.query_id,
                "text": q.text,
                "metadata": {"stratum": q.stratum, "answerable": bool(q.answerable), "held_out": bool(q.held_out)},
            })
            for q in v.queries.itertuples(index=False)
        ],
    )

    def tsv(qrels: dict[str, dict[str, int]]) -> list[str]:
        return ["query-id\tcorpus-id\tscore"] + [
            f"{qid}\t{doc}\t{g}" for qid in sorted(qrels) for doc, g in sorted(qrels[qid].items())]

    written, note = _qrels_with_note(v, out, "beir", "qrels/test.tsv", "qrels-unanswerable/test.tsv", tsv)
    files = {"corpus.jsonl": "the documents (_id, title, text)",
             "queries.jsonl": "the questions (_id, text; metadata: stratum, answerable, held_out)",
             "qrels/test.tsv": "BEIR qrels (query-id, corpus-id, score) of the answerable questions",
             "qrels/test.scoring.json": "how to score qrels/test.tsv (relevance level, grade scale, what was left out)",
             **({"qrels-unanswerable/test.tsv": "the unanswerable questions' qrels rows, kept apart (not to be "
                                                "scored; a BEIR loader reads them with qrels_folder="
                                                "'qrels-unanswerable')"}
                if "qrels-unanswerable/test.tsv" in written else {})}
    _write_lines(out / "README.txt", _readme(v, "beir", files, note, "qrels/test.tsv", "qrels-unanswerable/test.tsv"))
    return ["corpus.jsonl", "queries.jsonl", *written, "README.txt"]


def grade_basis(basis: str, decided_by: object) -> tuple[str, int | None]:
    """What a final grade rests on, for consumers of the JSONL export (issue 29, M11), and
    how many annotators gave it (None for an adjudication: a lead's one decision):
    ``adjudicated`` (a lead decided a disagreement), ``agreed``
    (two or more annotators gave the same grade), ``single`` (one annotator's grade, never
    checked by a second). The frozen files keep the store's coarser word (``agreed`` for
    "no disagreement", whatever the count) so versions frozen before stay as they are; the
    count comes from ``decided_by``, the annotators' names joined by commas."""
    who = [a for a in str(decided_by or "").split(",") if a]
    if basis != "agreed":
        return str(basis), None
    return ("agreed" if len(who) >= 2 else "single"), len(who)


def _jsonl(v: FrozenVersion, out: Path) -> list[str]:
    spans: dict[str, list] = {}
    for s in v.spans.itertuples(index=False):
        spans.setdefault(s.query_id, []).append({
            "evidence_id": s.evidence_id, "quote": s.quote, "doc_id": s.doc_id,
            "start": int(s.start), "end": int(s.end),
            "canonical_start": int(s.canonical_start), "canonical_end": int(s.canonical_end),
            "match_kind": s.match_kind,
        })
    judg: dict[str, list] = {}
    for j in v.judgments.itertuples(index=False):
        basis, n = grade_basis(j.basis, j.decided_by)
        judg.setdefault(j.query_id, []).append(
            {"doc_id": j.doc_id, "start": int(j.start), "end": int(j.end), "grade": int(j.grade), "basis": basis,
             **({"annotators": n} if n is not None else {})}
        )
    nug: dict[str, list] = {}
    for n in v.nuggets.itertuples(index=False):
        nug.setdefault(n.query_id, []).append({"nugget_id": n.nugget_id, "text": n.text, "importance": n.importance})
    qrels = v.qrels()
    lines = []
    for q in v.queries.itertuples(index=False):
        lines.append(_json({
            "query_id": q.query_id, "text": q.text, "stratum": q.stratum,
            "answerable": bool(q.answerable), "held_out": bool(q.held_out), "source": q.source,
            "date": str(q.created_date), "evidence": spans.get(q.query_id, []),
            "judgments": judg.get(q.query_id, []), "nuggets": nug.get(q.query_id, []),
            "qrels": qrels.get(q.query_id, {}),
        }))
    _write_lines(out / "golden.jsonl", lines)
    _write_lines(out / "README.txt", _readme(v, "jsonl", {
        "golden.jsonl": ("one question per line: text, stratum, answerable, held_out, evidence spans, judgments, "
                         "nuggets and its derived qrels (an answerable = false question's qrels are not scored by "
                         f"golden score: retrieval measures are undefined for it; binary measures count grade >= "
                         f"{RELEVANCE_LEVEL})")}, None))
    return ["golden.jsonl", "README.txt"]


def export_version(v: FrozenVersion, fmt: str, out_dir: str | Path) -> list[Path]:
    """Write ``fmt`` files for ``v`` into ``out_dir`` (created; must be empty or absent),
    plus a copy of the manifest. Written to a temp folder first, so a failure leaves no
    half export."""
    if fmt not in FORMATS:
        raise ValidationError(f"Unknown export format {fmt!r}; use one of {', '.join(FORMATS)}.")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValidationError(f"Export refused: {out} exists and is not an empty folder; choose a new --out.")
    tmp = out.parent / f".tmp-export-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        written = {"trec": _trec, "beir": _beir, "jsonl": _jsonl}[fmt](v, tmp)
        (tmp / "manifest.json").write_text(
            json.dumps(thaw(v.manifest), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if out.exists():
            out.rmdir()
        os.rename(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return [out / w for w in [*written, "manifest.json"]]
