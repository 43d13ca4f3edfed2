"""The rubric judge's correctness score corrected by people's grades of the answer sample
(prediction-powered inference, issue 40 item 7).

**What is estimated.** The unit is the answer: a system's answer to a live question with
criteria, whose every current criterion the judge has marked on the answer's text as it is now.
Its score is the rubric's fixed weights over the marks as shares of each criterion's scale (the
same :func:`golden_store.scoring.answers.rubric_score` the judge's and people's scores use), so
the figure is the system's mean rubric score over the answers the judge scored. The judge's mark
of a criterion is its latest one (if two judges marked it, the later).

**People's side.** An answer is in the people's sample when one or more people marked every one
of its criteria (current marks, not stale); its people's score is the mean of each such person's
rubric score. The sample people grade is drawn per system by going round the question strata one
place at a time (answer_grading's seeded sample), so a small stratum is sampled at a higher rate
than a large one: the correction is made within each stratum and the strata are combined by
their share of the judge-scored answers (a pooled correction would over-weight the small ones).
A stratum holding judge-scored answers needs two or more people-graded ones unless people
graded all of it; otherwise the corrected figure is undefined and says which stratum is short.

Answers people graded but the judge did not score (held out, never sent; not yet graded) are
counted apart: they have no judge score to correct.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotator.evaluation.judge_corrected import NO_SAMPLE, interval_dict, reported, shown
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.db.store import Store
from golden_store.live import answer_grades
from golden_store.scoring.answers import Criterion, rubric_score
from golden_store.scoring.ppi import Estimate, Interval, Stratum, stratified_ppi_mean



@dataclass(frozen=True)
class CorrectedRubric:
    """One system's mean rubric score: the judge's, and the judge's corrected by people's
    grades of the sample, per question stratum, each with its interval."""

    system: str
    answers: int                                  # answers the judge scored (N + n)
    graded: int                                   # of which people graded every criterion
    per_stratum: dict[str, dict[str, int]]        # stratum -> answers, graded
    people_only: int                              # people graded, the judge did not score
    judges: list[str]                             # model @ prompt sha of the marks used
    estimate: Estimate
    unscorable: list[str] = field(default_factory=list)  # question ids whose marks fall off a changed scale

    @property
    def has_sample(self) -> bool:
        return self.graded > 0

    @property
    def corrected(self) -> Interval:
        """The corrected figure (the people's own mean when they labelled every item)."""
        return reported(self.estimate, self.graded == self.answers)

    def as_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"system": self.system, "metric": "rubric score (mean over judge-scored answers)",
                "answers": self.answers, "graded": self.graded, "per_stratum": self.per_stratum,
                "people_only": self.people_only, "judges": self.judges, "unscorable": self.unscorable,
                "level": e.level, "judge_minus_people": e.bias, "judge_only": interval_dict(e.judge_only),
                "corrected": interval_dict(self.corrected) if self.has_sample else None,
                "people_only_sample": interval_dict(e.people_only), "note": None if self.has_sample else NO_SAMPLE}


def _score(criteria: list[dict], marks: dict[str, int]) -> float | None:
    """The rubric score of a complete set of marks (None while a criterion is unmarked)."""
    rubric = [Criterion(c["criterion_id"], float(c["weight"]), int(c["scale_max"])) for c in criteria]
    if any(c.id not in marks for c in rubric):
        return None
    return rubric_score(rubric, {c.id: marks[c.id] for c in rubric})


def corrected_rubric(store: Store, user: User, system: str | None = None) -> dict[str, CorrectedRubric]:
    """Per system with judge-scored answers (see the module docstring). Numbers of a system:
    for those who see results."""
    require(user, Permission.VIEW_RESULTS)
    crit = answer_grades.criteria_by_query(store)
    answers = {(r["system"], r["query_id"]): str(r["stratum"] or "") for r in answer_grades.gradeable_answers(store, system)}
    judge: dict[tuple[str, str], dict[str, dict]] = {}
    human: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for g in answer_grades.current_grades(store, system):
        key = (g["system"], g["query_id"])
        if g["stale"] or key not in answers:
            continue
        if g["kind"] == "judge":
            mine = judge.setdefault(key, {})
            if g["criterion_id"] not in mine or g["grade_id"] > mine[g["criterion_id"]]["grade_id"]:
                mine[g["criterion_id"]] = g
        else:
            human.setdefault(key, {}).setdefault(g["grader"], {})[g["criterion_id"]] = g["mark"]
    by_system: dict[str, dict[str, tuple[list[float], list[float], list[float]]]] = {}
    people_only: dict[str, int] = {}
    judges: dict[str, set[str]] = {}
    unscorable: dict[str, list[str]] = {}
    for key, stratum in sorted(answers.items()):
        name, qid = key
        try:
            jmarks = judge.get(key, {})
            j = _score(crit[qid], {c: g["mark"] for c, g in jmarks.items()})
            scores = [s for marks in human.get(key, {}).values() if (s := _score(crit[qid], marks)) is not None]
        except ValueError:  # a mark above a criterion's scale changed since: not scored by anyone here
            unscorable.setdefault(name, []).append(qid)
            continue
        if j is None:
            people_only[name] = people_only.get(name, 0) + bool(scores)
            continue
        judges.setdefault(name, set()).update(f"{g['grader']} @ {str(g['prompt_sha'] or '')[:12]}"
                                              for g in jmarks.values())
        ys, yhat, rest = by_system.setdefault(name, {}).setdefault(stratum, ([], [], []))
        if scores:
            ys.append(sum(scores) / len(scores))
            yhat.append(j)
        else:
            rest.append(j)
    out: dict[str, CorrectedRubric] = {}
    for name, strata in sorted(by_system.items()):
        est = stratified_ppi_mean({s or "(no stratum)": Stratum(*parts) for s, parts in strata.items()},
                                  judge_over="all")  # the judge scored the graded answers too
        per = {s or "(no stratum)": {"answers": len(p[0]) + len(p[2]), "graded": len(p[0])} for s, p in strata.items()}
        out[name] = CorrectedRubric(name, sum(p["answers"] for p in per.values()), sum(p["graded"] for p in per.values()),
                                    per, people_only.get(name, 0), sorted(judges.get(name, set())), est,
                                    unscorable.get(name, []))
    return out


def corrected_table(results: dict[str, CorrectedRubric]) -> pd.DataFrame:
    """One row per system for a page."""
    rows = []
    for name, c in results.items():
        e = c.estimate
        rows.append({"system": name, "judge-scored answers": c.answers, "graded by people": c.graded,
                     "judge alone": shown(e.judge_only.mean, e.judge_only.low, e.judge_only.high),
                     "corrected by people's grades": (
                         NO_SAMPLE if not c.has_sample else shown(c.corrected.mean, c.corrected.low, c.corrected.high)
                         or f"undefined: {c.corrected.reason}"),
                     "judge − people (graded)": None if e.bias is None else round(e.bias, 4),
                     "people only": c.people_only})
    return pd.DataFrame(rows)


def line(c: CorrectedRubric) -> str:
    """One system's reading for a terminal."""
    e = c.estimate

    def iv(i: Any) -> str:
        return shown(i.mean, i.low, i.high, digits=4) or "undefined"

    head = (f"{c.system}: rubric score over its {c.answers} judge-scored answer(s): judge alone {iv(e.judge_only)} "
            f"(judge {', '.join(c.judges) or '?'})")
    if not c.has_sample:
        return f"{head}; {NO_SAMPLE}"
    ppi = iv(c.corrected) if c.corrected.mean is not None else f"undefined ({c.corrected.reason})"
    how = ("people graded every one: their own mean" if c.graded == c.answers
           else "prediction-powered, per question stratum")
    return (f"{head}; corrected by people's grades of {c.graded} answer(s) ({how}): {ppi}; judge minus people on "
            f"the graded answers {e.bias:+.4f}")
