"""What changed between two frozen versions: queries, evidence spans, people's judgments,
the judge's labels and the approved nuggets (:func:`diff_versions`), and the same as text
(:func:`format_diff`) or as table rows (:func:`nugget_diff_rows`). Reads versions through
:mod:`~golden_store.versions.reader`; never imports the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from golden_store.versions.reader import FrozenVersion, load_version


def _jsonable(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:  # a missing value (e.g. no tier) read back as NaN
        return None
    return v


def diff_versions(a: str, b: str, versions_dir: Path | str | None = None) -> dict[str, Any]:
    """What changed from version ``a`` to ``b``: queries added/removed/changed (field by
    field), and per query the evidence spans and graded judgments added/removed/changed, the
    judge's labels apart (a version without them has none), and the approved nuggets
    added/removed/changed (text, importance, supporting quote)."""
    va, vb = load_version(a, versions_dir), load_version(b, versions_dir)
    fields = ["text", "stratum", "answerable", "source", "held_out", "notes"]
    if "tier" in va.queries.columns and "tier" in vb.queries.columns:  # versions frozen before tiers have none
        fields.append("tier")
    qa = va.queries.set_index("query_id")
    qb = vb.queries.set_index("query_id")
    added = sorted(set(qb.index) - set(qa.index))
    removed = sorted(set(qa.index) - set(qb.index))
    changed = []
    for qid in sorted(set(qa.index) & set(qb.index)):
        delta = {
            f: {"from": _jsonable(qa.at[qid, f]), "to": _jsonable(qb.at[qid, f])}
            for f in fields
            if qa.at[qid, f] != qb.at[qid, f] and not (f == "tier" and pd.isna(qa.at[qid, f]) and pd.isna(qb.at[qid, f]))
        }
        if delta:
            changed.append({"query_id": qid, "fields": delta})

    def span_keys(v: FrozenVersion) -> set[tuple]:
        return {(s.query_id, s.doc_id, int(s.start), int(s.end)) for s in v.spans.itertuples(index=False)}

    sa, sb = span_keys(va), span_keys(vb)
    ja = {(j.query_id, j.doc_id, int(j.start), int(j.end)): int(j.grade) for j in va.judgments.itertuples(index=False)}
    jb = {(j.query_id, j.doc_id, int(j.start), int(j.end)): int(j.grade) for j in vb.judgments.itertuples(index=False)}

    def span_dict(k: tuple) -> dict:
        return {"query_id": k[0], "doc_id": k[1], "start": k[2], "end": k[3]}

    def judge_keys(v: FrozenVersion) -> dict[tuple, dict[str, Any]]:  # empty for a version without the file
        return {(j.query_id, j.doc_id, int(j.start), int(j.end)): {"grade": int(j.grade), "route": j.route,
                                                                   "model": j.model}
                for j in v.judge_labels.itertuples(index=False)}

    la, lb = judge_keys(va), judge_keys(vb)
    na, nb = nugget_rows(va), nugget_rows(vb)

    return {
        "from": a,
        "to": b,
        "corpus_changed": va.manifest.get("corpus_digest") != vb.manifest.get("corpus_digest"),
        "queries": {"added": added, "removed": removed, "changed": changed},
        "spans": {
            "added": [span_dict(k) for k in sorted(sb - sa)],
            "removed": [span_dict(k) for k in sorted(sa - sb)],
        },
        "judgments": {
            "added": [{**span_dict(k), "grade": jb[k]} for k in sorted(set(jb) - set(ja))],
            "removed": [{**span_dict(k), "grade": ja[k]} for k in sorted(set(ja) - set(jb))],
            "changed": [
                {**span_dict(k), "from": ja[k], "to": jb[k]}
                for k in sorted(set(ja) & set(jb)) if ja[k] != jb[k]
            ],
        },
        # the judge's labels (issue 27), apart from people's judgments
        "judge_labels": {
            "added": [{**span_dict(k), **lb[k]} for k in sorted(set(lb) - set(la))],
            "removed": [{**span_dict(k), **la[k]} for k in sorted(set(la) - set(lb))],
            "changed": [{**span_dict(k), "from": la[k], "to": lb[k]}
                        for k in sorted(set(la) & set(lb)) if la[k] != lb[k]],
        },
        # the approved nuggets per question (issue 29, M12): what a generation score is measured against
        "nuggets": diff_nuggets(na, nb),
        # the approved reference answers and the answer criteria (issue 40): what correctness is scored against
        "reference_answers": _diff_keyed(_reference_rows(va), _reference_rows(vb), ("query_id",)),
        "answer_criteria": _diff_keyed(_criterion_rows(va), _criterion_rows(vb), ("scope", "scope_id", "criterion_id")),
    }


REFERENCE_FIELDS: tuple[str, ...] = ("short_answer", "full_answer", "evidence")
CRITERION_FIELDS: tuple[str, ...] = ("text", "example", "weight", "scale_max")


def _evidence_spans(raw: Any) -> list[str]:
    """A reference answer's anchors as ``doc[start:end]`` (the document's sha is not content)."""
    import json

    spans = json.loads(raw) if isinstance(raw, str) and raw else []
    return [f"{s['doc_id']}[{s['start']}:{s['end']}]" for s in spans]


def _reference_rows(v: FrozenVersion) -> dict[tuple, dict[str, Any]]:
    return {(r.query_id,): {"short_answer": None if _missing(r.short_answer) else r.short_answer,
                            "full_answer": None if _missing(r.full_answer) else r.full_answer,
                            "evidence": _evidence_spans(r.evidence)}
            for r in v.reference_answers.itertuples(index=False)}


def _criterion_rows(v: FrozenVersion) -> dict[tuple, dict[str, Any]]:
    return {(c.scope, c.scope_id, c.criterion_id): {"text": c.text, "example": c.example, "weight": float(c.weight),
                                                    "scale_max": int(c.scale_max)}
            for c in v.answer_criteria.itertuples(index=False)}


def _diff_keyed(a: Mapping[tuple, Mapping[str, Any]], b: Mapping[tuple, Mapping[str, Any]],
                names: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """Rows added, removed and changed (field by field) between two keyed tables."""
    def key(k: tuple) -> dict[str, Any]:
        return dict(zip(names, k))

    changed = []
    for k in sorted(set(a) & set(b)):
        delta = {f: {"from": a[k][f], "to": b[k][f]} for f in a[k] if a[k][f] != b[k].get(f)}
        if delta:
            changed.append({**key(k), "fields": delta})
    return {"added": [{**key(k), **b[k]} for k in sorted(set(b) - set(a))],
            "removed": [{**key(k), **a[k]} for k in sorted(set(a) - set(b))],
            "changed": changed}


# what a nugget is, for a diff: its content (not its position in the list, nor who wrote it)
NUGGET_FIELDS: tuple[str, ...] = ("text", "importance", "quote")


def _nugget_order(key: tuple[str, str]) -> tuple[str, int, str]:
    """Sort (query_id, nugget_id) with n2 before n10 (ids are ``n<number>``)."""
    qid, nid = key
    digits = nid[1:] if nid[:1] == "n" else ""
    return qid, int(digits) if digits.isdigit() else -1, nid


def _missing(v: Any) -> bool:
    """None, NaN/NA, or an empty string (a nugget without a quote)."""
    return v is None or v == "" or (not isinstance(v, str) and bool(pd.isna(v)))


def nugget_rows(v: FrozenVersion) -> dict[tuple[str, str], dict[str, Any]]:
    """The approved nuggets a version froze, by (query_id, nugget_id): text, importance, quote.
    A version whose nugget file lacks a column (or has no rows) gives what it has, so diffs of
    old versions keep working."""
    table = v.nuggets
    if table.empty or not {"query_id", "nugget_id"} <= set(table.columns):
        return {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in table.to_dict("records"):
        out[(str(row["query_id"]), str(row["nugget_id"]))] = {
            f: None if _missing(row.get(f)) else _jsonable(row.get(f)) for f in NUGGET_FIELDS}
    return out


def diff_nuggets(na: Mapping[tuple[str, str], Mapping[str, Any]],
                 nb: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Nuggets added, removed and changed (field by field) from ``na`` to ``nb``, in question
    order. Pure: the rows come from :func:`nugget_rows`. A nugget is matched by its id within
    its question (ids are never reused: a deleted nugget's id stays retired)."""
    def key(k: tuple[str, str]) -> dict[str, Any]:
        return {"query_id": k[0], "nugget_id": k[1]}

    changed = []
    for k in sorted(set(na) & set(nb), key=_nugget_order):
        fields = {f: {"from": na[k].get(f), "to": nb[k].get(f)} for f in NUGGET_FIELDS if na[k].get(f) != nb[k].get(f)}
        if fields:  # the nugget as it is in ``b``, and what changed
            changed.append({**key(k), **dict(nb[k]), "fields": fields})
    return {
        "added": [{**key(k), **dict(nb[k])} for k in sorted(set(nb) - set(na), key=_nugget_order)],
        "removed": [{**key(k), **dict(na[k])} for k in sorted(set(na) - set(nb), key=_nugget_order)],
        "changed": changed,
    }


def _nugget_line(sign: str, x: Mapping[str, Any]) -> str:
    quote = f' (quote: {x["quote"]!r})' if x.get("quote") else ""
    return f"  {sign} {x['query_id']} {x['nugget_id']} [{x['importance']}] {x['text']!r}{quote}"


def nugget_diff_rows(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per nugget change of a :func:`diff_versions` result, for a table: ``change``
    (added / removed / changed), question, nugget, and each field as it is in the newer
    version ("old -> new" spelled out in ``was`` for a change). Empty for a diff made before
    nuggets were diffed."""
    n = d.get("nuggets") or {}
    rows = [{"change": kind, "query_id": x["query_id"], "nugget_id": x["nugget_id"], "importance": x["importance"],
             "text": x["text"], "quote": x["quote"], "was": ""}
            for kind in ("added", "removed") for x in n.get(kind, [])]
    for c in n.get("changed", []):
        f = c["fields"]
        rows.append({"change": "changed", "query_id": c["query_id"], "nugget_id": c["nugget_id"],
                     "importance": c["importance"], "text": c["text"], "quote": c["quote"],
                     "was": "; ".join(f"{k}: {v['from']!r}" for k, v in f.items())})
    return sorted(rows, key=lambda r: (*_nugget_order((r["query_id"], r["nugget_id"])), r["change"]))


def format_nugget_diff(n: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The nugget part of :func:`format_diff`: a count line, then each change under it."""
    lines = [f"nuggets (approved): +{len(n['added'])} -{len(n['removed'])} ~{len(n['changed'])}"]
    lines += [_nugget_line("+", x) for x in n["added"]]
    lines += [_nugget_line("-", x) for x in n["removed"]]
    for c in n["changed"]:
        for f, ft in c["fields"].items():
            lines.append(f"  ~ {c['query_id']} {c['nugget_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    return lines


def format_diff(d: dict[str, Any]) -> str:
    lines = [f"{d['from']} -> {d['to']}" + ("  (corpus changed)" if d["corpus_changed"] else "")]
    q = d["queries"]
    lines.append(f"queries: +{len(q['added'])} -{len(q['removed'])} ~{len(q['changed'])}")
    lines += [f"  + {qid}" for qid in q["added"]]
    lines += [f"  - {qid}" for qid in q["removed"]]
    for c in q["changed"]:
        for f, ft in c["fields"].items():
            lines.append(f"  ~ {c['query_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    s = d["spans"]
    lines.append(f"evidence spans: +{len(s['added'])} -{len(s['removed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]" for x in s["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]" for x in s["removed"]]
    j = d["judgments"]
    lines.append(f"judgments: +{len(j['added'])} -{len(j['removed'])} ~{len(j['changed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']}" for x in j["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']}" for x in j["removed"]]
    lines += [
        f"  ~ {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]: {x['from']} -> {x['to']}" for x in j["changed"]
    ]
    jl = d.get("judge_labels") or {"added": [], "removed": [], "changed": []}
    lines.append(f"judge labels (not people's): +{len(jl['added'])} -{len(jl['removed'])} ~{len(jl['changed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']} ({x['route']}, {x['model']})"
              for x in jl["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']} ({x['route']}, {x['model']})"
              for x in jl["removed"]]
    lines += [f"  ~ {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]: {x['from']['grade']} ({x['from']['model']}) "
              f"-> {x['to']['grade']} ({x['to']['model']})" for x in jl["changed"]]
    lines += format_nugget_diff(d.get("nuggets") or {"added": [], "removed": [], "changed": []})
    empty: dict[str, list] = {"added": [], "removed": [], "changed": []}
    r = d.get("reference_answers") or empty
    lines.append(f"reference answers: +{len(r['added'])} -{len(r['removed'])} ~{len(r['changed'])}")
    lines += [f"  + {x['query_id']}: {x['short_answer']!r}" for x in r["added"]]
    lines += [f"  - {x['query_id']}: {x['short_answer']!r}" for x in r["removed"]]
    for x in r["changed"]:
        for f, ft in x["fields"].items():
            lines.append(f"  ~ {x['query_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    c = d.get("answer_criteria") or empty
    lines.append(f"answer criteria: +{len(c['added'])} -{len(c['removed'])} ~{len(c['changed'])}")
    lines += [f"  + {x['scope']} {x['scope_id']} {x['criterion_id']}: {x['text']!r} (weight {x['weight']:g})"
              for x in c["added"]]
    lines += [f"  - {x['scope']} {x['scope_id']} {x['criterion_id']}" for x in c["removed"]]
    for x in c["changed"]:
        for f, ft in x["fields"].items():
            lines.append(f"  ~ {x['scope']} {x['scope_id']} {x['criterion_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    return "\n".join(lines)
