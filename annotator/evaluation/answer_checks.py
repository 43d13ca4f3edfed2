"""The deterministic checks of systems' answers, run before any judge (METHODOLOGY §10.7): whether
each citation resolves to a real span of the corpus (decided at import:
:mod:`golden_store.live.answer_citations`); empty answers and answers over a length cap; the
answer-length distribution and its shift against a baseline system; forbidden patterns (leaked
prompt scaffolding, phrases the lead names); refusal and abstention rates per stratum. The math
is in :mod:`golden_store.scoring.answer_checks`; this module reads the store and makes the gate.

A system that invents citation targets is worse than one that cites nothing, because it
manufactures trust it did not earn; so citation validity is a hard gate (``golden answers
citations`` exits 1 on any invalid citation) rather than a number to trend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store
from golden_store.live import answer_citations
from golden_store.live import queries as live_queries
from golden_store.live import nuggets as live_nuggets
from golden_store.scoring import answer_checks as scoring

DEFAULT_MAX_CHARS = scoring.DEFAULT_MAX_CHARS


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


# ---- the structural and deterministic checks (METHODOLOGY §10.7) ---------------------------------


@dataclass(frozen=True)
class SystemChecks:
    """One system's deterministic checks; ``failures`` holds one sentence per failed check."""

    system: str
    answers: int
    questions_without_answer: int
    structure: scoring.Structure
    lengths: scoring.Lengths
    forbidden: list[scoring.PatternHits]
    citations: CitationReport | None
    strata: list[scoring.StratumOutcomes]
    failures: list[str]

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict:
        c = self.citations
        return {
            "system": self.system, "gate": "PASS" if self.passed else "FAIL", "failures": self.failures,
            "answers": self.answers, "questions_without_answer": self.questions_without_answer,
            "empty": {"count": len(self.structure.empty), "query_ids": self.structure.empty},
            "over_cap": {"count": len(self.structure.over_cap), "max_chars": self.structure.max_chars,
                         "query_ids": self.structure.over_cap},
            "length": asdict(self.lengths),
            "forbidden": [asdict(h) for h in self.forbidden],
            "citations": None if c is None else {"citations": c.citations, "valid": c.valid, "validity": c.validity,
                                                 "invalid": len(c.invalid)},
            "strata": [s.as_dict() for s in self.strata],
        }


@dataclass(frozen=True)
class ChecksReport:
    """Every checked system, the length shifts against the baseline, and the one gate."""

    per_system: dict[str, SystemChecks]
    shifts: list[scoring.LengthShift]
    baseline: str | None
    max_chars: int
    patterns: list[scoring.Pattern]

    @property
    def failures(self) -> list[str]:
        return [f for r in self.per_system.values() for f in r.failures] + [
            f"{s.candidate}: answer length shifted against {s.baseline} ({s.reason})." for s in self.shifts
            if s.flagged]

    @property
    def gate(self) -> str:
        return "FAIL" if self.failures else "PASS"

    def as_dict(self) -> dict:
        return {"gate": self.gate, "failures": self.failures, "baseline": self.baseline, "max_chars": self.max_chars,
                "forbidden_patterns": [{"name": p.name, "pattern": p.regex.pattern} for p in self.patterns],
                "per_system": {name: r.as_dict() for name, r in self.per_system.items()},
                "length_shift": [s.as_dict() for s in self.shifts], "definitions": scoring.DEFINITIONS}


def _ids(ids: list[str], k: int = 5) -> str:
    return ", ".join(ids[:k]) + (f" and {len(ids) - k} more" if len(ids) > k else "")


def _failures(name: str, st: scoring.Structure, hits: list[scoring.PatternHits],
              cites: CitationReport | None) -> list[str]:
    """One sentence per failed check of one system (the gate's wording)."""
    out = []
    if cites is not None and cites.invalid:
        x = cites.invalid[0]
        out.append(f"{name}: {len(cites.invalid)} of {cites.citations} citation(s) do not resolve to a real span of "
                   f"the corpus (first: {x['query_id']} citation {x['ordinal'] + 1}, {x['problem']}).")
    if st.empty:
        out.append(f"{name}: {len(st.empty)} empty answer(s) ({_ids(st.empty)}).")
    if st.over_cap:
        out.append(f"{name}: {len(st.over_cap)} answer(s) over the {st.max_chars}-character cap "
                   f"({_ids(st.over_cap)}).")
    hit = [h for h in hits if h.answers]
    if hit:
        out.append(f"{name}: forbidden pattern(s) found - " + "; ".join(
            f"{h.name!r} in {h.answers} answer(s) ({_ids(h.query_ids)})" for h in hit) + ".")
    return out


def _system_names(rows: list[dict], system: str | None, baseline: str | None) -> list[str]:
    have = sorted({a["system"] for a in rows})
    for name, what in ((system, "--system"), (baseline, "--baseline")):
        if name is not None and name not in have:
            raise NotFoundError(f"No answers of system {name!r} ({what}); systems with answers: "
                                f"{', '.join(have) or 'none yet'}. Import them with `golden answers import FILE "
                                f"--system {name}`.")
    if system is not None and system == baseline:
        raise ValidationError(f"The baseline is the system itself ({system!r}); name another system as the baseline.")
    return [system] if system is not None else have


def checks(store: Store, user: User, system: str | None = None, baseline: str | None = None,
           forbid: Sequence[str] = (), max_chars: int = scoring.DEFAULT_MAX_CHARS) -> ChecksReport:
    """The deterministic checks of each system's answers to live questions (``system``: only
    that one), and, with a ``baseline``, the length shift of each checked system against it.
    Free and repeatable: reads the store, asks no model, writes nothing. The patterns are
    compiled first, so a bad one is refused before anything is read."""
    require(user, Permission.VIEW_RESULTS)
    patterns = scoring.compile_patterns(forbid)
    if max_chars < 1:
        raise ValidationError(f"The length cap (max_chars) must be at least 1 character, not {max_chars}.")
    rows = live_nuggets.answers(store)
    names = _system_names(rows, system, baseline)
    text: dict[str, dict[str, str]] = {}
    for a in rows:
        text.setdefault(a["system"], {})[a["query_id"]] = a["answer"]
    outcomes: dict[str, list[tuple[str, str]]] = {}
    for o in live_nuggets.answer_outcomes(store):
        outcomes.setdefault(o["system"], []).append((o["stratum"], o["outcome"]))
    questions = set(live_queries.stored_strata(store))
    cites = citation_validity(store, user)
    per_system = {}
    for name in names:
        answers = text[name]
        st = scoring.structure(answers, max_chars)
        hits = scoring.forbidden_hits(answers, patterns)
        per_system[name] = SystemChecks(
            system=name, answers=len(answers), questions_without_answer=len(questions - set(answers)), structure=st,
            lengths=scoring.lengths([scoring.word_count(t) for t in answers.values()]), forbidden=hits,
            citations=cites.get(name), strata=scoring.outcomes_by_stratum(outcomes.get(name, [])),
            failures=_failures(name, st, hits, cites.get(name)))
    shifts = []
    if baseline is not None:
        base_words = {q: scoring.word_count(t) for q, t in text[baseline].items()}
        for name in names:
            if name != baseline:
                shifts.append(scoring.length_shift(baseline, base_words, name,
                                                   {q: scoring.word_count(t) for q, t in text[name].items()}))
    return ChecksReport(per_system=per_system, shifts=shifts, baseline=baseline, max_chars=max_chars,
                        patterns=patterns)


# ---- tables for a page (plain rows: a page renders them, computes nothing) --------------------


def answer_systems(store: Store, user: User) -> list[str]:
    """The systems with answers to live questions (a page's baseline picker)."""
    require(user, Permission.VIEW_RESULTS)
    return sorted({a["system"] for a in live_nuggets.answers(store)})


def _shift_cell(name: str, rep: ChecksReport) -> str:
    if name == rep.baseline:
        return "baseline"
    sh = next((x for x in rep.shifts if x.candidate == name), None)
    if sh is None:
        return "-"
    if sh.p_value is None:
        return sh.reason
    moved = f"{sh.median_change:+.0%}" if sh.median_change is not None else "from 0"
    return f"{'FLAGGED' if sh.flagged else 'no'}: p {sh.p_value:.3g}, median {moved}"


def system_rows(rep: ChecksReport) -> list[dict]:
    """One row per system: the gate's inputs, the length distribution, and its shift."""
    return [{
        "system": name, "gate": "PASS" if r.passed else "FAIL", "answers": r.answers,
        "empty": len(r.structure.empty), f"over {r.structure.max_chars} chars": len(r.structure.over_cap),
        "forbidden hits": sum(h.answers for h in r.forbidden),
        "invalid citations": len(r.citations.invalid) if r.citations else 0,
        "words median": r.lengths.words_median, "words p90": r.lengths.words_p90,
        f"length shift vs {rep.baseline}" if rep.baseline else "length shift": _shift_cell(name, rep),
    } for name, r in rep.per_system.items()]


def hit_rows(rep: ChecksReport) -> list[dict]:
    """Each forbidden pattern found, per system: how many answers, the first query ids and what
    the first hit matched (system text: a page shows it as table cells, never as Markdown)."""
    return [{"system": name, "pattern": h.name, "answers": h.answers, "first query ids": ", ".join(h.query_ids),
             "first match": h.first_match} for name, r in rep.per_system.items() for h in r.forbidden if h.answers]


def strata_rows(rep: ChecksReport) -> list[dict]:
    """Refusal and abstention per system and stratum, over the marked answers; unmarked apart."""
    return [{"system": name, "stratum": x.stratum, "answers": x.answers, "marked": x.marked, "unmarked": x.unmarked,
             "refused": x.refused, "refusal rate": x.refusal_rate, "abstained": x.abstained,
             "abstention rate": x.abstention_rate} for name, r in rep.per_system.items() for x in r.strata]
