"""The demo project: a fictional company's HR and IT handbook, 40 questions across every
stratum (6 unanswerable), expert evidence quotes and a rubric, loaded in one transaction
so a frozen demo version already has qrels.

With ``workflows=True`` (the app's "Load the demo project" button and ``golden demo``; not ``--small``)
every workflow gets data too, written through the project's own write paths by demo people
(``demo-anna`` and ``demo-ben`` annotate, ``demo-lena`` leads, ``demo-rita`` reviews; no
accounts are created, so single-user mode stays as it was):

- three system runs (``bm25`` and ``hybrid`` as TREC files, ``dense`` as a JSONL passage run)
  and a pool of their top 3 per question;
- a finished calibration round: both annotators graded the same 17 items, four
  disagreements, one adjudicated (the other three wait on the Adjudication page and stay out
  of a freeze);
- approved nuggets for four questions, two systems' answers to them, every nugget assigned;
- approved reference answers with criteria, and a finished reference-answer round (both
  annotators wrote two questions' references blind; one agreement accepted, one disagreement
  merged by the lead with a note: ``reference_round.json``);
- a graded answer sample: people's marks per rubric criterion of both systems' tabular,
  temporal and paraphrase answers, and the rubric judge's marks replayed (``answer_grades.jsonl``);
- one evaluation run's transcripts, four of its failures reviewed;
- a saved judge calibration that passes its checks (200 items: κ gate, a band with two
  thresholds, the error targets met on the report split, rule 1);
- the frozen version ``demo.v0`` and both TREC runs scored on it (the Power page's runs);
- then the cascade at work: a finished pool-grading job by that calibration's judge
  (``demo-judge-1``, its answers replayed from ``pool_judge.jsonl``), whose band sent items
  to people's Judge queue and whose standing sample people graded (its κ on the pool
  grading page and in ``golden pool judge-sample``); some pool items are left for a job of
  your own.

Every file under ``data/`` was written for this demo."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from golden_store.db.cursor import Cursor

from annotator.judge import llm
from annotator.people.identity import User, require
from annotator.people.roles import Permission, Role
from golden_store.corpus import sources
from golden_store.live import documents
from golden_store.live import queries
from golden_store.core.errors import ValidationError
from golden_store.live.evidence import EvidenceSpan, append_evidence_tx
from golden_store.live.rubric import add_rubric_version_tx
from golden_store.corpus.resolver import CorpusIndex, SpanResolver
from golden_store.db.store import Store, is_empty

DEMO_DIR = Path(__file__).parent / "data"


def store_is_empty(store: Store) -> bool:
    return is_empty(store)


DEMO_RUNS = (("bm25", "bm25.trec", "trec"), ("hybrid", "hybrid.trec", "trec"), ("dense", "dense.jsonl", "jsonl"))
DEMO_POOL_DEPTH = 3
DEMO_VERSION = "demo.v0"
DEMO_TRANSCRIPT_RUN = "nightly-2026-03-20"
DEMO_MEASURES = ("nDCG@10", "RR@10", "P@5", "R@10")
ANNOTATORS = (User("demo-anna", "Anna (demo annotator)", frozenset({Role.ANNOTATOR})),
              User("demo-ben", "Ben (demo annotator)", frozenset({Role.ANNOTATOR})))
LEAD = User("demo-lena", "Lena (demo lead)", frozenset({Role.LEAD}))
REVIEWER = User("demo-rita", "Rita (demo reviewer)", frozenset({Role.REVIEWER}))


def _jsonl(name: str) -> list[dict]:
    path = DEMO_DIR / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def load_demo(store: Store, user: User, progress: Callable[[int, int], None] | None = None, *,
              workflows: bool = False, pool_job: bool = True) -> dict:
    """Load the demo into an empty store. Refuses a store that already has a corpus or
    queries: the demo must never mix with a team's real labels. ``workflows`` also fills
    every workflow (runs, pool, a calibration round, nuggets, answers, transcripts, a judge
    calibration, a frozen version, scored runs; see the module docstring); the user then
    needs the rights to import runs and freeze (an engineer or admin). ``pool_job=False`` leaves
    out the finished pool-grading job (step 8), for a pool no judge has touched yet."""
    require(user, Permission.LOAD_DEMO)
    if not store_is_empty(store):
        raise ValidationError(
            "The demo loads only into an empty store; this one already has documents or queries. "
            "Use another file: golden --db demo.duckdb demo"
        )
    docs = sources.load_paths([DEMO_DIR / "corpus"], progress)
    records = queries.parse_query_file(
        "queries.jsonl", (DEMO_DIR / "queries.jsonl").read_bytes(), set(queries.known_strata(store))
    )
    resolver = SpanResolver(CorpusIndex.from_raw({d.doc_id: d.raw_text for d in docs}))
    spans: list[EvidenceSpan] = []
    per_query: dict[str, int] = {}
    for lineno, line in enumerate((DEMO_DIR / "evidence.jsonl").read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        ev = json.loads(line)
        res = resolver.resolve(ev["quote"], doc_id=ev["doc_id"])
        if res.status != "exact" or res.best is None:  # an exact resolution always carries its span
            raise ValidationError(f"demo evidence.jsonl line {lineno}: quote is {res.status}, expected exact")
        m = res.best
        n = per_query[ev["query_id"]] = per_query.get(ev["query_id"], 0) + 1
        spans.append(EvidenceSpan(ev["query_id"], f"e{n}", ev["quote"], m.doc_id, m.start, m.end,
                                  m.canonical_start, m.canonical_end, "exact", 100.0))
    rubric_text = (DEMO_DIR / "rubric.md").read_text("utf-8")

    def run(cur: Cursor) -> dict:
        rep = documents.import_documents_tx(cur, docs, actor=user.username)
        qrep = queries.import_queries_tx(cur, records, actor=user.username)
        version = add_rubric_version_tx(cur, rubric_text, "Initial rubric with one worked example per grade.",
                                        user.username)
        append_evidence_tx(cur, spans, actor="demo-expert", rubric_version=version)
        return {"documents": len(rep.added), "queries": qrep["added"], "evidence_spans": len(spans),
                "rubric_version": version, "corpus_digest": rep.corpus_digest}

    if workflows:  # before anything is written: a user who cannot finish the demo gets nothing
        require(user, Permission.IMPORT_RUNS)
        require(user, Permission.FREEZE)
    loaded = store.write(run)
    if workflows:
        loaded["workflows"] = _load_workflows(store, user, loaded["rubric_version"], pool_job=pool_job)
    return loaded


def _load_workflows(store: Store, user: User, rubric_version: int, *, pool_job: bool = True) -> dict:
    """Every workflow's demo data, each through its own write path (so it is exactly what
    the pages would have written)."""
    from annotator.evaluation import runs_import, transcripts
    from annotator.evidence import nuggets, reference_answers
    from annotator.judge import calibration
    from annotator.labeling import adjudication
    from annotator.versions import versioning
    from golden_store.live import judging, results
    from golden_store.live import rounds
    from golden_store.live.documents import raw_text
    from golden_store.scoring import evaluate, read_run
    from golden_store.live.transcripts import item_key
    from golden_store.versions import load_version, version_exists

    out: dict = {}
    # 1. system runs and the pool
    for system, fname, fmt in DEMO_RUNS:
        runs_import.import_run(store, user, DEMO_DIR / "runs" / fname, system, fmt)
    pool = runs_import.build_pool(store, user, DEMO_POOL_DEPTH)
    out["runs"], out["pool_items"] = len(DEMO_RUNS), pool.pool_size

    # 2. a calibration round both annotators finished; one disagreement adjudicated
    grades = _jsonl("grades.jsonl")
    lengths = {d: len(raw_text(store, d) or "") for d in {g["doc_id"] for g in grades}}
    items = [(g["query_id"], g["doc_id"], 0, lengths[g["doc_id"]]) for g in grades]
    round_id = rounds.create_round(store, "calibration", {a.username: items for a in ANNOTATORS},
                                         actor=LEAD.username, seed=0,
                                         note="Demo calibration round: everyone grades the same items")
    for g, item in zip(grades, items):
        for a in ANNOTATORS:
            judging.record(store, a.username, *item, op="grade", grade=g[a.username], rubric_version=rubric_version)
    decided = {(g["query_id"], g["doc_id"]): g for g in grades if "adjudicated" in g}
    for row in adjudication.queue(store, LEAD):
        decision = decided.get((row["query_id"], row["doc_id"]))
        if decision is not None:
            adjudication.decide(store, LEAD, adjudication.dispute(store, LEAD, row), decision["adjudicated"],
                                decision["rationale"])
    out["round"] = round_id

    # 3. approved nuggets, two systems' answers, every nugget assigned
    by_query: dict[str, list[dict]] = {}
    for n in _jsonl("nuggets.jsonl"):
        by_query.setdefault(n.pop("query_id"), []).append(n)
    for qid, rows in by_query.items():
        nuggets.save(store, LEAD, qid, [{"nugget_id": None, **r} for r in rows])
        nuggets.approve(store, LEAD, qid)
    for path in sorted((DEMO_DIR / "answers").glob("*.jsonl")):
        nuggets.import_answers(store, user, str(path), path.stem)
    for asg in _jsonl("assignments.jsonl"):
        ids = [n["nugget_id"] for n in nuggets.current(store, LEAD, asg["query_id"])]
        if len(ids) != len(asg["support"]):
            raise ValidationError(f"demo assignments.jsonl: {asg['query_id']} has {len(ids)} nuggets, "
                                  f"{len(asg['support'])} labels")
        for nid, label in zip(ids, asg["support"]):
            nuggets.assign(store, ANNOTATORS[0], asg["system"], asg["query_id"], nid, label)
    out["nugget_questions"] = len(by_query)

    # 3b. reference answers for the answered questions, anchored to their evidence and approved
    # by the lead; criteria for the tabular stratum's answers
    for ref in _jsonl("references.jsonl"):
        qid = ref["query_id"]
        spans = reference_answers.evidence_spans(store, ANNOTATORS[0], qid)
        anchors = [reference_answers.Anchor(e["doc_id"], e["start"], e["end"]) for e in spans]
        reference_answers.write(store, ANNOTATORS[0], qid, short_answer=ref["short_answer"],
                                full_answer=ref["full_answer"], evidence=anchors)
        reference_answers.approve(store, LEAD, qid)
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(store, LEAD, scope="stratum", scope_id=rubric["stratum"],
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))
    out["reference_answers"] = len(_jsonl("references.jsonl"))
    # a finished reference-answer round: both annotators wrote two questions' references blind; one
    # agreement accepted, one disagreement merged by the lead with a note
    from annotator.demo.reference_round import load_reference_round

    out.update(load_reference_round(store, DEMO_DIR, lead=LEAD, authors={a.username: a for a in ANNOTATORS}))

    # 3c. the faithfulness judge's claim verdicts on some answers (replayed) and a reviewer's
    # blind review of a seeded sample of them
    from annotator.demo.claims import load_claims

    out.update(load_claims(store, DEMO_DIR, judge_model=DEMO_JUDGE, reviewer=REVIEWER.username))

    # 3d. a graded answer sample: people's marks per criterion (tabular, temporal, paraphrase) and
    # the rubric judge's, replayed; its calibration against people shows on the Answer grading page
    from annotator.demo.answer_grades import load_answer_grades

    out.update(load_answer_grades(store, DEMO_DIR, lead=LEAD, graders={a.username: a for a in ANNOTATORS},
                                  judge_model=DEMO_JUDGE))

    # 4. transcripts of one evaluation run, some failures reviewed
    out["transcripts"] = transcripts.import_file(store, user, DEMO_DIR / "transcripts.jsonl")
    for r in _jsonl("transcript_reviews.jsonl"):
        transcripts.review(store, REVIEWER, item_key(DEMO_TRANSCRIPT_RUN, r["query_id"], 0), r["verdict"],
                           r.get("failure_class"), r.get("note", ""))

    # 5. a saved judge calibration; it passes its checks, so pool grading can run from it
    cal_name = "judge_calibration.csv"
    cal_df = calibration.load_upload(cal_name, (DEMO_DIR / cal_name).read_bytes())
    analysis = calibration.analyze(cal_df, seed=0)
    out["calibration"] = calibration.save(
        store, LEAD, cal_df, analysis, judge_model=DEMO_JUDGE, rubric=(DEMO_DIR / "rubric.md").read_text("utf-8"),
        question_sha=None, source=f"demo:{cal_name}", seed=0, fit_share=0.5, max_missed_bad=0.02,
        max_false_fail=0.02, note=f"Demo: a judge checked against {len(cal_df)} human pass/fail labels")

    # 6. a frozen version (a free name if an earlier demo left one in the versions folder)
    vdir = versioning.versions_dir(store)
    name = next(n for n in (DEMO_VERSION, *(f"{DEMO_VERSION}-{i}" for i in range(2, 1000)))
                if not version_exists(n, vdir))
    frozen = versioning.freeze(store, user, name, note="The demo as loaded: one calibration round, "
                                                       "three disagreements still waiting for a lead")
    out["version"] = frozen.name

    # 7. the TREC runs scored on it, recorded (the Power page plans from these)
    gs = load_version(frozen.name, vdir)
    for system, fname, fmt in DEMO_RUNS:
        if fmt != "trec":
            continue
        run = read_run(DEMO_DIR / "runs" / fname)
        res = evaluate(gs, run, list(DEMO_MEASURES))
        results.record_evaluation(store, f"{system}@{frozen.name}", res.per_query, dataset_version=frozen.name,
                           strata=gs.strata, corpus_digest=gs.manifest.get("corpus_digest"), system=system,
                           judged_fraction=res.judged.per_query if res.judged is not None else None,
                           **results.scored_definitions(res, run))

    # 7b. the two systems' answers scored on it and recorded, so Results and golden compare show
    # an answer comparison with its gate beside the runs'
    from annotator.evaluation import answer_evaluation

    for path in sorted((DEMO_DIR / "answers").glob("*.jsonl")):
        answer_evaluation.record_answers(store, user, evaluation_id=f"answers-{path.stem}@{frozen.name}",
                                         version=frozen.name, system=path.stem, versions_dir=vdir)

    # 8. the cascade at work, after the freeze (demo.v0 stays people's labels as loaded)
    if pool_job:
        out["pool_job"] = _grade_pool(store, out["calibration"], rubric_version)
    return out


DEMO_JUDGE = "demo-judge-1"  # the simulated judge of the demo's calibration and pool job
DEMO_JUDGE_ITEMS = 160  # of the 204 pool items a judge may grade: the rest wait for a job of your own


class _RecordedJudge(llm.LLMClient):
    """The demo's judge: ``pool_judge.jsonl`` holds its answer for every pool item a judge
    may grade, and this client replays them through the pool-grading job (routing by the
    band, the standing sample, the job's events) exactly as answers from the API would go.
    No request is made, so no token is used; the calls are logged at no cost."""

    def __init__(self, answers: dict[tuple[str, str, int, int], dict]) -> None:  # no key, no HTTP client
        self.model = DEMO_JUDGE
        self._answers = answers
        self._shas: dict[tuple[str, type], str] = {}

    def structured(self, *, item: str, instructions: str, content: str, output: type[llm.T],
                   max_tokens: int = 4096) -> llm.CallResult[llm.T]:
        query_id, doc_id, start, end = item.split("|")
        a = self._answers[(query_id, doc_id, int(start), int(end))]
        verdict = output.model_validate({k: a[k] for k in ("justification", "grade", "supporting_quote", "p_fail")})
        if (instructions, output) not in self._shas:  # the prompt sha as the API client pins it, once per prompt
            self._shas[(instructions, output)] = llm.prompt_sha(instructions,
                                                                repr(sorted(output.model_json_schema().items())))
        return llm.CallResult(item, "ok", verdict, llm.Usage(), self.model, self._shas[(instructions, output)])


def _grade_pool(store: Store, calibration_id: str, rubric_version: int) -> dict:
    """A finished pool-grading job through pool grading's own plan, start and run, by the demo
    lead; then people grade the standing sample it drew (the grade each item would get from a
    person, ``human_grade`` in the file), so the judge is watched from the start. The band's
    items stay in people's Judge queue."""
    import dataclasses

    from annotator.judge import llm_cost, pool_grading
    from golden_store.live import judge_labels, judging

    answers = {(a["query_id"], a["doc_id"], a["start"], a["end"]): a for a in _jsonl("pool_judge.jsonl")}
    plan = pool_grading.plan(store, LEAD, calibration_id, mode="direct", limit=DEMO_JUDGE_ITEMS)
    items = judge_labels.candidates(store, DEMO_JUDGE_ITEMS)
    chars = sum(it["length"] + len(it["question"]) for it in items) / max(1, len(items))
    row = pool_grading.calibration(store, calibration_id)
    plan = dataclasses.replace(  # the studio's own judge is another model; this job is the demo judge's
        plan, model=DEMO_JUDGE, problems=pool_grading.problems(row, DEMO_JUDGE),
        estimate=llm_cost.estimate("Pool grading", model=DEMO_JUDGE, n_items=plan.n_items,
                                   prefix_chars=len(row.get("rubric_text") or ""), item_chars=chars + 40,
                                   out_tokens=pool_grading.OUT_TOKENS))
    job_id = pool_grading.start(store, LEAD, plan, seed=0, limit=DEMO_JUDGE_ITEMS)
    summary = pool_grading.run(store, LEAD, job_id, client=_RecordedJudge(answers))
    sampled = judge_labels.routed(store, "sample")
    store.write(lambda cur: [judging.insert_tx(cur, ANNOTATORS[1].username, *key, op="grade",  # one transaction
                                               grade=int(answers[key]["human_grade"]), rubric_version=rubric_version)
                             for key in sampled])
    return {"job": job_id, "labeled": summary.labeled, "escalated": summary.escalated, "sampled": summary.sampled}
