"""Saved judge calibrations, the SQL side (METHODOLOGY §11.6, §11.8): one row per saved
calibration (judge model, rubric sha, question sha, split seed, band, isotonic map, the
figures) and its archived items, so a later judge can be compared on the same items.
Also the calibration set the store itself can offer: gold relevance grades."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from golden_store.db.cursor import Cursor
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.scoring.types import Band

SCALES = ("binary", "graded", "nugget")


def save(store: Store, *, judge_model: str, rubric_sha: str, question_sha: str | None, source: str, split_seed: int,
         fit_share: float, band: Band | Mapping[str, float] | None, max_missed_bad: float | None,
         max_false_fail: float | None, isotonic: dict | None, report: dict[str, Any], note: str | None,
         items: Sequence[tuple], actor: str, scale: str = "binary", pass_cut: int = 2,
         rubric_text: str | None = None) -> str:
    """Store a calibration and its items (item_id, human, judge label, judge p, stratum,
    length, split) in one transaction; returns its id (c1, c2, ...). ``scale`` is binary
    (pass/fail labels), graded (0-3) or nugget (none/partial/support as 0/1/2, labels stored as
    grades); ``pass_cut`` the grade from which an item passes; ``rubric_text`` the judge's
    exact rubric (pool grading sends exactly what was calibrated)."""
    if not judge_model.strip() or not rubric_sha.strip():
        raise ValidationError("Name the judge: its model id and its rubric sha (a calibration is of one judge).")
    if not items:
        raise ValidationError("The calibration set is empty.")
    if scale not in SCALES:
        raise ValidationError(f"The scale is one of {', '.join(SCALES)}, not {scale!r}.")
    if not (isinstance(pass_cut, int) and 1 <= pass_cut <= 3):
        raise ValidationError(f"The pass/fail cut is a grade from 1 to 3, not {pass_cut!r}.")

    def tx(cur: Cursor) -> str:
        n = cur.execute("SELECT count(*) FROM calibrations").fetchone()[0]
        cid = f"c{n + 1}"
        cur.execute(
            "INSERT INTO calibrations (calibration_id, judge_model, rubric_sha, question_sha, source, split_seed, "
            "fit_share, band_low, band_high, max_missed_bad, max_false_fail, isotonic, report, note, actor, "
            "created_at, scale, pass_cut, rubric_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [cid, judge_model.strip(), rubric_sha.strip(), question_sha, source, split_seed, fit_share,
             band["low"] if band else None, band["high"] if band else None, max_missed_bad, max_false_fail,
             json.dumps(isotonic) if isotonic else None, json.dumps(report, default=float), note or None, actor,
             utcnow(), scale, pass_cut, rubric_text])
        cur.executemany("INSERT INTO calibration_items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(cid, *it) for it in items])
        return cid

    return store.write(tx)


def list_all(store: Store) -> list[dict]:
    rows = store.read_dicts(
        "SELECT c.*, (SELECT count(*) FROM calibration_items i WHERE i.calibration_id = c.calibration_id) AS n_items "
        "FROM calibrations c ORDER BY created_at, calibration_id")
    for r in rows:
        r["report"] = json.loads(r["report"])
        r["isotonic"] = json.loads(r["isotonic"]) if r["isotonic"] else None
    return rows




def shared_items(store: Store, old: str, new: str) -> list[dict]:
    """The items both calibrations archived, with each judge's label and p."""
    return store.read_dicts(
        "SELECT a.item_id, a.human_label, a.judge_label AS old_label, b.judge_label AS new_label, "
        "a.judge_p AS old_p, b.judge_p AS new_p FROM calibration_items a JOIN calibration_items b USING (item_id) "
        "WHERE a.calibration_id = ? AND b.calibration_id = ? ORDER BY item_id", [old, new])


def relevance_set(store: Store) -> list[dict]:
    """Gold relevance grades as a calibration set: the item is (question, passage), the
    human label is pass when the passage at least partly answers (grade ≥ 2); ``grade`` is
    the final grade itself (0-3), for a graded calibration."""
    return store.read_dicts(
        "SELECT f.query_id || '|' || f.doc_id || '|' || f.start || '|' || f.\"end\" AS item_id, f.query_id, "
        "CASE WHEN f.grade >= 2 THEN 'pass' ELSE 'fail' END AS human_label, f.grade, q.stratum, q.text AS question, "
        "q.held_out, substr(d.raw_text, f.start + 1, f.\"end\" - f.start) AS text, f.\"end\" - f.start AS length "
        "FROM final_grades f JOIN queries q USING (query_id) JOIN documents d USING (doc_id) "
        "ORDER BY f.query_id, f.doc_id, f.start")




def manifest_entries(cur: Cursor) -> list[dict]:
    """The latest calibration of each judge (model id + rubric sha), as a frozen version's
    manifest carries it: the band, split seed, question sha, the scale and pass/fail cut (the
    κ is the binary κ at that cut; a calibration saved before schema 21 is binary at 2), the
    headline figures, which way the judge's p pointed (``judge_p.flipped``: the uploaded
    column was P(pass) and 1 − p was used; kept in the report JSON, no schema column) and
    the checks its fit failed (``checks_failed``, empty for a clean fit)."""
    rows = cur.execute(
        "SELECT calibration_id, judge_model, rubric_sha, question_sha, split_seed, fit_share, band_low, band_high, "
        "isotonic, report, created_at, scale, pass_cut FROM (SELECT *, row_number() OVER (PARTITION BY judge_model, rubric_sha "
        "ORDER BY created_at DESC, calibration_id DESC) AS rn FROM calibrations) WHERE rn = 1 "
        "ORDER BY created_at, calibration_id").fetchall()
    out = []
    for cid, model, rsha, qsha, seed, share, low, high, iso, report, created, scale, cut in rows:
        rep = json.loads(report)
        jr = rep.get("judge_report") or {}
        out.append({"calibration_id": cid, "judge_model": model, "rubric_sha": rsha, "question_sha": qsha,
                    "split_seed": seed, "fit_share": share, "scale": scale or "binary",
                    "pass_cut": 2 if cut is None else int(cut),
                    "band": None if low is None else {"low": low, "high": high},
                    "kappa": jr.get("kappa"), "fail_recall": jr.get("fail_recall"),
                    "ece_recalibrated": rep.get("ece_recalibrated"),
                    "isotonic": json.loads(iso) if iso else None, "created_at": created.isoformat() + "Z",
                    # which way the judge's p pointed (saved before issue 29: not recorded, read as P(FAIL))
                    # and the checks its fit failed, saved anyway with the lead's acknowledgement
                    "judge_p": rep.get("judge_p") or {"means": "P(FAIL)", "flipped": False},
                    "checks_failed": rep.get("checks_failed") or []})
    return out


def nugget_support_set(store: Store) -> list[dict]:
    """Nugget support labels as a calibration set: the item is (system answer, nugget);
    ``label`` is the person's support / partial / none, ``grade`` the same on the nugget
    scale (2 / 1 / 0), and ``human_label`` pass for "support" and fail otherwise (the default
    cut: support only passes; the page can move the cut to let partial pass). The item id is the archive's name for the item,
    ``system|query_id|nugget_id`` as calibrations saved before were named, so old and new
    judges compare item by item; it is never split back (the labels have real key columns),
    and it stays unique with a ``|`` in a system name because query ids and nugget ids
    (``n<k>``) never hold one."""
    return store.read_dicts(
        "SELECT l.system || '|' || l.query_id || '|' || l.nugget_id AS item_id, l.query_id, "
        "CASE WHEN l.label = 'support' THEN 'pass' ELSE 'fail' END AS human_label, l.label, "
        "CASE l.label WHEN 'support' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END AS grade, q.stratum, 'Does the answer state this fact? ' || n.text AS question, q.held_out, a.answer AS text, "
        "length(a.answer) AS length "
        "FROM current_nugget_support l JOIN queries q USING (query_id) "
        "JOIN answers a ON a.system = l.system AND a.query_id = l.query_id "
        "JOIN current_nuggets n ON n.query_id = l.query_id AND n.nugget_id = l.nugget_id "
        "WHERE l.label IN ('support', 'partial', 'none') ORDER BY item_id")
