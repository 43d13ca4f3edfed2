"""Question drafts (METHODOLOGY §3.5 calls it the LLM bootstrap; "bootstrap" here means only the
statistical resampling): Claude proposes questions
about one document, each with verbatim excerpts. Every excerpt is checked mechanically with
the resolver and rejected unless it is an exact match in that document; compound questions
are flagged. A person then accepts the proposals they want: they become queries with
``source = synthetic``, the model id and prompt sha, and their excerpts become evidence spans."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

import pydantic

from annotator.judge import llm, llm_cost
from annotator.evidence.evidence_authoring import resolver as corpus_resolver
from annotator.judge.held_out import HeldOut
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import documents
from golden_store.live import evidence, llm_log, queries
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live.evidence import EvidenceSpan, new_evidence_id
from golden_store.corpus.resolver import Candidate
from golden_store.live.rubric import current_rubric
from golden_store.db.store import Store

# the llm_calls.purpose of these calls; the value predates the module's name and stays, so
# usage recorded before the rename keeps adding up under one purpose
PURPOSE = "draft_questions"  # was "bootstrap_questions" (migration 15 renames old calls)
# the output guessed for the estimate: per question its text, 1-3 excerpts, stratum and flag
# (~130 tokens as JSON), plus the envelope
OUT_TOKENS_PER_QUESTION = 130
OUT_TOKENS_BASE = 20
INSTRUCTIONS = """You write evaluation questions for a retrieval-augmented assistant.
You are given one document from a company's internal corpus. Propose questions that a real
employee might type, each answerable from this document alone. Each accepted question becomes a
query of a golden set, and your excerpts become its evidence spans: the places in the document
that answer it. People review every proposal; precise, checkable proposals save their time.

Rules:
- Each question asks for ONE thing. Do not join two questions with "and" or "or" (except
  inside a proper noun such as "Travel and Expenses Portal"): "What is the deadline and who
  approves it?" has two answers and breaks per-question scoring. Ask two questions instead.
- For each question give 1 to 3 excerpts copied VERBATIM from the document: exact
  substrings, character for character, 8 to 40 words each (a table row may be shorter),
  that together answer it. Keep the
  document's spelling, punctuation, capitals, numbers and line breaks; never paraphrase,
  shorten from the middle, or join two places into one excerpt. A non-verbatim excerpt is
  discarded by a mechanical exact-match check, and a question without a kept excerpt is lost.
- Choose the shortest excerpts that contain the whole answer; do not quote a heading alone.
- The answer must be in the document. Do not ask what the document does not say, and do not
  ask about the document itself ("What is this document about?", "What does section 3 say?").
- Write as an employee types, not as an exam: short, plain, sometimes without a question mark,
  with the words a person would use before reading the document. Vary the wording: some
  questions should share few words with the excerpts (synonyms, the situation instead of the
  rule's name). Generated questions tend to copy the passage's words, which flatters dense and
  keyword retrieval alike; resist that.
- Cover different parts of the document; no two questions with the same answer.
- stratum (pick exactly one):
  lexical if the question contains an exact code, name, SKU, error string or number from the
  text; tabular if the answer sits in a table (a row and column of it); temporal if the answer
  depends on a date, a deadline or a change over time ("since March", "the new rule");
  otherwise paraphrase.
- Set is_compound to true if, despite the rule, the question asks two things.

Worked example.
Document (excerpt):
  "## Parental leave
  Employees with at least six months of service receive 16 weeks of paid parental leave.
  Leave must be requested in the HR portal no later than 8 weeks before it starts.
  | Country | Extra unpaid weeks |
  | Germany | 12 |
  | France  | 8  |
  Since 1 January 2026 the leave can be split into at most three blocks.
  Error HRP-220 in the portal means the start date is less than 8 weeks away."
Good proposals:
  1. question "how many weeks paid leave do new parents get" - excerpts ["Employees with at
     least six months of service receive 16 weeks of paid parental leave"] - paraphrase
  2. question "portal says HRP-220 when I book my leave" - excerpts ["Error HRP-220 in the
     portal means the start date is less than 8 weeks away"] - lexical
  3. question "extra unpaid parental leave in France" - excerpts ["| France  | 8  |"] - tabular
  4. question "can I take parental leave in several parts" - excerpts ["Since 1 January 2026
     the leave can be split into at most three blocks"] - temporal
  5. question "how early do I have to ask for parental leave" - excerpts ["Leave must be
     requested in the HR portal no later than 8 weeks before it starts"] - paraphrase
Bad proposals, and why:
  - "How many weeks of leave are there and how do I request it?" (two asks: compound)
  - "What does the document say about parental leave?" (about the document, no single answer)
  - excerpt "employees get sixteen weeks paid leave" (not verbatim: "16 weeks", words dropped)
  - "What is the parental leave policy for contractors?" (the document does not say)"""


class ProposedQuestion(pydantic.BaseModel):
    question: str
    excerpts: list[str]
    stratum: Literal["lexical", "paraphrase", "tabular", "temporal"]
    is_compound: bool


class Proposals(pydantic.BaseModel):
    questions: list[ProposedQuestion]


_COMPOUND = re.compile(
    r"\b(and|or)\s+(what|how|when|where|who|whom|which|why|is|are|do|does|did|can|could|should|will)\b", re.I)


def looks_compound(question: str) -> bool:
    """Two asks in one question (two question marks, or "and what/how/...")."""
    return question.count("?") > 1 or bool(_COMPOUND.search(question))


@dataclass
class CheckedProposal:
    question: str
    stratum: str
    compound: bool
    accepted: list[tuple[str, Candidate]] = field(default_factory=list)  # (excerpt, exact span)
    rejected: list[tuple[str, str]] = field(default_factory=list)        # (excerpt, why)

    @property
    def usable(self) -> bool:
        return bool(self.accepted)


@dataclass
class QuestionDrafts:
    doc_id: str
    outcome: str  # ok | refusal
    proposals: list[CheckedProposal]
    model: str
    prompt_sha: str
    cost_usd: float | None
    usage: llm.Usage
    call: "llm.CallResult | None" = None

    def job_usage(self) -> llm_cost.JobUsage:
        """What the call really used (the API's own counts, cache reads included)."""
        return llm_cost.usage_of([self.call] if self.call is not None else [])


def _content(store: Store, doc_id: str, n: int) -> str:
    """The user turn for ``doc_id``, once nothing held out would be sent with it."""
    raw = documents.raw_text(store, doc_id)
    if raw is None:
        raise NotFoundError(f"No document {doc_id!r}.")
    if hit := HeldOut.of(store).text_in(raw):
        raise llm.LLMRefused(f"Document {doc_id} contains the text of held-out question {hit}; held-out questions "
                             "are never sent to a hosted model. Write questions about it by hand.")
    return f"Propose {n} questions.\n\n<document id=\"{doc_id}\">\n{raw}\n</document>"


def plan(store: Store, user: User, doc_id: str, *, n: int = 5, model: str | None = None) -> llm_cost.JobPlan:
    """The estimate of proposing ``n`` questions about ``doc_id`` (METHODOLOGY §11.7), from the
    real inputs (the instructions as the cached prefix, the document as the item); nothing is
    sent. A document holding a held-out question's text is refused here already."""
    require(user, Permission.EDIT_QUERIES)
    content = _content(store, doc_id, n)
    est = llm_cost.estimate_items("Question drafting", model=model or llm.model_id(), prefix=INSTRUCTIONS,
                                  items=[content], out_tokens=OUT_TOKENS_BASE + OUT_TOKENS_PER_QUESTION * n)
    return llm_cost.JobPlan(est, False, [doc_id])


def propose(store: Store, user: User, doc_id: str, *, n: int = 5, client: llm.LLMClient | None = None) -> QuestionDrafts:
    """Ask Claude for ``n`` questions about one document. A document that contains the text
    of a held-out question is refused before any request is built (§3.8): the document is
    the whole prompt, so the question would reach the model with it."""
    require(user, Permission.EDIT_QUERIES)
    content = _content(store, doc_id, n)
    client = client or llm.LLMClient()
    try:
        res = client.structured(item=f"document {doc_id}", instructions=INSTRUCTIONS, content=content,
                                output=Proposals)
    except llm.LLMOutputError as exc:
        llm.record_failure(store, purpose=PURPOSE, item=doc_id, error=exc, actor=user.username)
        raise
    u = res.usage
    llm_log.record_call(store, purpose=PURPOSE, item=doc_id, model=res.model, prompt_sha=res.prompt_sha,
                        outcome=res.outcome, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                        cache_creation_input_tokens=u.cache_creation_input_tokens,
                        cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=res.cost_usd,
                        actor=user.username)
    checked: list[CheckedProposal] = []
    if res.outcome == "ok":
        resolver = corpus_resolver(store)
        for p in res.answer.questions:
            cp = CheckedProposal(p.question.strip(), p.stratum, p.is_compound or looks_compound(p.question))
            for ex in p.excerpts:
                try:
                    r = resolver.resolve(ex, doc_id=doc_id)
                except ValidationError as exc:
                    cp.rejected.append((ex, str(exc)))
                    continue
                if r.status == "exact" and r.best is not None:  # an exact resolution always carries its span
                    cp.accepted.append((ex, r.best))
                elif r.status == "ambiguous" and all(c.score >= 100 for c in r.candidates):
                    cp.rejected.append((ex, "occurs in several places in the document"))
                else:
                    cp.rejected.append((ex, f"not verbatim in the document ({r.status})"))
            checked.append(cp)
    return QuestionDrafts(doc_id, res.outcome, checked, res.model, res.prompt_sha, res.cost_usd, res.usage, res)


def accept(store: Store, user: User, result: QuestionDrafts, chosen: list[int]) -> list[str]:
    """Store the chosen proposals (indexes into ``result.proposals``) as synthetic queries
    with their verified excerpts as evidence. Returns the new query ids."""
    require(user, Permission.EDIT_QUERIES)
    picked = [result.proposals[i] for i in chosen]
    if any(not p.usable for p in picked):
        raise ValidationError("A proposal without any verbatim excerpt cannot be accepted.")
    rubric = current_rubric(store)
    ids = []
    for p in picked:
        qid = "syn-" + hashlib.sha256(f"{result.doc_id}\0{p.question}".encode()).hexdigest()[:10]
        if queries.get_query(store, qid) is not None:
            continue  # already accepted earlier: nothing is duplicated
        notes = f"proposed by {result.model} from {result.doc_id}" + ("; FLAGGED: compound question" if p.compound else "")
        rec = queries.QueryRecord(qid, p.question, p.stratum, True, "synthetic", date.today(), False, notes,
                                  generator_model=result.model, generator_prompt_sha=result.prompt_sha)
        queries.save_query(store, rec, actor=user.username, must_exist=False)
        evidence.append_evidence(
            store,
            [EvidenceSpan(qid, new_evidence_id(), ex, c.doc_id, c.start, c.end, c.canonical_start, c.canonical_end,
                          "exact", 100.0) for ex, c in p.accepted],
            actor=f"llm:{result.model}", rubric_version=rubric["version"] if rubric else None,
            note=f"prompt_sha {result.prompt_sha}",
        )
        ids.append(qid)
    return ids
