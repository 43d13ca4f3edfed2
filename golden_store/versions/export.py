"""Exports of a frozen version: TREC qrels, the BEIR layout, and JSONL.

Exports read the frozen version only (never the live store), so an export is exactly as
reproducible as the version. Held-out queries are exported with their flag set; the
exported files carry the version's content digest so a number computed from them can be
traced back.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from golden_store.core.errors import ValidationError
from golden_store.versions.frozen import FrozenVersion, thaw
from golden_store.versions.qrels import qrels_lines

FORMATS = ("trec", "beir", "jsonl")


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)
            fh.write("\n")


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def _trec(v: FrozenVersion, out: Path) -> list[str]:
    _write_lines(out / "qrels.txt", qrels_lines(v.qrels()))
    q = v.queries
    _write_lines(
        out / "queries.tsv",
        [f"{r.query_id}\t{' '.join(str(r.text).split())}" for r in q.itertuples(index=False)],
    )
    return ["qrels.txt", "queries.tsv"]


def _beir(v: FrozenVersion, out: Path) -> list[str]:
    docs = v.documents
    _write_lines(
        out / "corpus.jsonl",
        [_json({"_id": d.doc_id, "title": d.title or "", "text": d.raw_text}) for d in docs.itertuples(index=False)],
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
    qrels = v.qrels()
    _write_lines(
        out / "qrels" / "test.tsv",
        ["query-id\tcorpus-id\tscore"]
        + [f"{qid}\t{doc}\t{g}" for qid in sorted(qrels) for doc, g in sorted(qrels[qid].items())],
    )
    return ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]


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
    return ["golden.jsonl"]


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
