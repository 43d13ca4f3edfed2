"""People grade systems' answers per rubric criterion, on a seeded sample (METHODOLOGY §10.4's
human tier), and those grades calibrate the rubric judge (§11.1).

* **The sample.** Per system, answers to live questions that have criteria, stratified by the
  question's stratum (places go round the strata one at a time, so a small stratum is not
  drowned by a large one), in a seeded hash order of the question; the same seed gives
  everyone the same sample and every system the same questions (so people's rubric scores of
  two systems pair in a comparison), and a larger ``n`` only adds answers.
* **Blind to the system.** A card names an answer by an opaque key (a hash of the system and
  the question), never by its system: a grader who knows which system wrote an answer grades
  the system, not the answer.
* **A grade is an event.** Each criterion's mark is a row of ``answer_grades`` with the sha of
  the answer text it marked; grading again appends, and a grade of text since replaced is stale
  (shown, never scored).
* **The calibration report.** On the (answer, criterion) items both people and the judge
  marked (current, not stale), per criterion: κ, raw agreement and FAIL recall against the bar
  (:mod:`golden_store.scoring.rubric_agreement`), per judge (model and prompt sha): a report
  mixing two judges would calibrate neither.

Why in ``labeling``: grading answers is people labelling, with the labeling rooms' rules; the
judge's side lives in :mod:`annotator.judge.rubric_grading` and only its stored grades are read
here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from annotator.people.identity import User, require
from annotator.people.roles import Permission, PermissionDenied
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store
from golden_store.live import answer_grades as live
from golden_store.scoring import rubric_agreement as ra

DEFAULT_SAMPLE = 20
MAX_SAMPLE = 2000
# who may read the calibration report: leads (who calibrate judges) and whoever reads results
READING = (Permission.CALIBRATE_JUDGE, Permission.VIEW_RESULTS)


def answer_key(system: str, query_id: str) -> str:
    """The opaque name of one answer on a grader's card: says nothing of its system."""
    return hashlib.sha256(f"{system}\x00{query_id}".encode()).hexdigest()[:16]


def _sample_key(seed: int, system: str, query_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{system}\x00{query_id}".encode()).hexdigest()


def _check_sample(n: int, seed: int) -> None:
    if not 1 <= n <= MAX_SAMPLE:
        raise ValidationError(f"An answer sample holds 1 to {MAX_SAMPLE} answers per system, not {n}: pick a size "
                              "in that range.")
    if not 0 <= seed < 2**31:
        raise ValidationError(f"A sample's seed is 0 to {2**31 - 1}, not {seed}.")


def stratified_sample(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """``n`` answers per system (rows carry ``system``, ``query_id``, ``stratum``), places going
    round each system's strata in name order. Within a stratum the questions come in an order
    of the seed and the question alone, so systems that answered the same questions are graded
    on the same ones (their rubric scores pair, question by question, in a comparison); the
    sample is returned in an order of the seed, system and question, which mixes the systems."""
    chosen: list[dict] = []
    for system in sorted({r["system"] for r in rows}):
        by: dict[str, list[dict]] = {}
        for r in rows:
            if r["system"] == system:
                by.setdefault(str(r["stratum"] or ""), []).append(r)
        for group in by.values():
            group.sort(key=lambda r: _sample_key(seed, "", r["query_id"]))
        quota = dict.fromkeys(sorted(by), 0)
        left = min(n, sum(len(g) for g in by.values()))
        while left:
            for s in quota:
                if left and quota[s] < len(by[s]):
                    quota[s] += 1
                    left -= 1
        chosen += [r for s in quota for r in by[s][:quota[s]]]
    return sorted(chosen, key=lambda r: _sample_key(seed, r["system"], r["query_id"]))


def _card(row: dict, criteria: list[dict], reference: dict | None) -> dict[str, Any]:
    return {"key": answer_key(row["system"], row["query_id"]), "query_id": row["query_id"],
            "stratum": row["stratum"], "question": row["question"], "answer": row["answer"] or "",
            "reference": None if reference is None else {"short_answer": reference["short_answer"],
                                                         "full_answer": reference["full_answer"]},
            "criteria": criteria}


def sample(store: Store, user: User, *, system: str | None = None, n: int = DEFAULT_SAMPLE,
           seed: int = 0) -> list[dict[str, Any]]:
    """The sample's answers as cards (blind: no system name), each with the grader's own
    current marks (``mine``: criterion -> mark, stale ones left out)."""
    require(user, Permission.LABEL)
    _check_sample(n, seed)
    rows = live.gradeable_answers(store, system)
    if system is not None and not rows:
        raise NotFoundError(f"No answer of system {system!r} to a question with criteria: import its answers "
                            f"(golden answers import) and set criteria (golden references criteria) first.")
    crit = live.criteria_by_query(store)
    refs = live.approved_references(store)
    mine: dict[tuple[str, str], dict[str, int]] = {}
    for g in live.current_grades(store, system, "human"):
        if g["grader"] == user.username and not g["stale"]:
            mine.setdefault((g["system"], g["query_id"]), {})[g["criterion_id"]] = g["mark"]
    return [{**_card(r, crit[r["query_id"]], refs.get(r["query_id"])),
             "mine": mine.get((r["system"], r["query_id"]), {})}
            for r in stratified_sample(rows, n, seed)]


def resolve_key(store: Store, key: str) -> tuple[str, str]:
    """(system, query id) of an answer's opaque key."""
    for r in live.gradeable_answers(store):
        if answer_key(r["system"], r["query_id"]) == key:
            return r["system"], r["query_id"]
    raise NotFoundError(f"No answer with key {key!r}: take the key from the grading sample.")


def _grade_tx(cur: Cursor, user: User, system: str, query_id: str, marks: Mapping[str, int],
              criteria: list[dict]) -> list[int]:
    found = live.answer_tx(cur, system, query_id)
    if found is None:
        raise NotFoundError(f"No answer of system {system!r} to live question {query_id!r}.")
    return [live.grade_tx(cur, system=system, query_id=query_id, criterion_id=c, mark=m, grader=user.username,
                          kind="human", answer=found[0]) for c, m in marks.items()]


def _checked_marks(store: Store, query_id: str, marks: Mapping[str, Any]) -> tuple[dict[str, int], list[dict]]:
    crit = live.criteria_by_query(store).get(query_id)
    if not crit:
        raise NotFoundError(f"Question {query_id!r} has no criteria (and is live): set them with golden references "
                            f"criteria before grading its answers.")
    by_id = {c["criterion_id"]: c for c in crit}
    if not marks:
        raise ValidationError("Give at least one criterion's mark.")
    out: dict[str, int] = {}
    for cid, mark in marks.items():
        c = by_id.get(cid)
        if c is None:
            raise ValidationError(f"Question {query_id!r} has no criterion {cid!r}; its criteria are "
                                  f"{', '.join(by_id)}.")
        if type(mark) is not int or not 0 <= mark <= c["scale_max"]:
            raise ValidationError(f"Criterion {cid!r} is marked 0 to {c['scale_max']}, not {mark!r}.")
        out[cid] = mark
    return out, crit


def grade(store: Store, user: User, *, system: str, query_id: str, marks: Mapping[str, Any]) -> list[int]:
    """Record a person's marks of some or all criteria of one answer, all or nothing; the
    grades' ids. Bad input (an unknown criterion, a mark off its scale) writes nothing."""
    require(user, Permission.LABEL)
    checked, crit = _checked_marks(store, query_id, marks)
    return store.write(lambda cur: _grade_tx(cur, user, system, query_id, checked, crit))


# ---- the calibration report ---------------------------------------------------------------------


def _pairs(store: Store, system: str | None) -> tuple[dict[tuple[str, str], list[dict]], dict, int]:
    """Per judge (model, prompt sha): the (human grade, judge grade) pairs on the same
    (system, question, criterion), every person's current grade one pair; and the count of
    stale grades left out."""
    grades = live.current_grades(store, system)
    stale = sum(g["stale"] for g in grades)
    fresh = [g for g in grades if not g["stale"]]
    judge: dict[tuple[str, str, str], dict] = {}
    for g in fresh:  # the latest judge grade of each item (grade ids grow with time)
        k = (g["system"], g["query_id"], g["criterion_id"])
        if g["kind"] == "judge" and (k not in judge or g["grade_id"] > judge[k]["grade_id"]):
            judge[k] = g
    by: dict[tuple[str, str], list[dict]] = {}
    for h in fresh:
        j = judge.get((h["system"], h["query_id"], h["criterion_id"]))
        if h["kind"] == "human" and j is not None:
            by.setdefault((j["grader"], j["prompt_sha"]), []).append({"human": h, "judge": j})
    return by, {"human": sum(g["kind"] == "human" for g in fresh), "judge": len(judge)}, stale


def report(store: Store, user: User, system: str | None = None) -> dict[str, Any]:
    """Judge against people per criterion on the items both graded (see the module docstring)."""
    if not any(user.can(p) for p in READING):
        raise PermissionDenied(f"{user.username} may not see the rubric judge's calibration; it needs the lead, "
                               "engineer or admin role (ask an admin).")
    by, counts, stale = _pairs(store, system)
    scales = {(qid, c["criterion_id"]): c["scale_max"] for qid, crit in live.criteria_by_query(store).items()
              for c in crit}
    judges = []
    for (model, sha), pairs in sorted(by.items()):
        per: dict[tuple[str, int], list[dict]] = {}  # a criterion id on two scales (two strata) is two criteria
        for p in pairs:
            scale = scales.get((p["human"]["query_id"], p["human"]["criterion_id"]))
            # a criterion since retired, or whose scale changed since a mark, is not calibrated on that mark
            if scale is not None and max(p["human"]["mark"], p["judge"]["mark"]) <= scale:
                per.setdefault((p["human"]["criterion_id"], scale), []).append(p)
        figures = [ra.criterion_agreement(cid, [p["human"]["mark"] for p in ps], [p["judge"]["mark"] for p in ps],
                                          scale) for (cid, scale), ps in sorted(per.items())]
        judges.append({"model": model, "prompt_sha": sha, "items": sum(f.n for f in figures),
                       "answers": len({(p["human"]["system"], p["human"]["query_id"]) for p in pairs}),
                       "graders": sorted({p["human"]["grader"] for p in pairs}),
                       "verdict": ra.overall_verdict(figures), "criteria": [f.as_dict() for f in figures]})
    return {"system": system, "human_grades": counts["human"], "judge_grades": counts["judge"],
            "stale_left_out": stale, "kappa_bar": ra.KAPPA_BAR, "fail_recall_bar": ra.FAIL_RECALL_BAR,
            "judges": judges}



def record(store: Store, user: User, key: str, marks: Mapping[str, Any]) -> dict[str, Any]:
    """Record a person's marks of the answer with sample key ``key`` (the API's way, blind like
    the page: the system is neither asked for nor returned)."""
    require(user, Permission.LABEL)
    system, query_id = resolve_key(store, key)
    ids = grade(store, user, system=system, query_id=query_id, marks=marks)
    return {"grade_ids": ids, "key": key, "query_id": query_id, "grader": user.username, "marks": dict(marks)}
