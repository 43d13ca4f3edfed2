"""Judged@k of a scored run as a health flag (METHODOLOGY §3.6: "when it drops below ~0.8
for a configuration, its metrics are suspect and you should say so on the dashboard rather
than in a footnote").

One definition, the scorer's own ``Judged@10`` (ir_measures): the share of the run's top 10
results that carry a label in the qrels the run is scored against - an evidence span or a
human grade, a 0 included - averaged over the scored queries. It is computed on every
scoring, whether or not ``Judged@10`` was asked for, so ``golden score`` and ``golden
compare`` can warn. Not to be confused with the pool's *graded@10* (``golden pool status``,
the manifest's ``pool_graded_at_10``): the share of a run's top 10 pooled passages that a
person has graded, evidence not counted - the grading progress of the pool, not the label
coverage of a scoring."""

from __future__ import annotations

from dataclasses import dataclass, field

JUDGED_K = 10
JUDGED_THRESHOLD = 0.8
JUDGED_DEFINITION = (f"Judged@{JUDGED_K}: share of the run's top {JUDGED_K} results that carry a label in the qrels "
                     "it is scored against (an evidence span or a human grade, 0 included), mean over the scored "
                     f"queries; below {JUDGED_THRESHOLD} the run's numbers are suspect (METHODOLOGY §3.6)")


@dataclass
class JudgedHealth:
    """``mean`` Judged@k over the scored queries, ``per_query`` each query's value and
    ``below`` the queries under ``threshold`` (sorted)."""

    k: int
    threshold: float
    mean: float
    per_query: dict[str, float] = field(repr=False)
    below: list[str] = field(default_factory=list)

    @property
    def suspect(self) -> bool:
        return self.mean < self.threshold

    def warning(self, name: str = "the run") -> str | None:
        """One sentence for the screen when the run is under-judged, else None."""
        if not self.suspect:
            return None
        return (f"{name}: judged@{self.k} is {self.mean:.3f}, below {self.threshold} "
                f"({len(self.below)} of {len(self.per_query)} queries): its numbers are suspect - "
                f"unjudged results count as non-relevant; judge the pool (golden pool build, then Judge) "
                f"before trusting a delta")

    def as_dict(self) -> dict:
        return {"measure": f"Judged@{self.k}", "mean": self.mean, "threshold": self.threshold,
                "suspect": self.suspect, "queries": len(self.per_query), "queries_below": len(self.below),
                "below": self.below[:50], "definition": JUDGED_DEFINITION}


def judged_health(qrels, run, *, k: int = JUDGED_K, threshold: float = JUDGED_THRESHOLD,
                  max_docs: int | None = None) -> JudgedHealth:
    """Judged@k of ``run`` against ``qrels`` (as :func:`~golden_store.scoring.trec.evaluate_trec`
    takes them; ``max_docs`` is its ``-M``). A scoring that already ranks the run gets the
    same figure without reading it again: ``evaluate_trec(..., health=True)``."""
    from golden_store.scoring.trec import evaluate_trec

    res = evaluate_trec(qrels, run, [f"Judged@{k}"], max_docs=max_docs)
    name = f"Judged@{k}"
    per_query = {q: float(row[name]) for q, row in res.per_query_items()}
    return _health(per_query, float(res.mean[name]) if per_query else 0.0, k, threshold)


def health_of_ranking(ranked, *, k: int = JUDGED_K, threshold: float = JUDGED_THRESHOLD) -> JudgedHealth:
    """Judged@k from a run already ranked against its qrels (``formulas.Ranked``, after -M
    and before -J): the scorer's own ``Judged@k`` formula on the same rows, so the figure is
    the one :func:`judged_health` gives, without a second read, hash and sort of the run."""
    from golden_store.scoring import formulas
    from golden_store.scoring.measures import parse_measure

    m = parse_measure(f"Judged@{k}")
    values = getattr(formulas, m.spec.formula)(ranked, m)
    per_query = dict(zip(ranked.qids.tolist(), values.tolist()))
    return _health(per_query, formulas.aggregate(values, m.aggregate) if per_query else 0.0, k, threshold)


def _health(per_query: dict[str, float], mean: float, k: int, threshold: float) -> JudgedHealth:
    below = sorted(q for q, v in per_query.items() if v < threshold)
    return JudgedHealth(k, threshold, mean, per_query, below)
