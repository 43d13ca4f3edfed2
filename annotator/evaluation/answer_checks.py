"""The deterministic checks of systems' answers, run before any judge: whether each citation
resolves to a real span of the corpus (decided at import: :mod:`golden_store.live.answer_citations`).

A system that invents citation targets is worse than one that cites nothing, because it
manufactures trust it did not earn; so citation validity is a hard gate (``golden answers
citations`` exits 1 on any invalid citation) rather than a number to trend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.db.store import Store
from golden_store.live import answer_citations
from golden_store.live import nuggets as live_nuggets


@dataclass(frozen=True)
class CitationReport:
    """One system's citations: how many, how many resolve, which do not and why."""

    system: str
    answers: int
    answers_citing: int
    citations: int
    valid: int
    document_level: int  # valid citations naming a document without a span or quote
    invalid: list[dict] = field(default_factory=list)

    @property
    def validity(self) -> float | None:
        return self.valid / self.citations if self.citations else None

    @property
    def passed(self) -> bool:
        return not self.invalid

    def as_dict(self) -> dict:
        return {"system": self.system, "answers": self.answers, "answers_citing": self.answers_citing,
                "citations": self.citations, "valid": self.valid, "validity": self.validity,
                "document_level": self.document_level, "gate": "PASS" if self.passed else "FAIL",
                "invalid": self.invalid}


def citation_validity(store: Store, user: User, system: str | None = None) -> dict[str, CitationReport]:
    """Each system's citation validity over its answers to live questions."""
    require(user, Permission.VIEW_RESULTS)
    answers: dict[str, int] = {}
    for a in live_nuggets.answers(store, system):
        answers[a["system"]] = answers.get(a["system"], 0) + 1
    by_system: dict[str, list[dict]] = {s: [] for s in answers}
    for c in answer_citations.citations(store, system):
        by_system.setdefault(c["system"], []).append(c)
    out: dict[str, CitationReport] = {}
    for name, cs in sorted(by_system.items()):
        valid = [c for c in cs if c["valid"]]
        out[name] = CitationReport(
            system=name, answers=answers.get(name, 0), answers_citing=len({c["query_id"] for c in cs}),
            citations=len(cs), valid=len(valid),
            document_level=sum(1 for c in valid if c["start"] is None and c["quote"] is None),
            invalid=[{k: c[k] for k in ("query_id", "ordinal", "doc_id", "start", "end", "quote", "problem")}
                     for c in cs if not c["valid"]])
    return out
